"""Small job kinds for the launcher tests (loaded by file path inside jobs, see slurm.jobs)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from slurm.job import save_checkpoint


def succeed(run, workdir: Path, checkpoint):
    """Finishes at once with one metric derived from the recipe."""
    return {"metrics": [{"benchmark": "toy", "metric": "score", "score": float(sum(run.recipe.values()))}],
            "train": {"params": 1000.0, "train_tokens": 2000.0, "train_flops": 6 * 1000.0 * 2000.0, "steps": 1},
            "dataset_id": "d-test", "extra": {"pid": os.getpid()}}


def boom(run, workdir: Path, checkpoint):
    """Always raises."""
    raise RuntimeError(f"boom in {run.run_id}")


def flaky(run, workdir: Path, checkpoint):
    """Raises on its first attempt (marker file in the workdir), succeeds on the next."""
    marker = Path(workdir) / "tried"
    if not marker.exists():
        marker.write_text("1")
        raise RuntimeError("first attempt fails")
    return succeed(run, workdir, checkpoint)


def sleeper(run, workdir: Path, checkpoint):
    """Sleeps SLEEP_S seconds (env, default 60), then finishes."""
    time.sleep(float(os.environ.get("TOOLSCALE_TEST_SLEEP_S", "60")))
    return succeed(run, workdir, checkpoint)


def counter(run, workdir: Path, checkpoint):
    """Counts to TOOLSCALE_TEST_STEPS (env, default 40) one step per second, checkpointing every step.

    Resumes from the checkpoint after a requeue; reports how many steps each start did.
    """
    target = int(os.environ.get("TOOLSCALE_TEST_STEPS", "40"))
    state = dict(checkpoint or {"step": 0, "starts": []})
    state["starts"] = [*state["starts"], state["step"]]
    save_checkpoint(workdir, state)
    while state["step"] < target:
        time.sleep(float(os.environ.get("TOOLSCALE_TEST_STEP_S", "1")))
        state["step"] += 1
        save_checkpoint(workdir, state)
    out = succeed(run, workdir, checkpoint)
    out["extra"] = {"starts": state["starts"], "steps": state["step"]}
    return out


def crash(run, workdir: Path, checkpoint):
    """Dies without a word to the runner (as an out-of-memory kill would): no result file."""
    import sys

    print(f"crashing hard in {run.run_id}", file=sys.stderr, flush=True)
    os._exit(3)


def crash_once(run, workdir: Path, checkpoint):
    """Dies without a result on its first attempt (marker file in the workdir), succeeds on the next."""
    import sys

    marker = Path(workdir) / "crashed"
    if not marker.exists():
        marker.write_text(str(os.getpid()))
        print(f"crashing once in {run.run_id}", file=sys.stderr, flush=True)
        os._exit(3)
    out = succeed(run, workdir, checkpoint)
    out["extra"] = {"pid": os.getpid(), "crashed_pid": int(marker.read_text())}
    return out


def taint(run, workdir: Path, checkpoint):
    """Leaves stray state behind in its process: a module attribute, an environment variable, 64 MB held."""
    import json
    import sys

    json.TOOLSCALE_TAINT = run.run_id
    os.environ["TOOLSCALE_TAINT"] = run.run_id
    sys.modules["toolscale_taint_ballast"] = bytearray(64 * 2**20)  # type: ignore[assignment]
    return succeed(run, workdir, checkpoint)


def inspect_state(run, workdir: Path, checkpoint):
    """Reports what its process holds at start: stray state of earlier jobs, preloaded modules, job env."""
    import json
    import sys

    out = succeed(run, workdir, checkpoint)
    out["extra"] = {"pid": os.getpid(), "json_taint": getattr(json, "TOOLSCALE_TAINT", None),
                    "env_taint": os.environ.get("TOOLSCALE_TAINT"),
                    "ballast": "toolscale_taint_ballast" in sys.modules,
                    "wave_preloaded": "wave" in sys.modules,
                    "submitit_job_id": os.environ.get("SUBMITIT_LOCAL_JOB_ID"),
                    "cuda_visible": os.environ.get("CUDA_VISIBLE_DEVICES"), "cwd": os.getcwd(),
                    "marker": os.environ.get("TOOLSCALE_TEST_MARKER")}
    return out


def pid_plus(a, b):
    """A plain function for warm.map_warm: ``[a + b, the pid that ran it]``."""
    return [a + b, os.getpid()]


def raise_value_error(message):
    raise ValueError(message)


def die_at_once(code):
    import sys

    print("dying without a result", file=sys.stderr, flush=True)
    os._exit(code)
