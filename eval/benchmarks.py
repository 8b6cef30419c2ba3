"""The benchmark registry: name -> metadata and a lazily imported item loader.

Every benchmark reports a headline ``score`` (higher is better, in [0, 1]) and continuous metrics
beside it, which vary smoothly with scale where accuracy is step-like at small scale
(DataDecide, Magnusson et al. 2025):

* ``field_match`` -- share of expected fields (function name, each argument) right, from the
  generated text (:func:`eval.ast_match.match_item`);
* ``call_logprob`` -- mean over items of the log-likelihood (nats) of the reference answer's
  tokens given the prompt (higher is better);
* ``loss`` -- held-out assistant-token loss: the reference answer's mean negative log-likelihood
  per token, in nats/token (lower is better).

The two likelihood metrics need a backend that scores continuations (transformers); the
``gold`` pseudo-model and generation-only endpoints report the others only.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable
from typing import Any

from eval.errors import UnknownBenchmarkError
from eval.models import BenchmarkInfo

__all__ = ["register_benchmark", "get_benchmark", "list_benchmarks", "load_items", "preload_items",
           "check_validation", "CALL_METRICS", "ENV_METRICS", "CODE_METRICS"]

CALL_METRICS: dict[str, str] = {
    "score": "share of items answered exactly right (AST match; no call on irrelevance items)",
    "field_match": "share of expected fields (name, arguments) right, from the generated calls",
    "call_logprob": "mean log-likelihood of the reference call's tokens, nats (needs a scoring backend)",
    "loss": "reference answer's mean NLL per token, nats/token, lower is better (needs a scoring backend)",
    "token_prob": "exp(-loss): geometric-mean probability of a reference token, in (0, 1], higher is better",
    "bpb": "bits per byte of the reference answer's rendered text, lower is better (needs a scoring backend)",
}
BPB_METRIC = ("bits per byte of the reference answer's text as the chat template renders it, lower is better: "
              "-sum logprob / (ln 2 x bytes), comparable across tokenizers (needs a scoring backend)")
ENV_METRICS: dict[str, str] = {
    "score": "pass rate: share of episodes whose F1 reward is 1",
    "f1": "mean F1 reward of the episode's calls against the target calls",
    "call_logprob": "mean log-likelihood of the reference trajectory's assistant tokens, nats",
    "loss": "reference trajectory's assistant-token NLL per token, nats/token, lower is better",
    "token_prob": "exp(-loss): geometric-mean probability of a reference assistant token, higher is better",
}

CODE_METRICS: dict[str, str] = {
    **CALL_METRICS,
    "score": "pass rate: share of items whose written module passes the hidden tests (run in the jail)",
    "field_match": "share of the hidden tests the written module passes",
    "bpb": BPB_METRIC,
}

_REGISTRY: dict[str, BenchmarkInfo] = {}


def register_benchmark(info: BenchmarkInfo) -> BenchmarkInfo:
    """Add a benchmark (its loader stays a ``"module:attr"`` string until first use)."""
    _REGISTRY[info.name] = info
    return info


def get_benchmark(name: str) -> BenchmarkInfo:
    """The registered benchmark called ``name``; a one-line error with suggestions otherwise."""
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        close = difflib.get_close_matches(str(name), list(_REGISTRY), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise UnknownBenchmarkError(f"unknown benchmark {name!r}; known: {', '.join(sorted(_REGISTRY))}{hint}") from None


def list_benchmarks() -> list[BenchmarkInfo]:
    """All registered benchmarks, by name."""
    return [_REGISTRY[k] for k in sorted(_REGISTRY)]


_LOADED: dict[tuple[str, str, tuple[tuple[str, Any], ...]], tuple[Any, ...]] = {}
"""Items built in this process, by benchmark, loader and loader arguments (the loaders are deterministic)."""


def load_items(name: str, **kwargs: Any) -> list[Any]:
    """The items of benchmark ``name`` (imports its loader on first use; built once per process and
    arguments: building the held-out call items executes every call, about a second per benchmark)."""
    info = get_benchmark(name)
    key = (name, info.loader, tuple(sorted(kwargs.items())))
    if key not in _LOADED:
        module, attr = info.loader.split(":")
        loader: Callable[..., list[Any]] = getattr(importlib.import_module(module), attr)
        _LOADED[key] = tuple(loader(**kwargs))
    return list(_LOADED[key])


def preload_items(names: tuple[str, ...] = ("heldout-calls", "indist-calls", "heldout-servers",
                                            "valid-calls")) -> None:
    """Build the items of ``names`` now (the warm executor's fork server does, so every job forked from it
    starts with them); a benchmark that cannot be built is left to the job that needs it."""
    for name in names:
        try:
            load_items(name)
        except Exception:  # noqa: BLE001 - the job scoring it reports the error
            continue


def check_validation(validation: str | None, tests: list[str]) -> None:
    """Refuse a validation benchmark that shares items with a test benchmark, naming how many.

    The validation items choose checkpoints and learning rates; a shared item would let a test item choose.
    Items are compared by content, ids aside (:func:`eval.heldout.item_key`). Raises
    :class:`toolscale.errors.UsageError` (exit 2) on the first test benchmark that shares any.
    """
    from eval.heldout import shared_items
    from toolscale.errors import UsageError

    if validation is None:
        return
    info = get_benchmark(validation)
    if info.kind not in ("calls", "code"):
        raise UsageError(f"eval.validation {validation!r} is a {info.kind} benchmark; checkpoints are chosen on "
                         "a call or code benchmark's bits per byte (valid-calls, code-valid)")
    items = load_items(validation)
    for name in tests:
        if get_benchmark(name).kind != info.kind:
            continue  # items of different kinds are never the same item
        n = shared_items(items, load_items(name))
        if n:
            raise UsageError(f"eval.validation {validation!r} shares {n} of its {len(items)} items with test "
                             f"benchmark {name!r}; choose checkpoints on items no test benchmark holds "
                             "(valid-calls)")


register_benchmark(BenchmarkInfo(
    name="heldout-calls", version="2", kind="calls", loader="eval.heldout:load_heldout_calls",
    digest="ff581e55abff9019ecee3d819af7a8304346ccf460722adcecb06f4733c402e5",
    description="single-step calls on the held-out bundled servers (synth.servers HELDOUT_DOMAINS), "
                "BFCL-style AST match of function name, required arguments and values, plus irrelevance "
                "items whose right answer is no call; score = share right",
    metrics=CALL_METRICS))
register_benchmark(BenchmarkInfo(
    name="indist-calls", version="1", kind="calls", loader="eval.heldout:load_indist_calls",
    digest="6dd59c094963f7bfdd31b8609d234140a37f13eaa0b8b42f54d7be9a36506d9d",
    description="in-distribution: 256 new single-step call items (and 16 irrelevance items) over the eight "
                "training servers, on held-out databases (seeds no training run draws); AST match as "
                "heldout-calls; bpb = bits per byte of the reference calls",
    metrics={**CALL_METRICS, "bpb": BPB_METRIC}))
register_benchmark(BenchmarkInfo(
    name="heldout-servers", version="1", kind="calls", loader="eval.heldout:load_heldout_servers",
    digest="67f5c14268421a4516462e6e5b0ee4ae581ac5542bcbd7f288b949a1d94a920f",
    description="held-out servers: 200 call items (and 32 irrelevance items) on the two servers no run "
                "trains on, on held-out databases; AST match as heldout-calls; bpb = bits per byte of the "
                "reference calls",
    metrics={**CALL_METRICS, "bpb": BPB_METRIC}))
register_benchmark(BenchmarkInfo(
    name="valid-calls", version="1", kind="calls", loader="eval.heldout:load_valid_calls",
    digest="3ad6ce2e1c11433dee372cca8ab045f9ebc86a04070208e0753dcabf3ccb5463",
    description="validation split: call items over the eight training servers on databases disjoint from both "
                "test benchmarks, no item shared with them; chooses checkpoints and learning rates (never a test "
                "benchmark); bpb = bits per byte of the reference calls",
    metrics={**CALL_METRICS, "bpb": BPB_METRIC}))
register_benchmark(BenchmarkInfo(   # v2: tools named and shaped like the SFT tools, no stub distractors
    name="heldout-env", version="2", kind="env", loader="eval.heldout:load_heldout_env",
    description="multi-turn episodes in executable environments (synth.envs) built from the held-out "
                "servers; score = pass rate (F1 reward 1), f1 = mean F1 reward",
    metrics=ENV_METRICS))
register_benchmark(BenchmarkInfo(
    name="indist-env", version="1", kind="env", loader="eval.heldout:load_indist_env",
    description="multi-turn episodes in executable environments on the training servers over databases no "
                "run draws: single-hop, multi-hop, parallel with distractors in equal shares; score = pass "
                "rate, f1 = mean F1 reward",
    metrics=ENV_METRICS))
register_benchmark(BenchmarkInfo(
    name="bfcl", version="v4-2026.3.23", kind="calls", loader="eval.bfcl:load_bfcl", aggregate="category_mean",
    digest="3b429303c13ba23770729d50ad3e9015889fb27b5ec15b3caabbb110d4df5e95",
    description="Berkeley Function Calling Leaderboard v4, non-live AST categories simple (python), "
                "multiple, parallel, parallel_multiple, irrelevance; score = unweighted mean of the "
                "category accuracies (BFCL's summary), acc_<category> each",
    metrics={**CALL_METRICS, "score": "unweighted mean of the per-category accuracies",
             "acc_<category>": "accuracy within one BFCL category"}))
register_benchmark(BenchmarkInfo(
    name="code-indist", version="1", kind="code", loader="eval.code_bench:load_code_indist",
    digest="360f27784997329a87fd826a0b8da42ffe8414d48e52b805282f4828df3f8bc5",
    description="code domain, in-distribution: 256 write_file steps of code tasks over the training library APIs, "
                "in repositories no training run draws; score = pass rate of the written module's hidden tests "
                "in the jail; bpb = bits per byte of the reference write_file call",
    metrics=CODE_METRICS))
register_benchmark(BenchmarkInfo(
    name="code-heldout-apis", version="1", kind="code", loader="eval.code_bench:load_code_heldout",
    digest="835e8679bc6fef23a41dac1e1cfbac6fc1c87ab972b8240665f0bc45446d3d71",
    description="code domain, held-out APIs: 200 write_file steps whose function uses one of the 10 library APIs "
                "no training dataset draws; pass rate and bpb as code-indist",
    metrics=CODE_METRICS))
register_benchmark(BenchmarkInfo(
    name="code-valid", version="1", kind="code", loader="eval.code_bench:load_code_valid",
    digest="58bf5ee3f3c272fc951a063049aa6a769de3962bab5b67d815cd3e8a26d31c51",
    description="code domain, validation split: 128 write_file steps over the training APIs in repositories of "
                "neither test benchmark; chooses checkpoints and rates, never a test; bpb and pass rate as "
                "code-indist",
    metrics=CODE_METRICS))
