"""Score a model (or the ``gold`` pseudo-model) on a registered benchmark (pinned interface 5).

:func:`evaluate` is the one entry point: it loads the benchmark's items, picks ``limit`` of them
(stratified by category, seeded), asks a backend for completions, parses and matches them, and
returns :class:`grid.models.MetricResult` rows: the headline ``score`` plus continuous metrics.
The aggregation (:func:`call_metrics`, :func:`env_metrics`) is pure and tested on its own.

``gold`` answers every item with its reference (the first allowed value of each argument, no call
on irrelevance items; the target calls in an environment), through the same parser and matcher,
so it must score 1.0 on every benchmark: a check of the scorer itself.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from eval.ast_match import gold_calls, match_item
from eval.backends import Backend, get_backend
from eval.benchmarks import get_benchmark, load_items
from eval.errors import EvalError
from eval.episodes import gold_policy, golden_calls, reference_trajectory, run_episodes
from eval.models import BenchmarkInfo, CallItem, ChatRequest, ContinuationScore, MatchResult
from eval.parsing import format_tool_call, parse_output
from eval.prompts import IRRELEVANT_ANSWER, item_request, reference_request
from grid.models import MetricResult
from toolscale.errors import UsageError

__all__ = ["evaluate", "evaluate_spec", "select_items", "gold_completion", "reference_budget", "call_metrics",
           "env_metrics", "likelihood_metrics", "mean_stderr",
           "GOLD", "DEFAULT_MAX_NEW_TOKENS"]

GOLD = "gold"
"""The pseudo-model that answers with the reference answers."""
DEFAULT_MAX_NEW_TOKENS = {"calls": 256, "env": 128, "code": 256}
"""Most generated tokens per completion (a call item), or per turn (an episode)."""
BUDGET_FACTOR = 1.5
"""Per-item budget: this many times the reference's tokens ..."""
BUDGET_SLACK = 16
"""... plus this many (see :func:`reference_budget`)."""


def mean_stderr(values: Sequence[float]) -> tuple[float, float]:
    """Mean and its standard error ``s / sqrt(n)`` (sample standard deviation; 0 for one value)."""
    n = len(values)
    if n == 0:
        return float("nan"), float("nan")
    m = sum(values) / n
    if n == 1:
        return m, 0.0
    var = sum((v - m) ** 2 for v in values) / (n - 1)
    return m, math.sqrt(var / n)


def select_items(items: Sequence[Any], limit: int | None, seed: int = 0) -> list[Any]:
    """``limit`` items, stratified: each category shuffled with ``seed``, then taken round-robin.

    Without a limit all items are kept, in order. Items without a ``category`` form one stratum.
    """
    if limit is None:
        return list(items)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise UsageError(f"limit must be a positive integer, got {limit!r}")
    strata: dict[str, list[Any]] = defaultdict(list)
    for it in items:
        strata[getattr(it, "category", "")].append(it)
    rng = random.Random(seed)
    queues = []
    for key in sorted(strata):
        group = list(strata[key])
        rng.shuffle(group)
        queues.append(group)
    out: list[Any] = []
    while len(out) < limit and any(queues):
        for q in queues:
            if q and len(out) < limit:
                out.append(q.pop(0))
    return out


def reference_budget(model: Any, references: Sequence[str], cap: int) -> int:
    """Tokens a completion may use: ``min(cap, ceil(1.5 * longest reference) + 16)``.

    A right answer is about as long as the reference (BFCL alternatives and optional arguments
    add a little), so the budget leaves it half as much again plus slack, and a model that
    rambles is cut early: on small CPU models generation time is almost all rambling. Backends
    that cannot count tokens (no ``token_count``) get ``cap``.
    """
    count = getattr(model, "token_count", None)
    if count is None or not references:
        return cap
    return max(1, min(cap, math.ceil(BUDGET_FACTOR * max(count(t) for t in references)) + BUDGET_SLACK))


def gold_completion(item: CallItem) -> str:
    """The reference answer of a call item as completion text (the pinned format)."""
    calls = gold_calls(item)
    return "".join(format_tool_call(c) for c in calls) if calls else IRRELEVANT_ANSWER


def _metric(info: BenchmarkInfo, metric: str, values: Sequence[float], higher: bool = True) -> MetricResult | None:
    if not values:
        return None
    m, se = mean_stderr(values)
    return MetricResult(benchmark=info.name, metric=metric, version=info.version, score=m, stderr=se,
                        n_items=len(values), higher_is_better=higher)


