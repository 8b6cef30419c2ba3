"""Run generated tool code out of process, jailed, under limits.

Generated code never runs in the caller's process. :func:`run_calls` starts ONE child interpreter per batch
of calls (all golden calls of a sample go into one run). By default (``SandboxLimits.isolation ==
"namespaces"``) the child is jailed by bubblewrap (:mod:`synth.envs.jail`): uid 65534, new PID, network, IPC
and UTS namespaces, a read-only root holding only the interpreter, an empty tmpfs work directory, and a PID
namespace that dies with the call. Where the jail cannot be set up, :func:`run_calls` raises
:class:`SandboxError` (fail closed); it never falls back to running the code unjailed.

Inside, the runner sets the kernel limits: CPU time (``RLIMIT_CPU``), address space (``RLIMIT_AS``), file size
(``RLIMIT_FSIZE``), processes (``RLIMIT_NPROC``), no core dumps; the caller kills the whole jail after
``wall_s``. The environment is stripped and the interpreter runs as ``python -S -s -P -B`` (standard library
only).

An audit hook (PEP 578) is kept as a *tripwire*: a network attempt, a file write outside the work directory,
a process spawn or a native-code load is recorded as a policy violation and fails the run even when the tool
code catches the resulting error. In the jail it only records (the kernel refuses); under ``insecure`` it
also refuses what it sees. It is not a barrier: ``_posixsubprocess.fork_exec`` and ``os.open(dir_fd=...)``
raise no event it could stop, which is why the jail exists.

A run that exceeds a limit, crashes or violates the policy has ``failed == True``: callers reject the sample.
Per-call exceptions (bad arguments, a ``KeyError`` in the tool) are *not* run failures: they come back as
``CallOutcome(ok=False)`` and are what an agent sees as an error observation.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from typing import Any

from synth.envs.errors import SandboxError
from synth.envs.jail import INSTALL_HINT, JAIL_UID, WORK_DIR, bwrap_argv, require_jail
from synth.envs.models import CallOutcome, SandboxLimits, SandboxRun

__all__ = ["run_calls", "RUNNER_SOURCE"]

RUNNER_SOURCE = r'''
import io, json, os, resource, sys

def _main():
    uid = int(sys.argv[1])
    refuse = sys.argv[2] == "refuse"
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    if uid >= 0 and os.getuid() != uid:
        if os.getuid() != 0:
            out.write("@@sbx-fatal@@running as uid " + str(os.getuid()) + ", expected " + str(uid) + "\n")
            out.flush()
            return
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        if os.getuid() != uid or os.geteuid() != uid or os.getgid() != uid:
            out.write("@@sbx-fatal@@could not drop to uid " + str(uid) + "\n")
            out.flush()
            return
    payload = json.loads(sys.stdin.read())
    nonce = payload["nonce"]
    lim = payload["limits"]
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    out.write(nonce + "READY\n")
    out.flush()
    cpu = max(1, int(lim["cpu_s"] + 0.999))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    mem = int(lim["memory_mb"]) * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    fsize = int(lim["file_kb"]) * 1024
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if uid >= 0:
        nproc = int(lim["max_processes"])
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
    root = os.path.realpath(os.getcwd())
    violations = []
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC

    def _inside(path):
        try:
            if isinstance(path, int):
                return True
            p = os.fsdecode(path)
            return os.path.realpath(os.path.join(root, p)).startswith(root + os.sep)
        except Exception:
            return False

    def _note(text):
        if text not in violations:
            violations.append(text)

    def hook(event, args):
        if event in ("socket.__new__", "socket.connect", "socket.bind", "socket.getaddrinfo",
                     "socket.gethostbyname", "socket.sendto", "socket.socketpair"):
            if event == "socket.__new__" and len(args) > 1 and args[1] == 1:  # AF_UNIX
                return
            _note("network access attempted (" + event + ")")
            if refuse:
                raise PermissionError("network access is disabled in this sandbox")
        elif event == "open":
            path, mode, flags = args
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & write_flags)
            if writing and not _inside(path):
                _note("file write outside the work directory (" + os.fsdecode(path) + ")")
                if refuse:
                    raise PermissionError("writing outside the work directory is not allowed")
        elif event in ("os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.chown", "os.link",
                       "os.symlink", "os.truncate", "shutil.rmtree", "os.utime"):
            paths = [a for a in args if isinstance(a, (str, bytes))]
            if any(not _inside(p) for p in paths):
                _note("file change outside the work directory (" + event + ")")
                if refuse:
                    raise PermissionError("changing files outside the work directory is not allowed")
        elif event in ("os.system", "subprocess.Popen", "os.exec", "os.posix_spawn", "os.spawn", "os.fork",
                       "os.forkpty", "os.kill", "os.killpg", "pty.spawn"):
            _note("process control attempted (" + event + ")")
            if refuse:
                raise PermissionError("process control is not allowed")
        elif event == "import" and args[0] in ("_posixsubprocess", "_ctypes"):
            _note("process or native-code module imported (" + args[0] + ")")
            if refuse:
                raise PermissionError("importing " + args[0] + " is not allowed")
        elif event in ("ctypes.dlopen", "ctypes.dlsym", "ctypes.cdata", "resource.setrlimit", "resource.prlimit",
                       "sys.setrecursionlimit"):
            _note("forbidden operation (" + event + ")")
            if refuse:
                raise PermissionError(event + " is not allowed")

    sys.addaudithook(hook)
    results = []
    status = None
    for call in payload["calls"]:
        name = call["name"]
        src = payload["tools"].get(name)
        buf = io.StringIO()
        real_stdout, real_stderr = sys.stdout, sys.stderr
        sys.stdout = sys.stderr = buf
        try:
            if src is None:
                raise LookupError("unknown tool " + repr(name))
            ns = {"__name__": "tool_" + name}
            exec(compile(src, "<tool " + name + ">", "exec"), ns)
            fn = ns.get(name)
            if not callable(fn):
                raise LookupError("source does not define a function " + repr(name))
            value = fn(**call["arguments"])
            if isinstance(value, str):
                text = value
            else:
                text = json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=False)
            if len(text) > lim["output_chars"]:
                results.append({"name": name, "ok": False, "output": "OutputTooLarge: the tool returned "
                                + str(len(text)) + " characters (limit " + str(lim["output_chars"]) + ")"})
            else:
                results.append({"name": name, "ok": True, "output": text})
        except MemoryError:
            status = "memory_limit"
            results.append({"name": name, "ok": False, "output": "MemoryError"})
        except RecursionError as exc:
            results.append({"name": name, "ok": False, "output": "RecursionError: " + str(exc)[:200]})
        except BaseException as exc:
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                kind = type(exc).__name__
                results.append({"name": name, "ok": False, "output": kind + " raised by the tool"})
            else:
                results.append({"name": name, "ok": False, "output": type(exc).__name__ + ": " + str(exc)[:500]})
        finally:
            sys.stdout, sys.stderr = real_stdout, real_stderr
        results[-1]["stdout"] = buf.getvalue()[:4096]
        if status:
            break
    out.write(nonce + json.dumps({"calls": results, "violations": violations,
                                  "status": status}, ensure_ascii=False))
    out.flush()

_main()
'''


def _child_env(hash_seed: int) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PYTHONHASHSEED": str(hash_seed),
            "PYTHONIOENCODING": "utf-8", "PYTHONDONTWRITEBYTECODE": "1"}


def _command(limits: SandboxLimits) -> tuple[list[str], str | None]:
    """``(argv, cwd)`` of one sandbox child: jailed by bubblewrap, or (``insecure``) a plain child."""
    exe = os.path.realpath(sys.executable)
    py = [exe, "-S", "-s", "-P", "-B", "-c", RUNNER_SOURCE]
    if limits.isolation == "insecure":
        return [*py, "-1", "refuse"], None
    bwrap = require_jail()
    return [*bwrap_argv(limits, bwrap=bwrap), *py, str(JAIL_UID), "record"], WORK_DIR


def run_calls(tools: Mapping[str, str], calls: Sequence[Mapping[str, Any]], *,
              limits: SandboxLimits | None = None, hash_seed: int = 0) -> SandboxRun:
    """Run ``calls`` against tool ``sources`` in one sandboxed child process.

    Parameters
    ----------
    tools : mapping
        Tool name -> Python source defining a function of that name (standard library only).
    calls : sequence of mappings
        ``{"name": str, "arguments": dict}`` in order; each runs in a fresh namespace of its tool's source
        (no state shared between calls or tools).
    limits : SandboxLimits, optional
        CPU seconds, memory MiB, wall seconds, file KiB, processes, isolation; defaults as in
        :class:`SandboxLimits`.
    hash_seed : int
        ``PYTHONHASHSEED`` of the child: two runs with different seeds also expose set/dict-order dependence.

    Returns
    -------
    SandboxRun
        ``status`` ``ok`` with one :class:`CallOutcome` per call, or the failure (limit, crash, violation).

    Raises
    ------
    SandboxError
        When the jail cannot be set up (no bubblewrap, namespaces refused, privileges not dropped): no tool
        code has run.
    """
    limits = limits or SandboxLimits()
    nonce = "@@sbx-" + secrets.token_hex(8) + "@@"
    payload = json.dumps({"nonce": nonce, "limits": limits.model_dump(), "tools": dict(tools),
                          "calls": [{"name": str(c["name"]), "arguments": dict(c.get("arguments") or {})}
                                    for c in calls]}, ensure_ascii=False)
    argv, jail_cwd = _command(limits)
    isolation = limits.isolation
    t0 = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="toolscale-sbx-") as work:
            proc = subprocess.Popen(argv, cwd=work, env=_child_env(hash_seed), stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
            try:
                out, err = proc.communicate(payload.encode("utf-8"), timeout=limits.wall_s)
            except subprocess.TimeoutExpired:
                _kill(proc)
                out, err = proc.communicate()
                _fail_closed(out, err, nonce, jail_cwd)
                return SandboxRun(status="wall_limit", isolation=isolation,
                                  detail=f"killed after {limits.wall_s:g} s", wall_s=time.perf_counter() - t0)
    except OSError as exc:
        raise SandboxError(f"cannot start the sandbox ({argv[0]}): {exc}") from exc
    wall = time.perf_counter() - t0
    _fail_closed(out, err, nonce, jail_cwd)
    text = out.decode("utf-8", "replace")
    pos = text.rfind(nonce + "{")
    rc = _child_rc(proc.returncode, jailed=jail_cwd is not None)
    if pos < 0:
        return SandboxRun(status=_status_of_rc(rc), isolation=isolation, detail=_describe_rc(rc, err), wall_s=wall)
    try:
        data = json.loads(text[pos + len(nonce):])
    except json.JSONDecodeError:
        return SandboxRun(status="crashed", isolation=isolation, detail="sandbox output was cut off", wall_s=wall)
    outcomes = [CallOutcome(**c) for c in data["calls"]]
    violations = list(data["violations"])
    if data["status"] == "memory_limit":
        status = "memory_limit"
    elif violations:
        status = "violation"
    elif rc != 0:
        status = _status_of_rc(rc)
    else:
        status = "ok"
    detail = "" if status == "ok" else (_describe_rc(rc, err) if rc else "")
    return SandboxRun(status=status, isolation=isolation, calls=outcomes, violations=violations,
                      detail=detail, wall_s=wall)


def _fail_closed(out: bytes, err: bytes, nonce: str, jail_cwd: str | None) -> None:
    """Raise :class:`SandboxError` when the child never reached tool code because isolation failed.

    The runner writes ``NONCE READY`` after dropping privileges and before running any tool code; without
    it, a ``@@sbx-fatal@@`` line from the runner or bubblewrap's own ``bwrap:`` error is a setup failure,
    not a bad sample.
    """
    text = out.decode("utf-8", "replace")
    if nonce + "READY" in text:
        return
    fatal = text.find("@@sbx-fatal@@")
    if fatal >= 0:
        line = text[fatal + len("@@sbx-fatal@@"):].split("\n", 1)[0]
        raise SandboxError(f"the sandbox refused to run generated code: {line}")
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
