"""``toolscale calibrate-cost``: the compute price the config assumes, measured on pilot runs.

``[cost] per_pflop`` turns planned FLOPs into money; an assumed MFU makes it a guess. After a few pilot runs
per rung (``launch --run-id ...``), :func:`calibrate` divides what they cost by what they computed:

    train GPU-s = GPU-seconds of every attempt (``sacct --duplicates``, else what each job recorded)
                  - (eval + dataset stage seconds) x GPUs
    PFLOP per GPU-hour = sum of measured training FLOPs / 1e15 / (train GPU-s / 3600)
    per_pflop = gpu_hour_cost / PFLOP per GPU-hour

and the evaluation's GPU-seconds per run for ``[cost] eval_gpu_s_per_run``. Pure; the registry and ``sacct``
are read by the caller (:func:`gpu_seconds`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from slurm.gpu_time import sacct_gpu_seconds
from slurm.models import CostCalibration, RungCalibration
from grid.models import RunRecord

__all__ = ["calibrate", "gpu_seconds"]


def gpu_seconds(runs: Sequence[RunRecord], *, use_sacct: bool = True) -> tuple[dict[str, float], str]:
    """``(run id -> GPU-seconds over every attempt, source)``: ``sacct`` when it knows every job, else the
    ``gpu_seconds`` each job recorded in its result."""
    ids = {r.run_id: r.job_id for r in runs if r.job_id}
    acct = sacct_gpu_seconds(ids.values()) if use_sacct and ids else {}
    if ids and all(j in acct for j in ids.values()) and sum(acct.values()) > 0:
        return {rid: acct[j] for rid, j in ids.items()}, "sacct"
    return {r.run_id: float((r.metadata or {}).get("gpu_seconds") or 0.0) for r in runs}, "jobs"


def calibrate(experiment: str, runs: Sequence[RunRecord], gpu_s: Mapping[str, float], gpus: Mapping[str, int], *,
              unit: str, gpu_hour_cost: float | None, source: str) -> CostCalibration:
    """Per-rung and overall calibration of done ``runs`` (registry rows with ``train_flops``, ``metadata``)."""
    by_rung: dict[str, list[Any]] = defaultdict(list)
    for r in runs:
        if r.status == "done" and r.train_flops:
            by_rung[r.model_size].append(r)
    rungs, total_pflop, total_train_h, evals = [], 0.0, 0.0, []
    for name, group in by_rung.items():
        n_gpu = max(0, int(gpus.get(name, 0)))
        pflop = sum(r.train_flops for r in group) / 1e15
        stage = [(r.metadata or {}).get("stage_s") or {} for r in group]
        eval_s = [float(s.get("eval", 0.0)) * n_gpu for s in stage]
        other = sum(float(s.get("dataset", 0.0)) * n_gpu for s in stage)
        train_h = max(0.0, sum(gpu_s.get(r.run_id, 0.0) for r in group) - sum(eval_s) - other) / 3600
        rate = pflop / train_h if train_h > 0 else None
        price = gpu_hour_cost / rate if rate and gpu_hour_cost is not None else None
        rungs.append(RungCalibration(model_size=name, runs=len(group), pflops=round(pflop, 6),
                                     gpu_hours=round(train_h, 6), pflop_per_gpu_hour=_r(rate), per_pflop=_r(price),
                                     eval_gpu_s=round(sum(eval_s) / len(group), 3), source=source))
        total_pflop, total_train_h = total_pflop + pflop, total_train_h + train_h
        evals += eval_s
    rate = total_pflop / total_train_h if total_train_h > 0 else None
    per_pflop = gpu_hour_cost / rate if rate and gpu_hour_cost is not None else None
    eval_mean = sum(evals) / len(evals) if evals else None
    return CostCalibration(experiment=experiment, unit=unit, gpu_hour_cost=gpu_hour_cost, rungs=rungs,
                           per_pflop=_r(per_pflop), eval_gpu_s_per_run=_r(eval_mean),
                           advice=_advice(rungs, per_pflop, eval_mean, gpu_hour_cost, unit))


def _r(x: float | None) -> float | None:
    return None if x is None else float(f"{x:.6g}")


def _advice(rungs: list[RungCalibration], per_pflop: float | None, eval_mean: float | None,
            gpu_hour_cost: float | None, unit: str) -> str:
    if not rungs:
        return "no done runs with measured FLOPs yet: launch three pilot runs per rung first"
    if per_pflop is None:
        if all(r.gpu_hours == 0 for r in rungs):
            return "no GPU time recorded (CPU rungs, or jobs from before GPU time was recorded): nothing to calibrate"
        return "no price per GPU-hour: pass --gpu-hour-usd or set [cost] gpu_hour_usd"
    return (f"set [cost] per_pflop = {per_pflop:.6g} ({unit} per 1e15 training FLOPs at {gpu_hour_cost:g} {unit} "
            f"per GPU-hour) and eval_gpu_s_per_run = {eval_mean or 0:.0f}")
