"""Run generated tool code out of process, jailed, under limits.

Generated code never runs in the caller's process. :func:`run_calls` starts ONE fresh jail per batch of calls
(all golden calls of a sample go into one run). By default (``SandboxLimits.isolation == "namespaces"``) the
jail is bubblewrap's (:mod:`synth.envs.jail`): uid 65534, new PID, network, IPC and UTS namespaces, a
read-only root holding only the interpreter, an empty tmpfs work directory, a seccomp filter
(:mod:`synth.envs.seccomp`: no nested namespaces, mounts, keyrings, io_uring, ptrace, bpf or network sockets),
and a PID namespace that dies with the call. Where the jail cannot be set up, :func:`run_calls` raises
:class:`SandboxError` (fail closed); it never falls back to running the code unjailed.

Inside, a harness (:mod:`synth.envs.jail_runner`) that never runs tool code itself forks one process per
call, sets the kernel limits there (``RLIMIT_CPU``, ``RLIMIT_AS``, ``RLIMIT_FSIZE``, ``RLIMIT_NPROC``, no core
dumps), and reports each call as one frame. This module counts the frames, reads at most ``output_kb`` of
them, and kills the whole process group past ``wall_s``. The environment is stripped and the interpreter runs
as ``python -S -s -P -B`` (standard library only).

An audit hook (PEP 578) is kept as a *tripwire*: a network attempt, a file write outside the work directory,
a process spawn or a native-code load is written to the harness as a policy violation the moment it happens,
and fails the run even when the tool code catches the resulting error. In the jail it only records (the
kernel refuses, and a network socket kills the process); under ``insecure`` it also refuses what it sees.

A run that exceeds a limit, crashes or violates the policy has ``failed == True``: callers reject the sample.
Per-call exceptions (bad arguments, a ``KeyError`` in the tool) are *not* run failures: they come back as
``CallOutcome(ok=False)`` and are what an agent sees as an error observation.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from synth.envs.errors import SandboxError
from synth.envs.jail import INSTALL_HINT, JAIL_UID, WORK_DIR, bwrap_argv, require_jail
from synth.envs.models import CallOutcome, SandboxLimits, SandboxRun
from synth.envs.seccomp import filter_bytes

__all__ = ["run_calls", "RUNNER_SOURCE"]

RUNNER_SOURCE = (Path(__file__).parent / "jail_runner.py").read_text(encoding="utf-8")
"""The in-jail harness (:mod:`synth.envs.jail_runner`), run as ``python -c``."""
STDERR_CAP = 65536
"""Bytes of the jail's standard error kept (bubblewrap's own messages; the tail is what matters)."""


def _child_env(hash_seed: int) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PYTHONHASHSEED": str(hash_seed),
            "PYTHONIOENCODING": "utf-8", "PYTHONDONTWRITEBYTECODE": "1"}



def _command(limits: SandboxLimits, seccomp_fd: int | None) -> tuple[list[str], str | None]:
    """``(argv, cwd)`` of one sandbox child: jailed by bubblewrap, or (``insecure``) a plain child."""
    exe = os.path.realpath(sys.executable)
    py = [exe, "-S", "-s", "-P", "-B", "-c", RUNNER_SOURCE]
    if limits.isolation == "insecure":
        return [*py, "-1", "refuse"], None
    bwrap = require_jail()
    return [*bwrap_argv(limits, bwrap=bwrap, seccomp_fd=seccomp_fd), *py, str(JAIL_UID), "record"], WORK_DIR


def run_calls(tools: Mapping[str, str], calls: Sequence[Mapping[str, Any]], *,
              limits: SandboxLimits | None = None, hash_seed: int = 0) -> SandboxRun:
    """Run ``calls`` against tool ``sources`` in one fresh jail, each call in its own process.

    Parameters
    ----------
    tools : mapping
        Tool name -> Python source defining a function of that name (standard library only).
    calls : sequence of mappings
        ``{"name": str, "arguments": dict}`` in order; each runs in a fresh process forked from the harness
        (no state shared between calls or tools: other processes are killed and the work directory emptied
        after each call). The run stops at the first call that fails.
    limits : SandboxLimits, optional
        CPU seconds (per call), memory MiB (per call), wall seconds (the whole run, enforced here on the
        whole process group), output KiB (the whole run's report, read here), file KiB, processes, isolation.
    hash_seed : int
        ``PYTHONHASHSEED`` of the child: two runs with different seeds also expose set/dict-order dependence.

    Returns
    -------
    SandboxRun
        ``status`` ``ok`` with one :class:`CallOutcome` per call, or the failure (limit, crash, violation).

    Raises
    ------
    SandboxError
        When the jail cannot be set up (no bubblewrap, no seccomp filter, namespaces refused, privileges not
        dropped): no tool code has run.
    """
    limits = limits or SandboxLimits()
    payload = json.dumps({"limits": limits.model_dump(), "tools": dict(tools),
                          "calls": [{"name": str(c["name"]), "arguments": dict(c.get("arguments") or {})}
                                    for c in calls]}, ensure_ascii=False)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="toolscale-sbx-") as work, \
            tempfile.TemporaryFile(prefix="toolscale-sbx-in-") as stdin, \
            tempfile.TemporaryFile(prefix="toolscale-sbx-flt-") as flt:
        stdin.write(payload.encode("utf-8"))
        stdin.seek(0)
        fds: tuple[int, ...] = ()
        if limits.isolation != "insecure":
            flt.write(_filter())
            flt.seek(0)
            fds = (flt.fileno(),)
        argv, jail_cwd = _command(limits, fds[0] if fds else None)
        try:
            proc = subprocess.Popen(argv, cwd=work, env=_child_env(hash_seed), stdin=stdin, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, start_new_session=True, pass_fds=fds)
        except OSError as exc:
            raise SandboxError(f"cannot start the sandbox ({argv[0]}): {exc}") from exc
        out, err, cut = _exchange(proc, limits)
    wall = time.perf_counter() - t0
    _fail_closed(out, err, jail_cwd)
    if cut == "wall_limit":
        return SandboxRun(status="wall_limit", isolation=limits.isolation,
                          detail=f"killed after {limits.wall_s:g} s", wall_s=wall)
    if cut == "output_limit":
        return SandboxRun(status="output_limit", isolation=limits.isolation, wall_s=wall,
                          detail=f"the sandbox wrote more than {limits.output_kb} KiB; killed")
    return _parse(out, err, proc.returncode, limits.isolation, len(calls), wall)


def _filter() -> bytes:
    try:
        return filter_bytes()
    except RuntimeError as exc:
        raise SandboxError(f"cannot isolate generated tool code: {exc}; {INSTALL_HINT}") from exc


def _exchange(proc: subprocess.Popen, limits: SandboxLimits) -> tuple[bytes, bytes, str]:
    """Read the child's stdout (at most ``output_kb``) and stderr until both close or the wall limit passes.

    Past either limit the whole process group is killed (bubblewrap's death takes the jail's PID namespace
    with it). Returns ``(stdout, stderr tail, cut)`` with ``cut`` ``""``, ``"wall_limit"`` or ``"output_limit"``.
    """
    deadline = time.monotonic() + limits.wall_s
    cap = limits.output_kb * 1024
    out, err = bytearray(), bytearray()
    cut = ""
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ, out)
    sel.register(proc.stderr, selectors.EVENT_READ, err)
    try:
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                cut = "wall_limit"
                break
            for key, _ in sel.select(timeout=left):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                key.data.extend(chunk)
                if key.data is err and len(err) > STDERR_CAP:
                    del err[:len(err) - STDERR_CAP]
            if len(out) > cap:
                cut = "output_limit"
                break
    finally:
        sel.close()
        _kill(proc)  # always: whatever is left in the group (insecure mode's stragglers) goes with it
        proc.stdout.close()
        proc.stderr.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return bytes(out), bytes(err), cut


def _parse(out: bytes, err: bytes, rc: int, isolation: str, n_calls: int, wall: float) -> SandboxRun:
    """The run's verdict from the harness's frames: every call reported in order, then ``done``."""
    outcomes: list[CallOutcome] = []
    violations: list[str] = []
    status, detail, done = "ok", "", False
    for line in out.decode("utf-8", "replace").splitlines():
        try:
            frame = json.loads(line)
        except json.JSONDecodeError:
            return SandboxRun(status="crashed", isolation=isolation, detail="malformed harness output", wall_s=wall)
        if frame.get("done"):
            done = True
        elif "call" in frame:
            if frame["call"] != len(outcomes) or done:
                return SandboxRun(status="crashed", isolation=isolation, detail="harness frames out of order",
                                  wall_s=wall)
            outcomes.append(CallOutcome(**frame["outcome"]))
            violations += [v for v in frame["violations"] if v not in violations]
            if frame["status"] != "ok" and status == "ok":
                status, detail = frame["status"], frame["detail"]
    if not done or (status == "ok" and len(outcomes) != n_calls):
        rc = _child_rc(rc, jailed=isolation != "insecure")
        return SandboxRun(status=_status_of_rc(rc) if rc else "crashed", isolation=isolation, calls=outcomes,
                          violations=violations, detail=_describe_rc(rc, err) if rc else "the harness stopped early",
                          wall_s=wall)
    return SandboxRun(status=status, isolation=isolation, calls=outcomes, violations=violations, detail=detail,
                      wall_s=wall)


def _fail_closed(out: bytes, err: bytes, jail_cwd: str | None) -> None:
    """Raise :class:`SandboxError` when the child never reached tool code because isolation failed.

    The harness writes ``{"ready": true}`` after dropping privileges and before running any tool code;
    without it, a ``fatal`` frame from the harness or bubblewrap's own ``bwrap:`` error is a setup failure,
    not a bad sample.
    """
    first = out.split(b"\n", 1)[0]
    try:
        frame = json.loads(first) if first else {}
    except json.JSONDecodeError:
        frame = {}
    if frame.get("ready"):
        return
    if "fatal" in frame:
        raise SandboxError(f"the sandbox refused to run generated code: {str(frame['fatal'])[:200]}")
    lines = err.decode("utf-8", "replace").strip().splitlines()
    if jail_cwd is not None and lines and lines[-1].startswith("bwrap:"):
        raise SandboxError(f"cannot isolate generated tool code: {lines[-1][:200]}; {INSTALL_HINT}")


def _child_rc(rc: int, *, jailed: bool) -> int:
    """The runner's exit status as ``Popen.returncode`` reports it (negative: killed by that signal).

    bubblewrap exits with its child's status, and with 128 + N when the child was killed by signal N.
    """
    if jailed and rc > 128 and rc - 128 < 65:
        return -(rc - 128)
    return rc


def _kill(proc: subprocess.Popen) -> None:
    """SIGKILL the child's process group: bubblewrap, whose death takes its PID namespace with it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        if proc.poll() is None:
            proc.kill()


def _status_of_rc(rc: int) -> str:
    if rc in (-signal.SIGXCPU, -signal.SIGKILL):
        return "cpu_limit"
    return "crashed"


def _describe_rc(rc: int, err: bytes) -> str:
    if rc < 0:
        try:
            sig = signal.Signals(-rc).name
        except ValueError:
            sig = str(-rc)
        return f"child killed by {sig}"
    tail = err.decode("utf-8", "replace").strip().splitlines()[-1:] if err else []
    return f"child exited with status {rc}" + (f": {tail[0][:200]}" if tail else "")
