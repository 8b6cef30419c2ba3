"""What a run contributes to a fit: its final model, its early-stopped envelope, or its checkpoints.

Runs trained by the pipeline keep and score ``[eval] checkpoints`` checkpoints (checkpoints as data,
:attr:`grid.models.RunRecord.checkpoints`): every checkpoint on the validation benchmark (``valid-calls``,
databases disjoint from both test benchmarks), the chosen one and the last on the test benchmarks, and
``train/tokens``, the tokens seen by that step. ``fit --target`` says which value of a run is fitted:

* ``final``: the run's own value (its last model), as before checkpoints existed;
* ``envelope``: the early-stopped envelope, the test value of the checkpoint with the best *validation*
  value of the same metric (the lowest loss), at the tokens seen by that checkpoint (D) and the FLOPs
  spent by then. The test items never choose the checkpoint, so the envelope is honest, and a run that
  gets worse with more steps contributes its best model, which a monotone law can follow;
* ``checkpoints``: every scored checkpoint of a fitted run that has the test metric, dropping the first
  10% of training (Choshen et al. 2024, "A Hitchhiker's Guide to Scaling Law Estimation": intermediate
  checkpoints help, the earliest ones mislead), each at its own D; held-out runs contribute their envelope.

``auto`` (the default) is ``envelope`` for a loss (``loss``, ``bpb``) when any run has scored checkpoints,
else ``final``. :func:`target_runs` returns the runs re-expressed as the chosen target (copies whose metric,
``train_tokens`` and ``train_flops`` are the target's), so everything downstream (points, hold-out,
decisions, the allocator's best observed recipe) reads them as ordinary runs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from fit.errors import FitInputError
from grid.models import RunRecord

__all__ = ["TARGETS", "TOKENS_KEY", "VALIDATION", "CHECKPOINT_BURN_IN", "resolve_target", "envelope_step",
           "target_runs", "target_values", "at_first_checkpoint"]

TARGETS = ("auto", "envelope", "final", "checkpoints")
"""``fit --target`` choices (module docstring)."""
TOKENS_KEY = "train/tokens"
"""The checkpoint row holding the tokens seen by that step."""
VALIDATION = "valid-calls"
"""The default validation benchmark (``[eval] validation``)."""
CHECKPOINT_BURN_IN = 0.10
"""Share of training whose checkpoints ``--target checkpoints`` leaves out (Choshen et al. 2024)."""
_LOSSES = ("loss", "bpb")


def resolve_target(target: str, runs: Sequence[RunRecord], metric: str) -> str:
    """``auto`` -> ``envelope`` for a loss when any run has checkpoints, else ``final``; others unchanged."""
    if target not in TARGETS:
        raise FitInputError(f"--target must be one of {', '.join(TARGETS)}, got {target!r}")
    if target != "auto":
        return target
    has = any(getattr(r, "checkpoints", None) for r in runs)
    return "envelope" if metric in _LOSSES and has else "final"


def envelope_step(run: Any, metric: str, validation: str = VALIDATION) -> int | None:
    """The step of the run's checkpoint with the best ``validation/metric`` (lowest for a loss; the earliest on a
    tie), or None when no checkpoint has it."""
    key = f"{validation}/{metric}"
    scored = [(v[key], s) for s, v in (run.checkpoints or {}).items() if v.get(key) is not None
              and math.isfinite(float(v[key]))]
    if not scored:
        return None
    sign = 1.0 if metric in _LOSSES else -1.0
    return min(scored, key=lambda t: (sign * float(t[0]), t[1]))[1]


def _at(run: Any, step: int, key: str, suffix: str = "") -> Any:
    """A copy of ``run`` as its checkpoint ``step``: metric ``key``, D and FLOPs as of that step."""
    ck = run.checkpoints[step]
    tokens = ck.get(TOKENS_KEY)
    d, c = run.train_tokens, run.train_flops
    if tokens is not None and run.train_tokens:
        scale = float(tokens) / float(run.train_tokens)
        d, c = float(tokens), (float(run.train_flops) * scale if run.train_flops else None)
    meta = {**(run.metadata or {}), "target_step": step}
    if suffix:  # one point per checkpoint: never a replicate of another (fit.data groups by it)
        meta["checkpoint_point"] = step
    return run.model_copy(update={"run_id": run.run_id + suffix, "metrics": {**run.metrics, key: ck[key]},
                                  "train_tokens": d, "train_flops": c, "metadata": meta})


def _envelope(runs: Sequence[RunRecord], key: str, metric: str, validation: str,
              target: str = "envelope") -> list[RunRecord]:
    missing, out = [], []
    for r in runs:
        step = envelope_step(r, metric, validation)
        if step is None or key not in r.checkpoints[step]:
            missing.append(r.run_id)
            continue
        out.append(_at(r, step, key))
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise FitInputError(f"--target {target} needs checkpoints scored on {validation} and {key} at the chosen "
                            f"one; {len(missing)} run(s) have none: {shown} (fit them with --target final)")
    return out


def target_runs(runs: Sequence[RunRecord], *, benchmark: str, metric: str, target: str = "auto",
                validation: str = VALIDATION) -> tuple[list[RunRecord], str]:
    """``(runs as the target, the target resolved)``: see the module docstring. Runs without the metric at all
    (neither as a run value nor at a checkpoint) are passed through for the caller to count as skipped."""
    key = f"{benchmark}/{metric}"
    chosen = resolve_target(target, runs, metric)
    if chosen == "final":
        return list(runs), chosen
    relevant = [r for r in runs if r.metrics.get(key) is not None
                or any(key in v for v in (r.checkpoints or {}).values())]
    env = _envelope(relevant, key, metric, validation, chosen)
    if chosen == "envelope":
        return env, chosen
    out = [e for e in env if e.split != "fit"]
    for r in relevant:
        if r.split != "fit":
            continue
        last = max(r.checkpoints)
        for step in sorted(r.checkpoints):
            if step >= CHECKPOINT_BURN_IN * last and key in r.checkpoints[step]:
                out.append(_at(r, step, key, suffix=f"@{step}"))
    return out, chosen


def target_values(runs: Sequence[RunRecord], *, benchmark: str, metric: str, target: str = "auto",
                  validation: str = VALIDATION) -> dict[str, float]:
    """``run_id -> value`` of the target (one per run: ``checkpoints`` reads as ``envelope`` here)."""
    key = f"{benchmark}/{metric}"
    chosen = resolve_target(target, runs, metric)
    if chosen == "checkpoints":
        chosen = "envelope"
    view, _ = target_runs(runs, benchmark=benchmark, metric=metric, target=chosen, validation=validation)
    return {r.run_id: float(r.metrics[key]) for r in view if r.metrics.get(key) is not None}


def at_first_checkpoint(runs: Sequence[RunRecord]) -> set[str]:
    """Ids of the runs (as :func:`target_runs` returns them) whose envelope is their first kept checkpoint, of two
    or more: validation was still falling at the earliest model kept, or was already rising, so the run's optimum
    may lie earlier and its envelope overstates its best loss (and its D). Points of ``--target checkpoints``
    (one per checkpoint) are not envelopes and are left out."""
    out = set()
    for r in runs:
        meta = r.metadata or {}
        step = meta.get("target_step")
        if step is None or "checkpoint_point" in meta or len(r.checkpoints or {}) < 2:
            continue
        if step == min(r.checkpoints):
            out.add(r.run_id)
    return out
