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
* :mod:`eval.token_cache` -- tokenised requests cached on disk per tokenizer (one experiment encodes once);
* :mod:`eval.runner` -- :func:`~eval.runner.evaluate` and the metric aggregation;
* :mod:`eval.checkpoints` -- a run's kept checkpoints: each scored on the validation items (likelihood only),
  the test benchmarks only at the chosen one and the last.

Nothing here imports torch until a transformers backend is built.
"""

from toolscale.exports import lazy_exports

_EXPORTS: dict[str, str] = {
    'evaluate': 'eval.runner',
    'evaluate_spec': 'eval.runner',
    'get_benchmark': 'eval.benchmarks',
    'list_benchmarks': 'eval.benchmarks',
    'load_items': 'eval.benchmarks',
}
"""Public names and the modules that define them: other packages import these (or ``eval.models``)."""

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
