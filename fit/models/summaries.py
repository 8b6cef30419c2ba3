"""What ``fit --json`` reports: parameter, interaction and decision-accuracy summaries, and stored-fit lists and diffs."""

from __future__ import annotations


from pydantic import Field

from fit.models.core import FitResult, HeldoutPoint, LawSelection, ResidualScale, _Frozen, fit_warnings
from fit.models.interaction import LackOfFit, RollingStep

__all__ = ["AllocationBasis", "AxisDecision", "DecisionAccuracy", "DecisionPoint", "FitDiff", "FitList", "FitRow", "FitSummary", "InteractionSummary", "ParamDiff", "ReportSummary", "SummaryParam"]


class SummaryParam(_Frozen):
    """One parameter in a fit summary."""

    estimate: float
    """Point estimate, natural units."""
    lo: float | None = None
    """Lower 95% bootstrap bound (None without bootstrap)."""
    hi: float | None = None
    """Upper 95% bootstrap bound."""
    se: float | None = None
    """Bootstrap standard deviation."""


class InteractionSummary(_Frozen):
    """The interaction verdict in a fit summary."""

    supported: str
    """Form the evidence supports: ``additive``, ``multiplicative`` or ``interaction``."""
    verdict: str
    """``additive`` (the data cannot tell the forms apart), ``amplifies`` or ``discounts`` (quality scales what
    diversity buys up or down)."""
    strength: str
    """``strong``, ``weak`` (additivity rejected by the LR test; strong with a BIC gap above 6) or ``none``."""
    delta_bic: float
    """BIC(additive) - BIC(best other form)."""
    lr_stat: float
    """Likelihood-ratio statistic, interaction vs additive."""
    lr_p: float
    """P-value of the LR statistic against its parametric bootstrap (chi-square, 1 df, without bootstrap)."""
    lr_p_method: str
    """``parametric bootstrap (B draws)`` or ``chi-square (1 df, invalid at bounds)``."""
    f_stat: float
    """Linearised F statistic."""
    f_p: float
    """Its p-value."""
    gain_ratio: float
    """Diversity gain at top quality / at bottom quality (1 = additive)."""
    gain_ratio_lo: float | None = None
    """Lower 95% bound."""
    gain_ratio_hi: float | None = None
    """Upper 95% bound."""
    bic: dict[str, float]
    """BIC per form."""
    heldout_mae: dict[str, float | None]
    """Held-out MAE per form (None when nothing is held out)."""


class AxisDecision(_Frozen):
    """Decision accuracy over the recipe pairs that differ on one axis."""

    accuracy: float | None
    """Share of those pairs ordered right (ties count 1/2); None without such a pair."""
    lo: float | None
    """Lower bound of the Wilson interval."""
    hi: float | None
    """Upper bound of the Wilson interval."""
    pairs: int
    """Recipe pairs that differ on this axis."""


class DecisionPoint(_Frozen):
    """One point of the accuracy-against-compute curve: one fitted rung's order against the held-out one."""

    model_size: str
    """The fitted rung."""
    cell: str
    """Its cell whose order is compared (the rung at its largest tokens per parameter), ``rung x tpp``."""
    flops: float
    """Training FLOPs of a run in that cell (the largest there)."""
    accuracy: float | None
    """Share of recipe pairs ordered as at the held-out size (ties 1/2)."""
    lo: float | None
    """Lower bound of the Wilson interval."""
    hi: float | None
    """Upper bound."""
    pairs: int
    """Recipe pairs scored."""
    close_accuracy: float | None = None
    """The same over the close pairs (within ``close_sds`` seed SDs at this cell)."""
    close_pairs: int = 0
    """Close pairs scored."""


