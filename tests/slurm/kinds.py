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

    Resumes from the checkpoint after a requeue; reports how many steps each start did. Honours stop
    requests (the job's SIGUSR2/SIGTERM handlers) after each saved step, as a job kind should.
    """
    from slurm.preemption import check_stop

    target = int(os.environ.get("TOOLSCALE_TEST_STEPS", "40"))
    state = dict(checkpoint or {"step": 0, "starts": []})
    state["starts"] = [*state["starts"], state["step"]]
    save_checkpoint(workdir, state)
    while state["step"] < target:
        time.sleep(float(os.environ.get("TOOLSCALE_TEST_STEP_S", "1")))
        state["step"] += 1
        save_checkpoint(workdir, state)
        check_stop(f"step {state['step'] + 1}")
    out = succeed(run, workdir, checkpoint)
    out["extra"] = {"starts": state["starts"], "steps": state["step"]}
    return out


def crash(run, workdir: Path, checkpoint):
    """Dies without a word to the runner (as an out-of-memory kill would): no result file."""
    import sys

    print(f"crashing hard in {run.run_id}", file=sys.stderr, flush=True)
    os._exit(3)


TINY_DATA = Path(__file__).resolve().parents[1] / "train" / "fixtures" / "tiny"


def sft_tiny(run, workdir: Path, checkpoint):
    """A real SFT run (TRL) of a tiny model on the hand-written rows, into ``workdir/model``.

    Env: ``TOOLSCALE_TEST_SFT_STEPS`` steps (default 12); ``TOOLSCALE_TEST_STEP_S`` seconds slept after each
    step (default 0, so a test can signal mid-training); ``TOOLSCALE_TEST_SIGNAL_AT`` a step at which the job
    sends itself ``TOOLSCALE_TEST_SIGNAL`` (default TERM). Every start appends the step it resumed from to
    ``workdir/starts.log``.
    """
    import signal as _signal

    import torch

    from toolscale.config import ModelSize
    from train.checkpoint import last_checkpoint
    from train.sft import train_sft

    torch.set_num_threads(1)
    steps = int(os.environ.get("TOOLSCALE_TEST_SFT_STEPS", "12"))
    pause = float(os.environ.get("TOOLSCALE_TEST_STEP_S", "0"))
    at = int(os.environ.get("TOOLSCALE_TEST_SIGNAL_AT", "0"))
    sig = getattr(_signal, "SIG" + os.environ.get("TOOLSCALE_TEST_SIGNAL", "TERM"))
    out = Path(workdir) / "model"
    ckpt = last_checkpoint(out)
    with open(Path(workdir) / "starts.log", "a") as f:
        f.write(f"{ckpt.name if ckpt else 'fresh'} job {os.environ.get('SLURM_JOB_ID')}\n")

    def on_step(step, total, loss):
        (Path(workdir) / "step").write_text(str(step))
        if pause:
            time.sleep(pause)
        if at and step == at and ckpt is None:
            os.kill(os.getpid(), sig)

    size = ModelSize(name="t", hidden_size=32, num_layers=1, num_heads=2, vocab_size=400, max_steps=steps,
                     batch_size=4, learning_rate=3e-3, max_seq_len=512)
    from slurm.preemption import stop_requested

    stats = train_sft(TINY_DATA, size, out, seed=1, save_steps=0, on_step=on_step, keep_checkpoints=False,
                      checkpoint_every_s=None, should_stop=stop_requested)
    return {"train": stats, "metrics": [], "dataset_id": "tiny", "extra": {"steps": stats.steps}}


def oom(run, workdir: Path, checkpoint):
    """Fails as a GPU out of memory does (deterministic: a retry would fail the same way)."""
    raise RuntimeError("CUDA out of memory. Tried to allocate 74.00 GiB (GPU 0; 79.11 GiB total capacity)")