def call_metrics(info: BenchmarkInfo, items: Sequence[CallItem], results: Sequence[MatchResult],
                 scores: Sequence[ContinuationScore] | None = None) -> list[MetricResult]:
    """Aggregate item verdicts (and optional reference likelihoods) into metric rows.

    Notes
    -----
    ``score`` is the share of items right (``aggregate="mean"``), or the unweighted mean of the
    per-category shares (``"category_mean"``, BFCL's summary) with standard error
    ``sqrt(sum_c se_c^2) / K``. ``loss = -sum_i logprob_i / sum_i n_i`` over the items with calls
    (nats/token), its standard error from the per-item mean losses; ``call_logprob`` is the mean of
    ``logprob_i`` (nats). Irrelevance items carry no reference call and are left out of both.
    """
    if len(items) != len(results):
        raise EvalError(f"{len(items)} items but {len(results)} results")
    by_cat: dict[str, list[float]] = defaultdict(list)
    for it, r in zip(items, results, strict=True):
        by_cat[it.category].append(float(r.valid))
    rows: list[MetricResult] = []
    if info.aggregate == "category_mean":
        stats = [mean_stderr(v) for v in by_cat.values()]
        k = len(stats)
        score = sum(m for m, _ in stats) / k
        se = math.sqrt(sum(s ** 2 for _, s in stats)) / k
        rows.append(MetricResult(benchmark=info.name, metric="score", version=info.version, score=score,
                                 stderr=se, n_items=len(items), higher_is_better=True))
    else:
        rows.append(_metric(info, "score", [float(r.valid) for r in results]))  # type: ignore[arg-type]
    rows.append(_metric(info, "field_match", [r.field_match for r in results]))  # type: ignore[arg-type]
    for cat in sorted(by_cat):
        rows.append(_metric(info, f"acc_{cat}", by_cat[cat]))  # type: ignore[arg-type]
    if scores is not None:
        rows += likelihood_metrics(info, [(s.logprob, s.n_tokens, s.n_bytes) for it, s in zip(items, scores, strict=True)
                                          if it.ground_truth and s.n_tokens > 0])
    return [r for r in rows if r is not None]


def likelihood_metrics(info: BenchmarkInfo, pairs: Sequence[tuple[float, int] | tuple[float, int, int]]
                       ) -> list[MetricResult]:
    """``call_logprob``, ``loss``, ``token_prob`` and ``bpb`` from per-item (log-likelihood in nats, token
    count[, UTF-8 bytes of the scored text]).

    Notes
    -----
    ``loss = -sum_i lp_i / sum_i n_i`` (nats/token); ``token_prob = exp(-loss)``, the
    geometric-mean probability of a reference token: bounded and higher-is-better, so
    score-type laws fit it at scales where exact-match accuracy is still 0. Its standard
    error is the delta-method ``token_prob * se(loss)``. ``bpb = -sum_i lp_i / (ln 2 sum_i b_i)``,
    bits per byte of the scored text: independent of the tokenizer, so runs with different
    tokenizers compare; reported when every item counts its bytes, standard error from the
    per-item values ``-lp_i / (ln 2 b_i)``.
    """
    if not pairs:
        return []
    lps = [p[0] for p in pairs]
    ns = [p[1] for p in pairs]
    loss = -sum(lps) / sum(ns)
    _, se = mean_stderr([-lp / n for lp, n in zip(lps, ns)])
    rows = [_metric(info, "call_logprob", lps),
            MetricResult(benchmark=info.name, metric="loss", version=info.version, score=loss, stderr=se,
                         n_items=len(pairs), higher_is_better=False),
            MetricResult(benchmark=info.name, metric="token_prob", version=info.version, score=math.exp(-loss),
                         stderr=math.exp(-loss) * se, n_items=len(pairs),
                         higher_is_better=True)]
    nbytes = [p[2] if len(p) > 2 else 0 for p in pairs]
    if all(b > 0 for b in nbytes):
        bpb = -sum(lps) / (math.log(2) * sum(nbytes))
        _, se_b = mean_stderr([-lp / (math.log(2) * b) for lp, b in zip(lps, nbytes)])
        rows.append(MetricResult(benchmark=info.name, metric="bpb", version=info.version, score=bpb, stderr=se_b,
                                 n_items=len(pairs), higher_is_better=False))
    return rows