class DecisionAccuracy(_Frozen):
    """Small-to-large decision accuracy of one small-scale order, with its Wilson interval."""

    source: str
    """``observed`` (largest fitted cell) or ``law`` (the fitted law's held-out predictions)."""
    accuracy: float | None
    """Share of recipe pairs whose small-scale order matches the held-out order (ties count 1/2)."""
    lo: float | None
    """Lower bound of the Wilson score interval of ``accuracy`` over ``pairs`` (pairs share recipes, so they
    are not independent: the interval is optimistic when recipes repeat across pairs)."""
    hi: float | None
    """Upper bound of that interval."""
    level: float
    """Nominal level of ``[lo, hi]``."""
    pairs: int
    """Recipe pairs scored."""
    recipes: int
    """Recipes with a held-out value and a small-scale value."""
    higher_is_better: bool
    """Direction of the metric (only the sign of differences matters)."""
    small_scale: str
    """What the small-scale value is (the cell, or the law)."""
    per_axis: dict[str, AxisDecision]
    """The same over the pairs that differ on each axis."""
    n_bootstrap: int = 0
    """Bootstrap draws (0: the intervals are Wilson intervals)."""
    interval: str = "wilson"
    """How ``[lo, hi]`` is computed."""
    seed_sd: float | None = None
    """SD of one run across seeds at the fitted size (pooled over replicated recipes there), metric units;
    None when no recipe ran two seeds there."""
    close_sds: float = 2.0
    """A pair is close when its observed difference at the fitted size is within this many ``seed_sd``."""
    close_accuracy: float | None = None
    """Accuracy over the close pairs (the informative decisions); None without a seed SD or a close pair."""
    close_lo: float | None = None
    """Lower Wilson bound of ``close_accuracy``."""
    close_hi: float | None = None
    """Upper Wilson bound."""
    close_pairs: int = 0
    """Close pairs scored."""
    curve: list[DecisionPoint] = Field(default_factory=list)
    """Accuracy against compute: each fitted rung's order against the held-out one (DataDecide), smallest first."""


