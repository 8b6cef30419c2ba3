"""Trainer callbacks of an SFT run: stop on a diverged loss, keep the model at chosen steps."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from train.errors import TrainError

__all__ = ["DivergedError", "divergence_callback", "snapshot_callback"]


class DivergedError(TrainError):
    """The training loss became NaN or infinite; the message holds the step and the log's last losses."""


def divergence_callback(tail: int = 5):
    """A ``TrainerCallback`` that stops a run whose logged loss is not finite, raising :class:`DivergedError`
    with the step and the last ``tail`` logged losses (the log tail a failed learning-rate scan run keeps)."""
    from transformers import TrainerCallback

    class DivergenceCallback(TrainerCallback):
        def __init__(self):
            self.losses: list[tuple[int, float]] = []

        def on_log(self, args, state, control, logs=None, **kwargs):
            if not logs or "loss" not in logs:
                return
            loss = float(logs["loss"])
            self.losses.append((int(state.global_step), loss))
            if not math.isfinite(loss):
                shown = ", ".join(f"step {st}: {lo:.4g}" for st, lo in self.losses[-tail:])
                raise DivergedError(f"training loss diverged ({loss}) at step {state.global_step} of "
                                    f"{state.max_steps}; last logged losses: {shown}")

    return DivergenceCallback()


def snapshot_callback(out_dir: Path, steps: list[int], tokenizer: Any):
    """A ``TrainerCallback`` that keeps the model (and tokenizer) at each of ``steps`` but the last under
    ``out_dir/snapshots/step-<s>`` with ``snapshot.json`` (step, tokens seen); ``seen`` records every step's
    tokens, the last included (the final model is ``out_dir`` itself). Rank 0 alone writes."""
    from transformers import TrainerCallback

    from train.checkpoint import snapshot_dir
    from train.distributed import is_main

    class SnapshotCallback(TrainerCallback):
        def __init__(self):
            self.seen: dict[int, float] = {}

        def on_step_end(self, args, state, control, model=None, **kwargs):
            step = int(state.global_step)
            if step not in steps:
                return
            self.seen[step] = float(state.num_input_tokens_seen)
            if step == steps[-1] or model is None or not is_main():
                return
            folder = snapshot_dir(out_dir, step)
            model.save_pretrained(folder)
            tokenizer.save_pretrained(folder)
            (folder / "snapshot.json").write_text(json.dumps({"step": step, "tokens": self.seen[step]}, indent=1),
                                                  encoding="utf-8")

    return SnapshotCallback()
