"""Choose a run's checkpoint on a small validation set, then score only that one on the test benchmarks.

Scoring a checkpoint on every test item (and generating for accuracy) costs far more than deciding which
checkpoint to keep. :func:`choose_checkpoint` scores each checkpoint's likelihood on the validation items
only (no generation), with the tokenizer loaded once and the experiment's token cache (every checkpoint
and every run encode each item once), and returns the best by a loss metric (``bpb`` by default).
The caller then scores the chosen folder on the test benchmarks, e.g. with
:func:`eval.runner.evaluate_spec` and the same ``cache_dir``::

    choice = choose_checkpoint(run_dir.glob("checkpoint-*"), "validation-calls", cache_dir=cache, limit=64)
    rows = evaluate_spec(choice.chosen, cfg.eval, cache_dir=cache)

:func:`score_likelihood` is the one-model building block (also what a learning-rate scan can select by).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from eval.errors import EvalError
from eval.models import CheckpointChoice, CheckpointScore
from grid.models import MetricResult
from toolscale.errors import UsageError

__all__ = ["score_likelihood", "choose_checkpoint", "LOSS_METRICS"]

LOSS_METRICS = ("bpb", "loss")
"""Metrics a checkpoint can be chosen by (lower is better)."""


def score_likelihood(backend: Any, benchmark: str, *, items: Sequence[Any] | None = None, limit: int | None = None,
                     seed: int = 0) -> list[MetricResult]:
    """``call_logprob``, ``loss``, ``token_prob`` and ``bpb`` of one model on a call benchmark's reference
    answers, without generating (the items with a reference call; ``limit`` of them, stratified and seeded
    as :func:`eval.runner.select_items` picks them, the same for every model).

    ``backend`` is a backend that scores continuations (a :class:`eval.backends.TransformersBackend`).
    """
    from eval.benchmarks import get_benchmark, load_items
    from eval.prompts import reference_request
    from eval.runner import likelihood_metrics, select_items

    info = get_benchmark(benchmark)
    if info.kind != "calls":
        raise UsageError(f"benchmark {benchmark!r} has {info.kind} items; checkpoints are chosen on call items")
    chosen = [it for it in select_items(list(items) if items is not None else load_items(benchmark), limit, seed)
              if it.ground_truth]
    if not chosen:
        raise EvalError(f"benchmark {benchmark!r} has no item with a reference call to score")
    scores = backend.score([reference_request(it) for it in chosen])
    if scores is None:
        raise EvalError(f"backend {getattr(backend, 'name', backend)!r} cannot score continuations; "
                        "checkpoints are chosen by likelihood (use the transformers backend)")
    return likelihood_metrics(info, [(s.logprob, s.n_tokens, s.n_bytes) for s in scores if s.n_tokens > 0])


def _step(folder: Path) -> int | None:
    """The step of a ``checkpoint-<step>`` folder (HF Trainer's naming), else None."""
    tail = folder.name.rpartition("-")[2]
    return int(tail) if folder.name.startswith("checkpoint-") and tail.isdigit() else None


def choose_checkpoint(checkpoints: Iterable[str | Path], benchmark: str, *, metric: str = "bpb",
                      tokenizer: str | Path | None = None, cache_dir: str | Path | None = None,
                      limit: int | None = None, seed: int = 0, threads: int | None = None,
                      items: Sequence[Any] | None = None) -> CheckpointChoice:
    """Score every checkpoint folder on ``benchmark`` (likelihood only) and pick the lowest ``metric``.

    Parameters
    ----------
    checkpoints : model folders (``save_pretrained``), e.g. a run's ``checkpoint-<step>`` folders.
    benchmark : the validation benchmark (a registered call benchmark; ``items`` replaces its items).
    metric : ``bpb`` (default) or ``loss``; ties go to the earliest step (the cheaper model).
    tokenizer : folder of the tokenizer of every checkpoint (default: the first checkpoint's), loaded once.
    cache_dir : the experiment's token cache (:mod:`eval.token_cache`).
    limit, seed : validation items scored (stratified, seeded; None = all).
    threads : torch CPU threads.

    Returns
    -------
    CheckpointChoice
        The chosen folder and every checkpoint's score (``score`` and ``stderr`` of ``metric``), by step.
    """
    from eval.backends import TransformersBackend

    if metric not in LOSS_METRICS:
        raise UsageError(f"metric must be one of {', '.join(LOSS_METRICS)}, got {metric!r}")
    folders = sorted((Path(c) for c in checkpoints), key=lambda p: (_step(p) is None, _step(p) or 0, str(p)))
    if not folders:
        raise UsageError("choose_checkpoint needs at least one checkpoint folder, got none")
    missing = [str(p) for p in folders if not p.is_dir()]
    if missing:
        raise UsageError(f"checkpoint folder(s) not found: {', '.join(missing)}")
    tok = TransformersBackend._load_tokenizer(str(tokenizer or folders[0]))
    scored: list[CheckpointScore] = []
    for folder in folders:
        backend = TransformersBackend(str(folder), tokenizer_obj=tok, threads=threads, cache_dir=cache_dir)
        rows = {m.metric: m for m in score_likelihood(backend, benchmark, items=items, limit=limit, seed=seed)}
        if metric not in rows:
            raise EvalError(f"{folder}: no {metric!r} on {benchmark!r} (bpb needs every item's byte count)")
        m = rows[metric]
        scored.append(CheckpointScore(checkpoint=str(folder), step=_step(folder), score=m.score, stderr=m.stderr,
                                      n_items=m.n_items))
    finite = [s for s in scored if math.isfinite(s.score)]
    if not finite:
        raise EvalError(f"no checkpoint has a finite {metric} on {benchmark!r}")
    best = min(finite, key=lambda s: s.score)  # min keeps the first (earliest step) of equal scores
    return CheckpointChoice(chosen=best.checkpoint, benchmark=benchmark, metric=metric, scores=scored)
