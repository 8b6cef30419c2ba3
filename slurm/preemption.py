"""Signals in a job: save at the signal, then requeue (USR2) or stop (SIGTERM); failure classes for retries.

SLURM warns a job in two ways, and submitit by itself handles neither well for training:

* ``SIGUSR2``, ``signal_delay_s`` seconds before the time limit (``--signal=USR2@N``). submitit's handler
  requeues *at once* and exits, so the training since the last checkpoint is lost.
* ``SIGTERM`` at preemption, ``scontrol requeue`` and ``scancel`` (then ``SIGKILL`` after the site's
  ``GraceTime``/``KillWait``). submitit ignores it ("bypass"), so the job is killed without a save.

:class:`StopHandlers` replaces both handlers while a job kind runs: a signal only *requests* a stop
(:func:`request_stop`). A job kind asks :func:`stop_requested` at safe points (training after every optimizer
step, through the ``should_stop`` it is handed; :func:`check_stop` between stages), saves, and raises; the
runner then finishes the signal's job: for ``SIGUSR2`` it calls
submitit's own handler (checkpoint the callable, ``scontrol requeue``, exit), for ``SIGTERM`` it exits without a
result (SLURM requeues a preempted or requeued job itself; a cancelled one stays cancelled). If nothing saves
within ``grace_s`` (a stage that never checks), submitit's handler runs anyway.

:func:`classify` sorts failures for ``sync``'s retries: out-of-memory and config errors are deterministic and
are not retried; the rest are.
"""

from __future__ import annotations

import os
import re
import signal
import threading
from typing import Any

from slurm.errors import LaunchError

__all__ = ["StopHandlers", "classify", "cancel_replaced", "NOT_RETRIED", "FAILURE_CLASSES", "request_stop",
           "stop_requested", "clear_stop", "check_stop", "Stopped"]

_STOP = threading.Event()
_REASON: dict[str, str | None] = {"why": None}


class Stopped(LaunchError):
    """A job kind stopped at a safe point because the job was asked to (:func:`check_stop`)."""


def request_stop(why: str = "stop requested") -> None:
    """Ask the running job kind to save and stop at its next safe point; safe in a signal handler."""
    _REASON["why"] = why
    _STOP.set()


def stop_requested() -> str | None:
    """Why a stop was requested, or None: the ``should_stop`` a job kind hands to training."""
    return _REASON["why"] if _STOP.is_set() else None


def clear_stop() -> None:
    """Forget a stop request (a new job attempt, or a test)."""
    _STOP.clear()
    _REASON["why"] = None


def check_stop(where: str) -> None:
    """Raise :class:`Stopped` at a safe point (before ``where``) when a stop was requested."""
    why = stop_requested()
    if why is not None:
        raise Stopped(f"{why}: stopped before {where}")

FAILURE_CLASSES = ("oom", "config", "duplicate", "preempted", "timeout", "node", "error")
"""Failure classes :func:`classify` returns."""
NOT_RETRIED = frozenset({"oom", "config", "duplicate"})
"""Classes a retry would only repeat: the run stays failed until the config changes (``launch --resume``)."""

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("oom", re.compile(r"OutOfMemoryError|CUDA out of memory|OUT_OF_MEMORY|\bMemoryError\b|oom-kill",
                       re.IGNORECASE)),
    ("duplicate", re.compile(r"\bLockHeld\b|is held by job")),
    ("config", re.compile(r"\b(UsageError|ConfigError|TrainDataError|TemplateError|SubmitError|"
                          r"UnknownJobKindError)\b")),
    ("preempted", re.compile(r"\bPREEMPTED\b")),
    ("timeout", re.compile(r"\bTIMEOUT\b|timed out")),
    ("node", re.compile(r"\b(NODE_FAIL|BOOT_FAIL)\b")),
)


def classify(error: str | None) -> str:
    """The failure class of a run's error text (a traceback tail, or the scheduler's state line).

    Examples
    --------
    >>> classify("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 74.00 GiB")
    'oom'
    >>> classify("toolscale.errors.UsageError: batch_size 30 is not divisible by the 4 training processes")
    'config'
    >>> classify("RuntimeError: NCCL timeout")
    'error'
    """
    text = error or ""
    for name, pattern in _PATTERNS:
        if pattern.search(text):
            return name
    return "error"


class StopHandlers:
    """SIGUSR2 and SIGTERM request a stop while installed (a context manager; main thread only).

    Parameters
    ----------
    grace_s : seconds after a SIGUSR2 within which the job must have saved; then submitit's handler
        (checkpoint and requeue) runs anyway.
    """

    def __init__(self, grace_s: float = 240.0) -> None:
        self.grace_s = float(grace_s)
        self.received: int | None = None
        self._previous: dict[int, Any] = {}
        self._timer: threading.Timer | None = None
        self._expired = False
        self.active = False

    def __enter__(self) -> "StopHandlers":
        clear_stop()
        if threading.current_thread() is not threading.main_thread():
            return self  # the debug executor runs jobs in a worker thread: no signals to take over
        for sig in (signal.SIGUSR2, signal.SIGTERM):
            self._previous[sig] = signal.getsignal(sig)
            signal.signal(sig, self._on_signal)
        self.active = True
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._timer is not None:
            self._timer.cancel()
        for sig, handler in self._previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
        self.active = False

    def _on_signal(self, signum: int, frame: Any) -> None:
        if self._expired and signum == signal.SIGUSR2:  # re-sent by _fallback: submitit's turn
            previous = self._previous.get(signal.SIGUSR2)
            if callable(previous):
                previous(signum, frame)
            return
        name = signal.Signals(signum).name
        first = self.received is None
        self.received = signum if first or signum == signal.SIGUSR2 else self.received
        request_stop(f"{name} received (" + ("time limit near" if signum == signal.SIGUSR2 else
                                              "preempted, requeued or cancelled") + ")")
        if first and signum == signal.SIGUSR2 and self.grace_s > 0:
            self._timer = threading.Timer(self.grace_s, self._fallback)
            self._timer.daemon = True
            self._timer.start()

    def _fallback(self) -> None:
        """Nothing saved in time: send SIGUSR2 again, which the handler (main thread) now passes to submitit's."""
        self._expired = True
        os.kill(os.getpid(), signal.SIGUSR2)

    def finish(self) -> None:
        """After the job kind stopped on a request: requeue through submitit (SIGUSR2), or exit (SIGTERM).

        Returns only when no signal was received (a stop requested some other way)."""
        if self._timer is not None:
            self._timer.cancel()
        if self.received == signal.SIGUSR2:
            previous = self._previous.get(signal.SIGUSR2)
            if callable(previous):
                previous(signal.SIGUSR2, None)  # submitit: checkpoint(), scontrol requeue, sys.exit
            raise SystemExit(-1)
        if self.received == signal.SIGTERM:
            raise SystemExit(128 + signal.SIGTERM)


def cancel_replaced(job_ids: list[str]) -> list[str]:
    """``scancel`` the SLURM jobs that retries replace (finished ones are a no-op); the problems, one line each."""
    import subprocess

    if not job_ids:
        return []
    try:
        proc = subprocess.run(["scancel", *job_ids], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as err:
        return [f"scancel of replaced jobs failed: {err}"]
    return [line for line in proc.stderr.splitlines()
            if line.strip() and "already completing or completed" not in line and "Invalid job id" not in line]
