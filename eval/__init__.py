"""eval: benchmark scoring of tool-calling models (pinned interface 5).

Modules, from data to numbers:

* :mod:`eval.models` -- contracts (tool calls, items, match results, benchmark metadata);
* :mod:`eval.benchmarks` -- the registry: ``heldout-calls``, ``heldout-env``, ``bfcl``;
* :mod:`eval.bfcl`, :mod:`eval.heldout` -- item loaders (BFCL v4 from the ``bfcl-eval`` wheel; the
  held-out bundled servers and environments of ``synth``);
* :mod:`eval.prompts` -- items to chat requests and reference answers;
* :mod:`eval.parsing` -- tool calls out of model text, malformed output never raising;
* :mod:`eval.ast_match` -- BFCL's AST matching plus a per-field partial score;
* :mod:`eval.backends` -- transformers (CPU, batched), OpenAI-compatible endpoints, vLLM;
* :mod:`eval.episodes` -- multi-turn episodes in executable environments (``heldout-env``);
* :mod:`eval.runner` -- :func:`~eval.runner.evaluate` and the metric aggregation.

Nothing here imports torch until a transformers backend is built.
"""

_EXPORTS: dict[str, str] = {
    'evaluate': 'eval.runner',
    'evaluate_spec': 'eval.runner',
    'get_benchmark': 'eval.benchmarks',
    'list_benchmarks': 'eval.benchmarks',
    'load_items': 'eval.benchmarks',
}
"""Public names and the modules that define them: other packages import these (or ``eval.models``)."""

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    """Load a public name from its module on first use (PEP 562), so that importing the package stays cheap."""
    if name in _EXPORTS:
        import importlib

        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