def env_metrics(info: BenchmarkInfo, rewards: Sequence[float],
                scores: Sequence[ContinuationScore] | None = None) -> list[MetricResult]:
    """Pass rate (``score``: F1 reward of 1), mean F1, and the reference trajectories' likelihood metrics."""
    rows = [_metric(info, "score", [float(r >= 1.0 - 1e-9) for r in rewards]), _metric(info, "f1", list(rewards))]
    if scores:
        rows += likelihood_metrics(info, [(s.logprob, s.n_tokens, s.n_bytes) for s in scores if s.n_tokens > 0])
    return [r for r in rows if r is not None]


# ----------------------------------------------------------------------------------------------- evaluate


class _NoModel:
    """Stands in for the backend when the gold pseudo-model answers (never asked anything)."""

    name = GOLD

    def generate(self, requests: list[ChatRequest], *, max_new_tokens: Any) -> list[str]:  # pragma: no cover
        raise EvalError("the gold pseudo-model does not generate")

    def score(self, requests: list[ChatRequest]) -> None:  # pragma: no cover
        return None


def evaluate(model_dir_or_gold: str, benchmark: str, *, limit: int | None = None, seed: int = 0,
             backend: str | Backend = "transformers", endpoint: str | None = None, batch_size: int = 8,
             max_new_tokens: int | None = None, threads: int | None = None, device: str = "cpu",
             items: Sequence[Any] | None = None, generate_limit: int | None = None,
             score_only: bool = False, diagnostics: Any = None) -> list[MetricResult]:
    """Score a model on one benchmark.

    Parameters
    ----------
    model_dir_or_gold : str
        A folder written by ``save_pretrained`` (model + tokenizer with chat template), a served
        model name for the ``openai`` backend, or ``"gold"`` (the reference answers).
    benchmark : str
        A registered benchmark (:func:`eval.benchmarks.get_benchmark`).
    limit : int or None
        Items to score (stratified by category, seeded); None = all. For ``env`` benchmarks the
        first ``limit`` episodes are built (building is the expensive part).
    seed : int
        Seed of the item selection.
    backend : str or Backend
        ``transformers`` (default), ``openai`` (needs ``endpoint``), ``vllm``, or a backend object.
    endpoint : str or None
        Base URL of an OpenAI-compatible server.
    batch_size, max_new_tokens, threads, device
        Generation settings (``threads``: ``torch.set_num_threads``; ``device``: transformers only).
        ``max_new_tokens`` caps each completion (each turn in an episode), below which every item
        gets :func:`reference_budget` tokens when the backend counts tokens.
    items : sequence or None
        Items to use instead of the benchmark's own (tests, custom suites).
    generate_limit : int or None
        Call benchmarks: generate and match only this many of the chosen items (stratified, seeded, the
        same ones every run), while every chosen item is scored for ``loss``/``bpb``/``token_prob``;
        None generates all. Generation is most of eval's cost on a CPU.
    score_only : bool
        Call benchmarks: generate nothing; only the likelihood metrics (``loss``, ``bpb``, ...) of the chosen
        items (a validation set choosing among checkpoints needs no more).
    diagnostics : eval.diagnostics.Diagnostics or None
        Call benchmarks with a token-scoring backend: add bits per byte by span type, on seen and unseen
        tools, and the uniform and unigram baselines (:func:`eval.diagnostics.diagnostic_metrics`).

    Returns
    -------
    list of MetricResult
        ``score`` first, then ``field_match``/``f1``, per-category accuracies, and ``call_logprob``
        and ``loss`` when the backend scores continuations (not for ``gold``).

    Examples
    --------
    >>> [m.score for m in evaluate("gold", "bfcl", limit=20) if m.metric == "score"]   # doctest: +SKIP
    [1.0]
    """
    info = get_benchmark(benchmark)
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise UsageError(f"limit must be a positive integer, got {limit!r}")
    if generate_limit is not None and (isinstance(generate_limit, bool) or not isinstance(generate_limit, int)
                                       or generate_limit < 1):
        raise UsageError(f"generate_limit must be a positive integer, got {generate_limit!r}")
    if items is not None:
        all_items = list(items)
    elif info.kind == "env" and limit is not None:
        all_items = load_items(info.name, n=limit)  # episodes are built on demand: build only those scored
    else:
        all_items = load_items(info.name)
    if not all_items:
        raise EvalError(f"benchmark {info.name!r} has no items")
    chosen = select_items(all_items, limit, seed)
    gold = isinstance(model_dir_or_gold, str) and model_dir_or_gold == GOLD
    model: Backend = _NoModel()
    if not gold:
        if isinstance(backend, str):
            options: dict[str, Any] = {"endpoint": endpoint} if backend == "openai" else {
                "batch_size": batch_size, "threads": threads, "device": device} if backend == "transformers" else {}
            model = get_backend(backend, str(model_dir_or_gold), **options)
        else:
            model = backend
    cap = max_new_tokens or DEFAULT_MAX_NEW_TOKENS[info.kind]

    if info.kind == "env":
        if gold:
            rewards = run_episodes(chosen, gold_policy(chosen), [cap] * len(chosen))
            return env_metrics(info, rewards)
        limits = [reference_budget(model, [format_tool_call(c) for c in golden_calls(it)], cap) for it in chosen]
        rewards = run_episodes(chosen, lambda reqs, lim: model.generate(reqs, max_new_tokens=lim), limits)
        scores = model.score([reference_trajectory(it) for it in chosen])
        return env_metrics(info, rewards, scores)

    if score_only:
        if gold:
            return []
        scores = model.score([reference_request(it) for it in chosen])
        return likelihood_metrics(info, [(sc.logprob, sc.n_tokens, sc.n_bytes) for it, sc in zip(chosen, scores, strict=True)
                                         if it.ground_truth and sc.n_tokens > 0]) if scores is not None else []
    generated = chosen if generate_limit is None else select_items(chosen, min(generate_limit, len(chosen)), seed)
    if gold:
        texts = [gold_completion(it) for it in generated]
        scores = None
    else:
        limits = [reference_budget(model, [gold_completion(it)], cap) for it in generated]
        texts = model.generate([item_request(it) for it in generated], max_new_tokens=limits)
        scores = _score(model, [reference_request(it) for it in chosen], detail=diagnostics is not None)
    if info.kind == "code":  # the written module's hidden tests, run in the jail (one batch)
        from eval.code_bench import match_code_items

        results = match_code_items(generated, [parse_output(t) for t in texts])
    else:
        results = [match_item(it, parse_output(t)) for it, t in zip(generated, texts, strict=True)]
    extra = _diagnostics(info, chosen, scores, model, diagnostics)
    if generated is chosen:
        return call_metrics(info, chosen, results, scores) + extra
    rows = call_metrics(info, generated, results)
    if scores is not None:
        rows += likelihood_metrics(info, [(s.logprob, s.n_tokens, s.n_bytes) for it, s in zip(chosen, scores, strict=True)
                                          if it.ground_truth and s.n_tokens > 0])
    return rows + extra


