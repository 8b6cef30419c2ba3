"""Scoring a run's kept checkpoints (checkpoints as data): validation at each, the test benchmarks at the chosen one.

A run keeps ``[eval] checkpoints`` models, evenly spaced, the last its final one
(:func:`train.checkpoint.snapshot_steps`). :func:`evaluate_checkpoints` scores them so that the test items
never choose:

1. every checkpoint on the validation benchmark (``[eval] validation``, ``valid-calls``: databases disjoint
   from every test benchmark), likelihood metrics only;
2. the checkpoint with the lowest validation ``bpb`` (the earliest on a tie) is the *chosen* one, the run's
   early-stopped model (:mod:`fit.targets` fits its test value, the envelope);
3. the test benchmarks (``[eval] benchmarks``) at the chosen checkpoint and at the last one, or at every
   checkpoint with ``checkpoint_tests = "all"``.

Every row carries its checkpoint's ``step``; ``train/tokens`` holds the tokens seen by it. The last
checkpoint's test rows are also the run's own rows (no step), so ``fit --target final`` reads a run as before.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from grid.models import MetricResult

__all__ = ["evaluate_checkpoints", "choose_step", "TOKENS_BENCHMARK", "CHOICE_METRIC"]

TOKENS_BENCHMARK = "train"
"""Pseudo-benchmark of the per-checkpoint accounting rows (``train/tokens``)."""
CHOICE_METRIC = "bpb"
"""The validation metric that chooses (lowest wins)."""


def choose_step(validation: dict[int, float]) -> int:
    """The step with the lowest validation value, the earliest on a tie (``validation``: step -> value)."""
    ok = {s: v for s, v in validation.items() if v is not None and math.isfinite(v)}
    if not ok:
        raise ValueError("no checkpoint has a finite validation value")
    return min(ok, key=lambda s: (ok[s], s))


def _tagged(rows: Sequence[MetricResult], step: int | None) -> list[MetricResult]:
    return [r.model_copy(update={"step": step}) for r in rows]


def evaluate_checkpoints(snapshots: Sequence[dict[str, Any]], spec: Any, *,
                         score: Callable[..., list[MetricResult]]) -> tuple[list[MetricResult], dict[str, Any]]:
    """``(metric rows, summary)`` of a run's kept checkpoints (module docstring).

    Parameters
    ----------
    snapshots : ``[{"step", "tokens", "path"}]`` in step order (``train_stats.json``'s ``snapshots``).
    spec : the config's ``[eval]`` section (``validation``, ``validation_limit``, ``benchmarks``,
        ``checkpoint_tests``, ``limit``, ``generate_limit``).
    score : ``score(model_dir, benchmark, *, limit, generate_limit, score_only, diagnostics) -> rows`` (one model
        load per folder is the caller's business; :func:`eval.runner.evaluate` fits); ``diagnostics`` is True
        for the chosen checkpoint's test benchmarks (:mod:`eval.diagnostics`: bits per byte by span type, on
        seen and unseen tools, the uniform and unigram baselines).

    The summary holds ``chosen_step``, ``last_step``, the validation value of each step and the tokens.
    """
    if not snapshots:
        raise ValueError("no kept checkpoint to score")
    rows: list[MetricResult] = []
    valid: dict[int, float] = {}
    for snap in snapshots:
        step = int(snap["step"])
        got = score(snap["path"], spec.validation, limit=spec.validation_limit, generate_limit=None, score_only=True,
                    diagnostics=False)
        rows += _tagged(got, step)
        rows.append(MetricResult(benchmark=TOKENS_BENCHMARK, metric="tokens", score=float(snap["tokens"]),
                                 higher_is_better=True, step=step))
        value = next((r.score for r in got if r.metric == CHOICE_METRIC), None)
        valid[step] = float(value) if value is not None else math.nan
    chosen = choose_step(valid)
    last = int(snapshots[-1]["step"])
    wanted = [int(s["step"]) for s in snapshots] if spec.checkpoint_tests == "all" else sorted({chosen, last})
    by_step = {int(s["step"]): s for s in snapshots}
    for step in wanted:
        for bench in spec.benchmarks:
            got = score(by_step[step]["path"], bench, limit=spec.limit, generate_limit=spec.generate_limit,
                        score_only=False, diagnostics=step == chosen)
            rows += _tagged(got, step)
            if step == last:
                rows += _tagged(got, None)  # the run's own value: its final model
    summary = {"chosen_step": chosen, "last_step": last, "validation": spec.validation,
               "validation_bpb": {str(k): v for k, v in valid.items()},
               "tokens": {str(int(s["step"])): float(s["tokens"]) for s in snapshots}}
    return rows, summary
