"""Stop requests: save a checkpoint at the next optimizer step and stop; and wall-clock checkpoints.

A cluster job is warned before it is killed: SLURM sends ``SIGUSR2`` ``signal_delay_s`` seconds before the time
limit, and ``SIGTERM`` (then ``SIGKILL`` after the site's grace time) at preemption or ``scontrol requeue``. The
job's signal handlers (``slurm.preemption``) record a stop request; training is handed a ``should_stop``
callable that reports it, and :func:`interrupt_callback`, a ``TrainerCallback``, asks it at the end of every
optimizer step. On a request it makes the Trainer save a complete checkpoint and stop, and the training
function then raises :class:`Interrupted`. The requeued job resumes from that checkpoint, so at most one step
of work is lost.

The same callback also saves every ``every_s`` seconds of wall time, so a job killed without warning
(a node failure) loses at most that much. Under torch distributed both decisions are OR-ed over every rank
(:func:`train.distributed.broadcast_flags`), so all ranks save together.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from train.errors import TrainError

__all__ = ["interrupt_callback", "Interrupted", "StopCheck"]

StopCheck = Callable[[], "str | None"]
"""``should_stop() -> reason or None``: whether the job was asked to stop (a signal), and why."""


class Interrupted(TrainError):
    """Training stopped early on a stop request, after saving a checkpoint; the run resumes from it."""


def interrupt_callback(every_s: float | None = None, should_stop: StopCheck | None = None):
    """A ``TrainerCallback`` that saves and stops when ``should_stop()`` gives a reason, and saves every
    ``every_s`` seconds. Its ``stopped_at`` is the step at which it stopped training (None when it did not),
    ``reason`` the stop's reason."""
    from transformers import TrainerCallback

    from train.distributed import broadcast_flags

    class InterruptCallback(TrainerCallback):
        def __init__(self) -> None:
            self.every_s = every_s
            self.last_save = time.monotonic()
            self.stopped_at: int | None = None
            self.reason: str | None = None
            self.saves_on_time = 0

        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.last_save = time.monotonic()

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            why = should_stop() if should_stop is not None else None
            due = self.every_s is not None and time.monotonic() - self.last_save >= self.every_s
            stop, due = broadcast_flags([why is not None, due])
            if stop:
                control.should_save = True
                control.should_training_stop = True
                self.stopped_at = int(state.global_step)
                self.reason = why or "another rank was asked to stop"
            elif due:
                control.should_save = True
                self.saves_on_time += 1

        def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.last_save = time.monotonic()

    return InterruptCallback()
