"""Stop requests: save a checkpoint at the next optimizer step and stop, and wall-clock checkpoints.

A cluster job is warned before it is killed: SLURM sends ``SIGUSR2`` ``signal_delay_s`` seconds before the time
limit, and ``SIGTERM`` (then ``SIGKILL`` after the site's grace time) at preemption or ``scontrol requeue``. The
job's signal handlers (``slurm.job``) call :func:`request_stop`; :func:`interrupt_callback`, a
``TrainerCallback``, sees it at the end of the current optimizer step, makes the Trainer save a complete
checkpoint and stop, and the training function then raises :class:`Interrupted`. The requeued job resumes from
that checkpoint, so at most one step of work is lost.

The same callback also saves every ``every_s`` seconds of wall time, so a job killed without warning
(a node failure) loses at most that much. Under torch distributed both decisions are OR-ed over every rank
(:func:`train.distributed.broadcast_flags`), so all ranks save together.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from train.errors import TrainError

__all__ = ["request_stop", "stop_requested", "clear_stop", "interrupt_callback", "Interrupted", "check_stop"]

_STOP = threading.Event()
_REASON: dict[str, str | None] = {"why": None}


class Interrupted(TrainError):
    """Training stopped early on a stop request, after saving a checkpoint; the run resumes from it."""


def request_stop(why: str = "stop requested") -> None:
    """Ask the running training (or the next stage boundary) to save and stop; safe in a signal handler."""
    _REASON["why"] = why
    _STOP.set()


def stop_requested() -> str | None:
    """Why a stop was requested, or None."""
    return _REASON["why"] if _STOP.is_set() else None


def clear_stop() -> None:
    """Forget a stop request (a new job attempt, or a test)."""
    _STOP.clear()
    _REASON["why"] = None


def check_stop(where: str) -> None:
    """Raise :class:`Interrupted` at a stage boundary (``where``) when a stop was requested."""
    why = stop_requested()
    if why is not None:
        raise Interrupted(f"{why}: stopped before {where}")


def interrupt_callback(every_s: float | None = None):
    """A ``TrainerCallback`` that saves and stops on :func:`request_stop`, and saves every ``every_s`` seconds.

    Its ``stopped_at`` is the step at which it stopped training (None when it did not)."""
    from transformers import TrainerCallback

    from train.distributed import broadcast_flags

    class InterruptCallback(TrainerCallback):
        def __init__(self) -> None:
            self.every_s = every_s
            self.last_save = time.monotonic()
            self.stopped_at: int | None = None
            self.saves_on_time = 0

        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.last_save = time.monotonic()

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            due = self.every_s is not None and time.monotonic() - self.last_save >= self.every_s
            stop, due = broadcast_flags([_STOP.is_set(), due])
            if stop:
                control.should_save = True
                control.should_training_stop = True
                self.stopped_at = int(state.global_step)
            elif due:
                control.should_save = True
                self.saves_on_time += 1

        def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.last_save = time.monotonic()

    return InterruptCallback()
