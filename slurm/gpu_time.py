"""GPU time per run: each job attempt's GPUs x wall time, from the job itself and from ``sacct``.

A run's training ``wall_s`` is restored from its last checkpoint, so work lost to preemption, evaluation
and dataset time are not in it. Cost needs the GPU time a run held:

* every attempt of a job (first start, requeues) appends one line to ``workdir/attempts.jsonl`` when it ends
  (:func:`record_attempt`): GPUs held x seconds since the attempt started (``SLURM_JOB_START_TIME``);
* ``sacct --duplicates`` lists every attempt the scheduler ran, killed ones included; :func:`sacct_gpu_seconds`
  sums ``ElapsedRaw x gres/gpu`` per job (what ``toolscale calibrate-cost`` uses).
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["ATTEMPTS_FILE", "gpus_here", "attempt_start", "record_attempt", "read_attempts", "parse_sacct_gpu",
           "sacct_gpu_seconds"]

ATTEMPTS_FILE = "attempts.jsonl"
"""One JSON line per job attempt in a run's working folder."""

_GPU_TRES = re.compile(r"gres/gpu(?::[^=,]+)?=(\d+)")


def gpus_here() -> int:
    """GPUs this job holds: ``SLURM_GPUS_ON_NODE`` x nodes, else the visible CUDA devices, else 0."""
    on_node = os.environ.get("SLURM_GPUS_ON_NODE")
    nodes = int(os.environ.get("SLURM_JOB_NUM_NODES", "1") or 1)
    if on_node and on_node.isdigit():
        return int(on_node) * nodes
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    return len([d for d in visible.split(",") if d.strip()]) if visible else 0


def attempt_start() -> float:
    """When this attempt started (seconds since the epoch): ``SLURM_JOB_START_TIME``, else now."""
    raw = os.environ.get("SLURM_JOB_START_TIME", "")
    return float(raw) if raw.isdigit() else time.time()


def record_attempt(workdir: str | Path, *, started: float, outcome: str, job_id: str | None) -> dict[str, Any]:
    """Append this attempt to ``workdir/attempts.jsonl``; returns the record (seconds, GPUs, GPU-seconds)."""
    ended = time.time()
    gpus = gpus_here()
    record = {"job": job_id, "host": socket.gethostname(), "started": round(started, 3), "ended": round(ended, 3),
              "elapsed_s": round(max(0.0, ended - started), 3), "gpus": gpus,
              "gpu_s": round(gpus * max(0.0, ended - started), 3), "outcome": outcome}
    path = Path(workdir) / ATTEMPTS_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as f:  # one short line per attempt: appends do not interleave
        f.write(json.dumps(record) + "\n")
    return record


def read_attempts(workdir: str | Path) -> list[dict[str, Any]]:
    """Every attempt recorded in ``workdir`` (unreadable lines skipped)."""
    out = []
    try:
        lines = (Path(workdir) / ATTEMPTS_FILE).read_text(encoding="utf-8").splitlines()
    except OSError:
        return out
    for line in lines:
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def parse_sacct_gpu(text: str) -> dict[str, float]:
    """``job id -> GPU-seconds`` from ``sacct -X --duplicates -o JobID,ElapsedRaw,AllocTRES --parsable2``.

    Every record of a job id (each requeued attempt is one) adds ``ElapsedRaw x gres/gpu``.

    Examples
    --------
    >>> parse_sacct_gpu("JobID|ElapsedRaw|AllocTRES\\n7_1|100|cpu=8,gres/gpu=4,mem=64G\\n7_1|20|cpu=8,gres/gpu:h100=4\\n")
    {'7_1': 480.0}
    """
    out: dict[str, float] = {}
    for line in text.splitlines()[1:]:
        parts = line.split("|")
        if len(parts) < 3 or not parts[1].strip().isdigit():
            continue
        m = _GPU_TRES.search(parts[2])
        gpus = int(m.group(1)) if m else 0
        out[parts[0]] = out.get(parts[0], 0.0) + float(parts[1]) * gpus
    return out


def sacct_gpu_seconds(job_ids: Iterable[str]) -> dict[str, float]:
    """GPU-seconds per job over all its attempts, from ``sacct`` (empty when sacct is missing or fails)."""
    ids = sorted({j for j in job_ids if j})
    if not ids:
        return {}
    cmd = ["sacct", "-X", "--duplicates", "--parsable2", "-o", "JobID,ElapsedRaw,AllocTRES", "-j", ",".join(ids)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return {}
    return parse_sacct_gpu(proc.stdout) if proc.returncode == 0 else {}