def _score(model: Any, requests: list[ChatRequest], *, detail: bool) -> Any:
    """The backend's continuation scores, per token when ``detail`` and the backend can (else plain)."""
    if detail:
        try:
            return model.score(requests, detail=True)
        except TypeError:  # a backend without per-token scores
            pass
    return model.score(requests)


def _diagnostics(info: BenchmarkInfo, items: Sequence[Any], scores: Any, model: Any,
                 diagnostics: Any) -> list[MetricResult]:
    """:func:`eval.diagnostics.diagnostic_metrics` rows when asked for and the scores carry tokens."""
    tokenizer = getattr(model, "tokenizer", None)
    if diagnostics is None or not scores or tokenizer is None or not any(s.token_ids for s in scores):
        return []
    from eval.diagnostics import diagnostic_metrics

    return diagnostic_metrics(info, items, scores, lambda ids: tokenizer.decode(ids, skip_special_tokens=False),
                              diagnostics)


def evaluate_spec(model_dir_or_gold: str, spec: Any, *, seed: int = 0, threads: int | None = None) -> list[MetricResult]:
    """Every benchmark of a config's ``[eval]`` section (:class:`toolscale.config.EvalSpec`), one model load.

    ``seed`` selects the items when ``spec.limit`` is set: runs compared in one fit should share it
    (a run's own training seed would score each run on different items). Returns the metric rows
    of all benchmarks, in the spec's order (what a job puts in its result file).
    """
    gold = model_dir_or_gold == GOLD
    backend: str | Backend = spec.backend
    if not gold:
        options: dict[str, Any] = {"endpoint": spec.endpoint} if spec.backend == "openai" else {
            "threads": threads} if spec.backend == "transformers" else {}
        backend = get_backend(spec.backend, str(model_dir_or_gold), **options)
    rows: list[MetricResult] = []
    for name in spec.benchmarks:
        rows.extend(evaluate(model_dir_or_gold, name, limit=spec.limit, seed=seed, backend=backend,
                             generate_limit=getattr(spec, "generate_limit", None)))
    return rows