class FitSummary(_Frozen):
    """What ``toolscale fit --json`` prints and the MCP ``fit_summary`` tool returns: ``model_dump(mode="json")``.

    One model for both, built from a stored :class:`FitResult` by :meth:`of`.
    """

    fit_id: str | None = None
    """Registry id of the stored fit (None with ``--no-store``)."""
    experiment: str
    """Experiment name."""
    benchmark: str
    """Benchmark name."""
    metric: str
    """Metric fitted."""
    law: str
    """Law fitted."""
    formula: str = ""
    """The law's formula."""
    target: str
    """``score`` or ``loss``."""
    simulated: bool
    """True for simulated runs."""
    converged: bool
    """Optimizer convergence."""
    message: str
    """Optimizer message and diagnostics."""
    at_bounds: list[str]
    """Parameters at a bound."""
    n_points: int
    """Runs fitted."""
    n_skipped: int = 0
    """Done runs skipped because they lack the fitted metric."""
    n_params: int
    """Free parameters."""
    data_hash: str
    """Hash of the fitted points."""
    params: dict[str, SummaryParam]
    """Parameters with their 95% intervals."""
    residual_scale: ResidualScale
    """Residuals minimised (``log``, ``relative`` or ``raw``)."""
    huber_delta: float
    """Huber threshold, in residual units."""
    residual_sd: float
    """Residual SD, in residual units."""
    replicate_sd: float | None
    """Replicate SD (None without replicates)."""
    lack_of_fit: LackOfFit | None = None
    """Residual vs replicate SD test."""
    aic: float
    """AIC."""
    bic: float
    """BIC."""
    n_bootstrap: int
    """Bootstrap draws kept."""
    form_weights: dict[str, float] = Field(default_factory=dict)
    """Weight of each candidate form in the prediction intervals (the fitted law's included)."""
    holdout_rule: str
    """Hold-out rule."""
    holdout_source: str
    """Where the split came from."""
    point_target: str = "final"
    """What each run contributed: ``final``, ``envelope`` or ``checkpoints`` (:mod:`fit.targets`)."""
    envelope_at_first: dict[str, int] = Field(default_factory=dict)
    """``split -> points`` whose envelope is their run's first kept checkpoint (:attr:`FitResult.envelope_at_first`)."""
    heldout_n: int
    """Held-out runs."""
    heldout_mae: float | None
    """Held-out MAE, metric units."""
    heldout_relative_mae: float | None = None
    """Held-out error on seed means: ``mean |err| / actual`` over the held-out recipes, each averaged over its
    seeds (:attr:`HeldoutMetrics.are_seed_means`, Choshen et al. 2024's ARE)."""
    heldout_mae_over_mean: float | None = None
    """Held-out MAE over the mean held-out value, run by run (the figure reported before seed means)."""
    heldout_max_error: float | None
    """Largest held-out error."""
    interval_coverage: float | None
    """Share of held-out runs inside their 90% interval."""
    extrapolation_factor: float | None
    """Largest held-out FLOPs / largest fitted FLOPs."""
    heldout_predictions: list[HeldoutPoint] = Field(default_factory=list)
    """Each held-out run: actual, predicted and the 90% interval."""
    rolling: list[RollingStep] = Field(default_factory=list)
    """Rolling validation steps (``--holdout rungs:K``)."""
    selection: LawSelection | None = None
    """How ``--law auto`` chose the form (None when a law was named)."""
    fit_seconds: float
    """Wall time of the point fit, seconds."""
    interaction: InteractionSummary | None = None
    """The interaction verdict (None when not run)."""
    decision_accuracy: DecisionAccuracy | None = None
    """Small-to-large decision accuracy (:class:`fit.decision.DecisionAccuracy`, observed order at the
    largest fitted cell vs the held-out order, with its bootstrap interval and per axis); None without
    two recipes at the held-out size."""
    decision_accuracy_law: DecisionAccuracy | None = None
    """The same with the fitted law's held-out predictions as the small-scale order."""
    warnings: list[str] = Field(default_factory=list)
    """What a reader must know: parameters at bounds, held-out coverage below nominal, lack of fit, too few runs
    per parameter (:func:`fit_warnings`)."""
    weighted: bool = False
    """True when the fit weighted runs by their standard errors."""
    fixed: dict[str, float] = Field(default_factory=dict)
    """Parameters held fixed (``--floor``, ``--ceiling``, an unidentified size exponent), natural units."""
    options: dict[str, float | str] = Field(default_factory=dict)
    """Fit options that shaped the data or the law (:attr:`FitResult.options`: ``smooth``, ``ideal_point``...)."""

    @classmethod
    def of(cls, fit: "FitResult", fit_id: str | None = None, formula: str = "") -> "FitSummary":
        """The summary of ``fit`` (its stored interaction verdict included)."""
        params = {}
        for name, value in fit.params.items():
            iv = fit.intervals.get(name)
            params[name] = SummaryParam(estimate=value, lo=iv.lo if iv else None, hi=iv.hi if iv else None,
                                        se=iv.se if iv else None)
        h = fit.heldout
        inter = None
        if fit.interaction is not None:
            i = fit.interaction
            inter = InteractionSummary(
                supported=i.supported, verdict=i.verdict, strength=i.strength, delta_bic=i.delta_bic,
                lr_stat=i.lr_stat, lr_p=i.lr_p, lr_p_method=i.lr_p_method, f_stat=i.f_stat, f_p=i.f_p,
                gain_ratio=i.gain_ratio, gain_ratio_lo=i.gain_ratio_lo, gain_ratio_hi=i.gain_ratio_hi,
                bic={k: v.bic for k, v in i.fits.items()}, heldout_mae={k: v.heldout_mae for k, v in i.fits.items()})
        weights = {fit.law: fit.form_weight, **{f.law: f.form_weight for f in fit.forms}} if fit.forms else {}
        return cls(fit_id=fit_id, experiment=fit.experiment, benchmark=fit.benchmark, metric=fit.metric, law=fit.law,
                   formula=formula, target=fit.target, simulated=fit.simulated, converged=fit.converged,
                   message=fit.message, at_bounds=list(fit.at_bounds), n_points=fit.n_points,
                   n_skipped=fit.n_skipped, n_params=fit.n_params, data_hash=fit.data_hash, params=params,
                   residual_scale=fit.residual_scale, huber_delta=fit.huber_delta, residual_sd=fit.residual_sd,
                   replicate_sd=fit.replicate_sd, lack_of_fit=fit.lack_of_fit, aic=fit.aic, bic=fit.bic,
                   n_bootstrap=len(fit.bootstrap), form_weights=weights, holdout_rule=fit.holdout_rule,
                   holdout_source=fit.holdout_source, point_target=fit.point_target,
                   envelope_at_first=dict(fit.envelope_at_first), heldout_n=h.n if h else 0, heldout_mae=h.mae if h else None,
                   heldout_relative_mae=h.are_seed_means if h else None,
                   heldout_mae_over_mean=h.relative_mae if h else None,
                   heldout_max_error=h.max_error if h else None,
                   interval_coverage=h.interval_coverage if h else None,
                   extrapolation_factor=h.extrapolation_factor if h else None,
                   heldout_predictions=list(h.points) if h else [], rolling=list(fit.rolling),
                   selection=fit.selection, fit_seconds=fit.fit_seconds, interaction=inter,
                   warnings=fit_warnings(fit), weighted=fit.weighted, fixed=dict(fit.fixed or {}),
                   options=dict(fit.options))


