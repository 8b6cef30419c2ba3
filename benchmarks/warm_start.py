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

    .venv/bin/python benchmarks/warm_start.py [--runs 2] [--steps 4] [--json] [--keep DIR]
    PYTHONPATH=OLD_CHECKOUT .venv/bin/python benchmarks/warm_start.py --code OLD_CHECKOUT --executors cold

The second form measures before: the jobs (and the set-up run) import an older checkout's packages.
CPU seconds (``time.process_time`` in the job process, from its start or fork) are printed beside wall
seconds: on a shared machine they move much less with the load.
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


def _code_root(argv: list[str]) -> Path:
    """``--code DIR`` (the checkout whose packages the jobs import: an older one measures "before"), else this one."""
    if "--code" in argv:
        return Path(argv[argv.index("--code") + 1]).resolve()
    return ROOT


if __name__ == "__main__":
    CODE = _code_root(sys.argv)
    sys.path.insert(0, str(CODE))
    os.environ["PYTHONPATH"] = os.pathsep.join([str(CODE), *filter(None, [os.environ.get("PYTHONPATH")])])

KIND = "bench-first-step"
STAMPS = "stamps.json"
RECIPE = {"tool_diversity": 12.0, "task_count": 1024.0, "repair_rate": 0.5}


def stamped_pipeline(run, workdir: Path, checkpoint):
    """The ``pipeline`` job kind, with time stamps (seconds since the epoch) written to ``workdir/stamps.json``."""
    entry, entry_cpu = time.time(), time.process_time()
    import train.sft as sft
    from pipeline.job import run_pipeline

    stamps: dict[str, float] = {"entry": entry, "entry_cpu": entry_cpu}
    real = sft.train_sft

    def on_step(step: int, max_steps: int, loss: float | None) -> None:
        if "first_step" not in stamps:
            stamps.update(first_step=time.time(), first_step_cpu=time.process_time())

    def train_sft(*args: Any, **kwargs: Any):
        out = real(*args, on_step=on_step, **kwargs)
        stamps["trained"] = time.time()
        return out

    sft.train_sft = train_sft
    try:
        result = run_pipeline(run, workdir, checkpoint)
    finally:
        sft.train_sft = real
    stamps.update(end=time.time(), end_cpu=time.process_time())
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
            "job_s": time.time() - t0, "cpu_to_first_step_s": stamps["first_step_cpu"],
            "cpu_job_s": stamps["end_cpu"]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=2, help="timed runs per executor")
    ap.add_argument("--steps", type=int, default=4, help="optimizer steps per run")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--keep", help="scratch folder to use and keep (default: a temporary one)")
    ap.add_argument("--executors", default="cold,warm", help="comma-separated: cold, warm (default both)")
    ap.add_argument("--code", help="checkout whose packages the jobs import (default this one; an older "
                                   "checkout with --executors cold measures before)")
    args = ap.parse_args(argv)
    executors = [e for e in args.executors.split(",") if e]
    folder = Path(args.keep or tempfile.mkdtemp(prefix="warm-start-"))
    folder.mkdir(parents=True, exist_ok=True)
    cfg, context = _setup(folder, args.steps)
    if not (folder / "runs" / "results" / "setup.result.json").is_file():
        print(f"setup: building the shared tokenizer and the dataset in {folder} (untimed)", file=sys.stderr)
        _one("cold", "setup", folder, context, args.steps)
    server_s = None
    if "warm" in executors:
        from slurm.warm import PRELOAD, pool_for

        PRELOAD[KIND] = PRELOAD["pipeline"]
        t0 = time.perf_counter()
        pool_for(KIND)  # the server's own start-up (imports, benchmark items), once per launcher; kept for the runs
        server_s = round(time.perf_counter() - t0, 2)
    tag = time.strftime("%H%M%S")
    records = [{"executor": ex, "run": i, **{k: round(v, 3) for k, v in
                                             _one(ex, f"{ex}-{tag}-{i}", folder, context, args.steps).items()}}
               for ex in executors for i in range(args.runs)]
    if "warm" in executors:
        from slurm.warm import close_pools

        close_pools()
    summary = {ex: {k: round(statistics.median(r[k] for r in records if r["executor"] == ex), 2)
                    for k in records[0] if k.endswith("_s")} for ex in executors}
    load = os.getloadavg()
    out = {"records": records, "median": summary, "fork_server_start_s": server_s, "code": str(CODE),
           "load_average": [round(x, 2) for x in load], "steps": args.steps, "rung": "d-xs",
           "benchmarks": cfg.eval.benchmarks}
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    _print(out, args)
    return 0


def _print(out: dict[str, Any], args: argparse.Namespace) -> None:
    print(f"fixed cost of a small run (d-xs, {args.steps} steps, {', '.join(out['benchmarks'])}), medians of "
          f"{args.runs} runs, code {out['code']}, load average {out['load_average'][0]:.1f}; wall seconds "
          f"(CPU seconds of the job process):")
    print(f"{'executor':<8} {'to first step':>18} {'to job entry':>13} {'set-up':>8} {'train':>7} {'eval':>7} "
          f"{'job':>16}")
    for ex, m in out["median"].items():
        print(f"{ex:<8} {m['to_first_step_s']:>7.2f} ({m['cpu_to_first_step_s']:>6.2f} cpu) {m['to_entry_s']:>12.2f} "
              f"{m['setup_s']:>8.2f} {m['train_s']:>7.2f} {m['eval_s']:>7.2f} {m['job_s']:>6.2f} "
              f"({m['cpu_job_s']:>6.2f} cpu)")
    if out["fork_server_start_s"] is not None:
        print(f"warm fork server start-up (once per launcher): {out['fork_server_start_s']:.2f} s")
    print("target (issue 36): <= 2 s from submission to the first training step, warm")


if __name__ == "__main__":
    raise SystemExit(main())
