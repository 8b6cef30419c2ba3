"""Fixed cost of a small run, from submission to its first training step: the warm local executor against
a fresh interpreter per run (issue 36, target <= 2 s warm).

Setup (not timed): the ``demo`` preset in a scratch folder, with its shared tokenizer and one dataset built
by an untimed run. Then ``--runs`` runs of the smallest rung (``d-xs``, ``--steps`` optimizer steps, each a
new run id, so each trains from scratch on the already built dataset, as most of a design's runs do) go
through each executor in turn, one at a time:

* ``cold``: submitit's local executor, what ``launch --executor local`` used before: a controller and a
  task interpreter per run, each job importing torch, transformers and TRL itself;
* ``warm``: :mod:`slurm.warm`, a fork of one server that imported them before (its start-up, paid once per
  launcher, is reported on its own line).

Every job is the real ``pipeline`` job kind (dataset check, tokenizer, ``train_sft`` set-up, training,
scoring on the preset's benchmarks), wrapped to stamp times: job entry, end of the first optimizer step,
end of training, end of the job. Reported per executor (medians over the runs): submission -> first step
(the fixed cost), submission -> job entry (interpreter start or fork), entry -> first step (set-up),
then the train and eval stages and the whole job. Timings are wall seconds on whatever else runs on the
machine: the load average is printed beside them.

Usage::

    .venv/bin/python benchmarks/warm_start.py [--runs 3] [--steps 4] [--json] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

KIND = "bench-first-step"
STAMPS = "stamps.json"
RECIPE = {"tool_diversity": 12.0, "task_count": 1024.0, "repair_rate": 0.5}


def stamped_pipeline(run, workdir: Path, checkpoint):
    """The ``pipeline`` job kind, with time stamps (seconds since the epoch) written to ``workdir/stamps.json``."""
    entry = time.time()
    import train.sft as sft
    from slurm.pipeline import run_pipeline

    stamps: dict[str, float] = {"entry": entry}
    real = sft.train_sft

    def on_step(step: int, max_steps: int, loss: float | None) -> None:
        stamps.setdefault("first_step", time.time())

    def train_sft(*args: Any, **kwargs: Any):
        out = real(*args, on_step=on_step, **kwargs)
        stamps["trained"] = time.time()
        return out

    sft.train_sft = train_sft
    try:
        result = run_pipeline(run, workdir, checkpoint)
    finally:
        sft.train_sft = real
    stamps["end"] = time.time()
    (Path(workdir) / STAMPS).write_text(json.dumps(stamps), encoding="utf-8")
    return result


def _setup(folder: Path, steps: int):
    from toolscale.cli.demo import write_demo_config
    from toolscale.config import load_config

    cfg = load_config(write_demo_config(folder, "demo", "warm-start", 1))
    context = {"config": cfg.model_dump(mode="json"), "dataset_cache": str(folder / "runs" / "datasets"),
               "root": str(folder / "runs")}
    return cfg, context


def _runner(run_id: str, folder: Path, context: dict[str, Any], steps: int):
    from grid.models import RunSpec
    from slurm.job import JobRunner

    spec = RunSpec(run_id=run_id, experiment="warm-start", design_version="bench", recipe=RECIPE,
                   model_size="d-xs", seed=0, metadata={"max_steps": steps, "learning_rate": 0.02})
    return JobRunner(KIND, f"{Path(__file__).resolve()}:stamped_pipeline", spec.model_dump(mode="json"),
                     str(folder / "runs" / "work" / run_id), str(folder / "runs" / "results"), context)


def _wait_result(folder: Path, run_id: str, timeout_s: float = 900.0) -> dict[str, Any]:
    path = folder / "runs" / "results" / f"{run_id}.result.json"
    deadline = time.monotonic() + timeout_s
    while not path.is_file():
        if time.monotonic() > deadline:
            raise TimeoutError(f"no result for {run_id} after {timeout_s:g} s")
        time.sleep(0.05)
    time.sleep(0.05)
    result = json.loads(path.read_text(encoding="utf-8"))
    if result["status"] != "done":
        raise RuntimeError(f"{run_id} failed:\n{result.get('error')}")
    return result


def _submit_cold(runner, folder: Path) -> None:
    import submitit

    ex = submitit.AutoExecutor(folder=folder / "runs" / "submitit-cold", cluster="local")
    ex.update_parameters(timeout_min=30)
    ex.submit(runner)


def _submit_warm(runner, folder: Path) -> None:
    from slurm.warm import submit_warm

    jobs, error = submit_warm(KIND, [vars(runner)], log_dir=folder / "runs" / "warm-logs", timeout_min=30)
    if error:
        raise RuntimeError(error)


def _one(executor: str, run_id: str, folder: Path, context: dict[str, Any], steps: int) -> dict[str, float]:
    runner = _runner(run_id, folder, context, steps)
    t0 = time.time()
    (_submit_cold if executor == "cold" else _submit_warm)(runner, folder)
    result = _wait_result(folder, run_id)
    stamps = json.loads((folder / "runs" / "work" / run_id / STAMPS).read_text(encoding="utf-8"))
    stage = result["extra"]["stage_s"]
    return {"to_first_step_s": stamps["first_step"] - t0, "to_entry_s": stamps["entry"] - t0,
            "setup_s": stamps["first_step"] - stamps["entry"], "train_s": stage["train"], "eval_s": stage["eval"],
            "job_s": time.time() - t0}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="timed runs per executor")
    ap.add_argument("--steps", type=int, default=4, help="optimizer steps per run")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--keep", help="scratch folder to use and keep (default: a temporary one)")
    args = ap.parse_args(argv)
    from slurm.warm import PRELOAD, WarmPool, close_pools

    PRELOAD[KIND] = PRELOAD["pipeline"]
    folder = Path(args.keep or tempfile.mkdtemp(prefix="warm-start-"))
    folder.mkdir(parents=True, exist_ok=True)
    cfg, context = _setup(folder, args.steps)
    print(f"setup: building the shared tokenizer and the dataset in {folder} (untimed)", file=sys.stderr)
    _one("cold", "setup", folder, context, args.steps)
    records: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    WarmPool(PRELOAD["pipeline"]).close()  # the server's own start-up: imports, once per launcher process
    server_s = time.perf_counter() - t0
    for executor in ("cold", "warm"):
        for i in range(args.runs):
            rec = _one(executor, f"{executor}-{i}", folder, context, args.steps)
            records.append({"executor": executor, "run": i, **{k: round(v, 3) for k, v in rec.items()}})
            print(f"{executor} {i}: {records[-1]}", file=sys.stderr)
    close_pools()
    summary = {ex: {k: round(statistics.median(r[k] for r in records if r["executor"] == ex), 2)
                    for k in records[0] if k.endswith("_s")} for ex in ("cold", "warm")}
    load = os.getloadavg()
    out = {"records": records, "median": summary, "fork_server_start_s": round(server_s, 2),
           "load_average": [round(x, 2) for x in load], "steps": args.steps, "rung": "d-xs",
           "benchmarks": cfg.eval.benchmarks}
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    print(f"fixed cost of a small run (d-xs, {args.steps} steps, {', '.join(cfg.eval.benchmarks)}), medians of "
          f"{args.runs} runs, load average {load[0]:.1f}:")
    print(f"{'executor':<8} {'to first step':>14} {'to job entry':>13} {'set-up':>8} {'train':>7} {'eval':>7} {'job':>7}")
    for ex, m in summary.items():
        print(f"{ex:<8} {m['to_first_step_s']:>13.2f}s {m['to_entry_s']:>12.2f}s {m['setup_s']:>7.2f}s "
              f"{m['train_s']:>6.2f}s {m['eval_s']:>6.2f}s {m['job_s']:>6.2f}s")
    print(f"warm fork server start-up (once per launcher): {server_s:.2f} s; target: <= 2 s to first step, warm")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