class AllocationBasis(_Frozen):
    """The model a report's allocation chart plans for: ``report --sweep``'s plans, made now, or the fit's stored
    allocations at the newest one's N, D and unit (one line across budgets compares plans for one model)."""

    swept: bool
    """True: planned now for the report (``--sweep``, not stored); False: stored allocations."""
    model_params: float
    """Parameters N of the model planned for."""
    tokens: float | None = None
    """Training tokens D planned for (None: allocations stored before D was recorded)."""
    model_source: str = ""
    """Where N came from (``--model-size``, a ladder rung, the config's target size); empty when not recorded."""
    tokens_source: str = ""
    """Where D came from (``--tokens``, ``--tokens-per-param``, a rung's tokens); empty when not recorded."""
    unit: str = "usd"
    """Budget unit of the chart."""
    plans: int
    """Budgets on the chart."""
    left_out: int = 0
    """Stored allocations of the fit at another N, D or unit, not drawn."""
    size_extrapolation: dict[str, float] = Field(default_factory=dict)
    """``N``/``D`` outside the fitted runs' range: value / fitted max, or fitted min / value (``allocate``'s)."""

    def describe(self) -> str:
        """One paragraph for the report: which plans the chart shows, at which N and D, and what it left out."""
        n = f"N = {self.model_params:.3g} parameters" + (f" ({self.model_source})" if self.model_source else "")
        d = (f"D = {self.tokens:.3g} training tokens" + (f" ({self.tokens_source})" if self.tokens_source else "")
             if self.tokens is not None else "D not recorded (allocations stored before D was)")
        if self.swept:
            out = f"Planned now for this report (`--sweep`, not stored) at {self._budgets()}, for {n} and {d}."
        else:
            out = f"The fit's stored allocations at {self._budgets()}, for the newest one's {n} and {d}."
        if self.size_extrapolation:
            far = ", ".join(f"{'model size' if k == 'N' else 'training tokens'} x{v:.3g}"
                            for k, v in self.size_extrapolation.items())
            out += f" This model lies outside the fitted runs ({far}): every plan extrapolates the law there."
        if self.left_out:
            out += (f" Left out: {self.left_out} stored allocation(s) at another N, D or unit; `toolscale report "
                    "--sweep MIN:MAX:STEPS --model-size N --tokens D` plans at another model.")
        return out

    def _budgets(self) -> str:
        """``1 budget (usd)``, ``12 budgets (usd)``."""
        return f"{self.plans} budget{'s' if self.plans != 1 else ''} ({self.unit})"

    def label(self) -> str:
        """The chart's short tag: ``N = 1.4e+09, D = 2e+10``."""
        return f"N = {self.model_params:.3g}" + (f", D = {self.tokens:.3g}" if self.tokens is not None else "")


class ReportSummary(FitSummary):
    """What ``toolscale report --json`` prints: the fit summary and the files written."""

    files: dict[str, str] = Field(default_factory=dict)
    """``markdown``, ``html``, ``json`` -> path written."""
    allocation: AllocationBasis | None = None
    """The model the allocation chart plans for (None: no allocation chart)."""


class FitRow(_Frozen):
    """One stored fit in ``toolscale fits list``."""

    fit_id: str
    """Registry id."""
    experiment: str
    """Experiment fitted."""
    benchmark: str
    """Benchmark."""
    metric: str
    """Metric."""
    law: str
    """Law."""
    n_points: int
    """Runs fitted."""
    converged: bool
    """Optimiser convergence."""
    created_at: str
    """When it was stored (UTC)."""
    stale_reason: str | None = None
    """Why it no longer matches its experiment's runs (None: current)."""
    heldout_mae: float | None = None
    """Held-out MAE, metric units."""
    interval_coverage: float | None = None
    """Share of held-out runs inside their 90% interval."""
    warnings: int = 0
    """How many warnings ``fits show`` prints."""


class FitList(_Frozen):
    """What ``toolscale fits list --json`` prints: newest first."""

    fits: list[FitRow]
    """Stored fits."""


class ParamDiff(_Frozen):
    """One parameter in two fits."""

    a: float | None
    """Estimate in the first fit (None: not a parameter of it)."""
    b: float | None
    """Estimate in the second fit."""
    a_ci: tuple[float, float] | None = None
    """95% interval in the first fit."""
    b_ci: tuple[float, float] | None = None
    """95% interval in the second fit."""
    overlap: bool | None = None
    """Whether the two 95% intervals overlap (None without both)."""


class FitDiff(_Frozen):
    """What ``toolscale fits diff A B --json`` prints."""

    a: str
    """First fit id."""
    b: str
    """Second fit id."""
    fields: dict[str, tuple[str | float | int | bool | None, str | float | int | bool | None]]
    """Summary fields that differ: ``name -> (a, b)`` (law, formula, runs, data hash, options, held-out figures)."""
    params: dict[str, ParamDiff]
    """Every parameter of either fit."""
