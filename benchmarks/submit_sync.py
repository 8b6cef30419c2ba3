"""Submitting a 300-run job array and syncing 300 result files (prints figures; asserts nothing).

Run:  .venv/bin/python benchmarks/submit_sync.py [--runs 300] [--json] [--quick]

Targets (issue 7): submitting a 300-run array under 10 s; syncing 300 result files under 2 s.
The submit figure needs the dev SLURM cluster (``slurm/dev-cluster.sh up``); without it that
figure is reported as skipped. Submitted jobs are cancelled right after the measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from grid.models import MetricResult, RunResult, RunSpec, TrainStats
from grid.registry import Registry
from grid.results import write_result
from slurm.jobs import register_job_kind
from slurm.launcher import launch
from slurm.models import LaunchManifest
from slurm.paths import LaunchPaths
from toolscale.files import atomic_write_json
from slurm.sync import sync
from toolscale.config import load_config

CONFIG = """\
[experiment]
name = "bench"
registry = "{root}/reg.duckdb"

[[axes]]
name = "tool_diversity"
kind = "diversity"
unit = "tools"
min = 1
max = 64

[[ladder]]
name = "s"
cpus = 1
mem_gb = 0.25
timeout_min = 5

[executor]
kind = "slurm"
max_parallel = 8
folder = "{root}/runs"
"""


def noop(run, workdir, checkpoint):
    """The benchmark's job kind: nothing to do."""
    return {}


def _setup(root: Path, n: int):
    (root / "exp.toml").write_text(CONFIG.format(root=root))
    cfg = load_config(root / "exp.toml")
    runs = [RunSpec(run_id=f"b-{i:04d}", experiment="bench", design_version="v", recipe={"tool_diversity": i % 64 + 1},
                    model_size="s", seed=i) for i in range(n)]
    with Registry(cfg.experiment.registry) as reg:
        reg.ensure_experiment("bench", axes=["tool_diversity"])
        reg.add_runs(runs)
    return cfg, runs


def _cluster_up() -> bool:
    conf = os.environ.get("SLURM_CONF") or os.path.join(os.environ.get("TOOLSCALE_SLURM_DIR", "/tmp/toolscale-slurm"),
                                                         "etc", "slurm.conf")
    if not Path(conf).exists():
        return False
    os.environ["SLURM_CONF"] = conf
    try:
        return subprocess.run(["scontrol", "ping"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def _wait_gone(job_ids: list[str], timeout_s: float) -> None:
    """Poll ``squeue`` until none of ``job_ids`` is listed (or ``timeout_s`` passes)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        out = subprocess.run(["squeue", "-h", "-o", "%i", "-j", ",".join(job_ids)], capture_output=True, text=True)
        if out.returncode != 0 or not out.stdout.strip():
            return
        time.sleep(1.0)


def bench_submit(n: int) -> tuple[float, float] | None:
    if not _cluster_up():
        return None
    register_job_kind("bench-noop", noop)
    # cancelled array tasks may still write their logs: wait for them to leave the queue, then
    # remove the folder without failing on a late file
    with tempfile.TemporaryDirectory(dir="/tmp", ignore_cleanup_errors=True) as tmp:
        cfg, _ = _setup(Path(tmp), n)
        t0 = time.perf_counter()
        rep = launch(cfg, cfg.experiment.registry, job_kind="bench-noop")
        wall = time.perf_counter() - t0
        arrays = sorted({j.split("_")[0] for j in rep.job_ids.values()})
        subprocess.run(["scancel", *arrays], capture_output=True)
        _wait_gone(arrays, timeout_s=60)
        assert len(rep.submitted) == n, rep
    return wall, rep.submit_s


def bench_sync(n: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        root = Path(tmp)
        cfg, runs = _setup(root, n)
        paths = LaunchPaths.of(cfg.executor.folder)
        jobs = {r.run_id: f"DEBUG_{i}" for i, r in enumerate(runs)}
        manifest = LaunchManifest(launch_id="bench", experiment="bench", executor="debug", job_kind="bench-noop",
                                  submitit_folder=str(paths.submitit_folder("bench")), created_at=datetime.now(UTC),
                                  jobs=jobs)
        atomic_write_json(paths.manifest("bench"), manifest.model_dump(mode="json"))
        with Registry(cfg.experiment.registry) as reg:
            reg.mark_submitted(jobs)
        for i, r in enumerate(runs):
            write_result(paths.results, RunResult(
                run_id=r.run_id, experiment="bench", status="done", job_id=jobs[r.run_id],
                finished_at=datetime.now(UTC),
                metrics=[MetricResult(benchmark="b", metric=m, score=0.1 * i) for m in ("score", "loss", "f1")],
                train=TrainStats(params=1e6, train_tokens=1e7, train_flops=6e13)))
        t0 = time.perf_counter()
        rep = sync(cfg.experiment.registry, config=cfg)
        first = time.perf_counter() - t0
        assert rep.ingested == n and rep.counts["done"] == n, rep
        t0 = time.perf_counter()
        again = sync(cfg.experiment.registry, config=cfg)
        second = time.perf_counter() - t0
        assert again.duplicate == n
    return first, second


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--json", action="store_true", help="also print the figures as JSON (last line)")
    ap.add_argument("--quick", action="store_true", help="same as the default (already quick)")
    args = ap.parse_args()
    n = args.runs
    records = []
    sub = bench_submit(n)
    if sub is None:
        print(f"submit {n}-run array: skipped (no dev SLURM cluster; slurm/dev-cluster.sh up)")
        records.append({"benchmark": "submit_sync", "figure": f"submit {n}-run array", "value": "skipped",
                        "unit": "s", "target": "< 10 s"})
    else:
        wall, submit_s = sub
        print(f"submit {n}-run array: {wall:.2f} s for the whole launch ({submit_s:.2f} s pickling + sbatch)")
        records += [{"benchmark": "submit_sync", "figure": f"launch {n}-run array (wall)", "value": round(wall, 3),
                     "unit": "s", "target": "< 10 s"},
                    {"benchmark": "submit_sync", "figure": "  of which pickling + sbatch", "value": round(submit_s, 3),
                     "unit": "s", "target": ""}]
    first, second = bench_sync(n)
    print(f"sync {n} result files: {first:.2f} s (ingest), {second:.2f} s (again, nothing new)")
    records += [{"benchmark": "submit_sync", "figure": f"sync {n} result files", "value": round(first, 3),
                 "unit": "s", "target": "< 2 s"},
                {"benchmark": "submit_sync", "figure": f"sync {n} again (idempotent)", "value": round(second, 3),
                 "unit": "s", "target": ""}]
    if args.json:
        print(json.dumps(records))


if __name__ == "__main__":
    main()
