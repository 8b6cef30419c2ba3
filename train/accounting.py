"""Accounting of a training run: parameters, tokens, FLOPs, wall time, loss curve.

FLOPs follow the standard approximation ``C = 6 N D``, :func:`toolscale.config.training_flops` (Kaplan
et al. 2020, eq. 2.1; Hoffmann et al. 2022, "Chinchilla", section 3): each parameter costs 2 FLOPs per token forward and 4
backward. N counts every parameter, embeddings included (the Chinchilla convention; the
non-embedding count is reported beside it); D counts the non-padding tokens the model was fed
(prompt and tool tokens included: they are computed on even where they carry no loss).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

__all__ = ["loss_curve", "accounting_callback", "ACCOUNTING_FILE", "read_accounting"]

ACCOUNTING_FILE = "toolscale_accounting.json"
"""Written into each checkpoint folder: wall time spent up to that checkpoint."""


def loss_curve(log_history: list[dict[str, Any]]) -> list[dict[str, float]]:
    """``[{"step", "loss", "tokens"}]`` from a Trainer's ``state.log_history`` (training logs only)."""
    curve = []
    for entry in log_history:
        if "loss" in entry and "step" in entry:
            point = {"step": int(entry["step"]), "loss": float(entry["loss"])}
            if "num_input_tokens_seen" in entry:
                point["tokens"] = int(entry["num_input_tokens_seen"])
            curve.append(point)
    return curve


def read_accounting(checkpoint: str | Path | None) -> dict[str, Any]:
    """The accounting saved in a checkpoint folder (``{}`` when none)."""
    if checkpoint is None:
        return {}
    path = Path(checkpoint) / ACCOUNTING_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def accounting_callback(wall_s_before: float = 0.0, on_step=None):
    """A ``TrainerCallback`` that keeps wall time across preemptions and reports progress.

    Parameters
    ----------
    wall_s_before
        Seconds spent in earlier sessions (from :func:`read_accounting` of the checkpoint).
    on_step
        Optional ``on_step(step, max_steps, loss)`` called after each optimizer step
        (``loss`` is the last logged loss or None); the CLI draws its progress bar with it.

    The callback's ``wall_s`` is the training wall time in seconds, all sessions together; each
    checkpoint gets an :data:`ACCOUNTING_FILE` with the wall time and tokens up to it.
    """
    from transformers import TrainerCallback

    class AccountingCallback(TrainerCallback):
        def __init__(self):
            self.wall_s_before = float(wall_s_before)
            self.on_step = on_step
            self.started = time.perf_counter()
            self.last_loss: float | None = None

        @property
        def wall_s(self) -> float:
            return self.wall_s_before + time.perf_counter() - self.started

        def on_train_begin(self, args, state, control, **kwargs):
            self.started = time.perf_counter()

        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "loss" in logs:
                self.last_loss = float(logs["loss"])

        def on_step_end(self, args, state, control, **kwargs):
            if self.on_step is not None:
                self.on_step(state.global_step, state.max_steps, self.last_loss)

        def on_save(self, args, state, control, **kwargs):
            folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            if folder.is_dir():
                payload = {"wall_s": self.wall_s, "step": state.global_step,
                           "tokens": state.num_input_tokens_seen}
                (folder / ACCOUNTING_FILE).write_text(json.dumps(payload), encoding="utf-8")

    return AccountingCallback()
