"""fit: joint scaling laws over the data axes and model size, with uncertainty and held-out checks.

Pure core, I/O at the edges:

- :mod:`fit.laws`: registry of named law forms (``get_law(name, inputs=None) -> Law``).
- :mod:`fit.fitting`: ``fit_law(points, law, ...) -> FitResult`` (Huber loss, grid of starts, keep the best).
- :mod:`fit.bootstrap`: bootstrap draws, parameter and prediction intervals.
- :mod:`fit.holdout`: the ``--holdout`` rule vs the stored split column; held-out metrics.
- :mod:`fit.interaction`: additive vs multiplicative quality (the research plan's two hypotheses).
- :mod:`fit.data`: registry rows -> ``Points`` and law inputs; :mod:`fit.experiment`: one experiment end to end.
- :mod:`fit.simulate`: results from a known law over the config's real design.
- :mod:`fit.report`: Markdown, self-contained HTML and JSON reports.

See ``fit/README.md`` for the allocator-facing API. ``import fit`` imports nothing heavy.
"""

from toolscale.exports import lazy_exports

_EXPORTS: dict[str, str] = {
    'FitError': 'fit.errors',
    'MIN_RUNG_RUNS': 'fit.selection',
    'beyond_fitted': 'fit.predict',
    'bic_weights': 'fit.predict',
    'check_point': 'fit.predict',
    'components': 'fit.predict',
    'fit_law': 'fit.fitting',
    'get_law': 'fit.laws',
    'law_for_runs': 'fit.data',
    'law_of': 'fit.laws',
    'points_from_runs': 'fit.data',
    'predict_at': 'fit.predict',
    'target_values': 'fit.targets',
}
"""Public names and the modules that define them: other packages import these (or ``fit.models``)."""

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
