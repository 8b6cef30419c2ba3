"""The harness inside the jail: runs each tool call in a fresh process and reports what it saw.

Not imported by the package: :mod:`synth.envs.sandbox` reads this file's text and runs it as
``python -S -s -P -B -c SOURCE UID MODE`` (standard library only; UID -1 and MODE ``refuse`` outside the
jail). The payload (tools, calls, limits) comes on standard input as one JSON object; the report goes to
standard output as JSON lines: ``{"ready": true}`` once privileges are dropped, one ``{"call": i, ...}`` frame
per call, ``{"done": true}`` at the end.

Tool code never runs in this process. For each call the runner forks a child that sets the limits, installs
the audit hook, runs the tool and writes its one result to a pipe; the runner reads that pipe (at most
``output_kb``) and a second one on which the audit hook writes each policy violation *as it happens*. The
child has neither the runner's standard output nor its memory (the runner is not dumpable and the jail's
seccomp filter refuses ``ptrace`` and ``process_vm_writev``), so nothing in tool code can write a frame, skip
a call, or take back a violation. After each call, every other process in the jail is killed and the work
directory emptied: calls share no state.
"""

import io
import json
import os
import resource
import select
import sys
import time

__all__ = ["main", "HOOK_TAMPERED"]

SIGKILL, SIGXCPU, SIGSYS = 9, 24, 31  # Linux's numbers on x86-64 and arm64 (importing signal costs an enum)
_SIGNAMES = {6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE", 9: "SIGKILL", 11: "SIGSEGV", 24: "SIGXCPU", 25: "SIGXFSZ",
             31: "SIGSYS"}

HOOK_TAMPERED = 86
"""Exit status of a child whose violation channel was closed or replaced (itself a violation)."""
VIOLATION_CAP = 65536
NETWORK = ("socket.__new__", "socket.connect", "socket.bind", "socket.getaddrinfo", "socket.gethostbyname",
           "socket.sendto", "socket.socketpair")
FILE_CHANGE = ("os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.chown", "os.link", "os.symlink",
               "os.truncate", "shutil.rmtree", "os.utime")
PROCESS = ("os.system", "subprocess.Popen", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty",
           "os.kill", "os.killpg", "pty.spawn")
FORBIDDEN = ("ctypes.dlopen", "ctypes.dlsym", "ctypes.cdata", "resource.setrlimit", "resource.prlimit",
             "sys.setrecursionlimit", "gc.get_objects", "gc.get_referrers", "gc.get_referents")
HARNESS_ATTRS = ("__code__", "__defaults__", "__kwdefaults__")


def _emit(out, obj):
    out.write(json.dumps(obj, ensure_ascii=False) + "\n")
    out.flush()


def _drop(uid, out):
    """Become ``uid`` (the jail as root), refuse to go on as anyone else, and stop being dumpable."""
    if uid >= 0 and os.getuid() != uid:
        if os.getuid() != 0:
            _emit(out, {"fatal": "running as uid " + str(os.getuid()) + ", expected " + str(uid)})
            return False
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        if os.getuid() != uid or os.geteuid() != uid or os.getgid() != uid:
            _emit(out, {"fatal": "could not drop to uid " + str(uid)})
            return False
    # Not dumpable: other processes of this uid cannot open /proc/<runner>/{mem,fd}. Dropping from root to uid
    # made it so already (its /proc files now belong to root); else PR_SET_DUMPABLE 0 (ctypes: ~40 ms to load).
    if os.stat("/proc/self/stat").st_uid != 0 or os.getuid() == 0:
        try:
            import ctypes

            ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    return True


def _make_hook(vfd, root, refuse):
    """The audit hook of one child: a tripwire writing each violation to ``vfd`` at once.

    Everything it uses is bound as a default argument, so rebinding module globals or builtins from tool code
    does not change it; rebinding its ``__code__`` or defaults is itself reported before it happens. A
    replaced or closed ``vfd`` ends the child with :data:`HOOK_TAMPERED`.
    """
    st = os.fstat(vfd)
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC

    def hook(event, args, _vfd=vfd, _ident=(st.st_dev, st.st_ino), _fstat=os.fstat, _write=os.write,
             _exit=os._exit, _fsdecode=os.fsdecode, _realpath=os.path.realpath, _join=os.path.join,
             _root=root + os.sep, _refuse=refuse, _isinstance=isinstance, _str=str, _bytes=bytes, _int=int,
             _any=any, _perm=PermissionError, _net=NETWORK, _fchange=FILE_CHANGE, _proc=PROCESS,
             _forbid=FORBIDDEN, _attrs=HARNESS_ATTRS, _wflags=write_flags):
        text = None
        if event in _net:
            if not (event == "socket.__new__" and len(args) > 1 and args[1] == 1):  # AF_UNIX
                text = "network access attempted (" + event + ")"
        elif event == "open":
            path, mode, flags = args
            writing = (_isinstance(mode, _str) and _any(c in mode for c in "wax+")) or (
                _isinstance(flags, _int) and flags & _wflags)
            if writing and not _isinstance(path, _int):
                try:
                    inside = _realpath(_join(_root, _fsdecode(path))).startswith(_root)
                except Exception:
                    inside = False
                if not inside:
                    text = "file write outside the work directory (" + _fsdecode(path)[:200] + ")"
        elif event in _fchange:
            for p in args:
                if _isinstance(p, (_str, _bytes)):
                    try:
                        inside = _realpath(_join(_root, _fsdecode(p))).startswith(_root)
                    except Exception:
                        inside = False
                    if not inside:
                        text = "file change outside the work directory (" + event + ")"
        elif event in _proc:
            text = "process control attempted (" + event + ")"
        elif event == "import" and args[0] in ("_posixsubprocess", "_ctypes"):
            text = "process or native-code module imported (" + args[0] + ")"
        elif event in _forbid:
            text = "forbidden operation (" + event + ")"
        elif event == "object.__setattr__" and len(args) > 1 and args[1] in _attrs:
            text = "harness tampering attempted (" + event + " " + _str(args[1]) + ")"
        if text is None:
            return
        try:
            st2 = _fstat(_vfd)
            if (st2.st_dev, st2.st_ino) != _ident:
                _exit(HOOK_TAMPERED)
            _write(_vfd, ("\n" + text + "\n").encode("utf-8", "replace"))
        except OSError:
            _exit(HOOK_TAMPERED)
        if _refuse:
            raise _perm("not allowed in this sandbox: " + text)

    return hook


def _limit(lim, jailed):
    cpu = max(1, int(lim["cpu_s"] + 0.999))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    mem = int(lim["memory_mb"]) * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    fsize = int(lim["file_kb"]) * 1024
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if jailed:
        nproc = int(lim["max_processes"])
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))


def _call(call, tools, lim):
    """Run one call in this (child) process: ``{"ok", "output", "stdout", "status"}``."""
    name = call["name"]
    src = tools.get(name)
    buf = io.StringIO()
    sys.stdout = sys.stderr = buf
    res = {"ok": False, "output": "", "status": None}
    try:
        if src is None:
            raise LookupError("unknown tool " + repr(name))
        ns = {"__name__": "tool_" + name}
        exec(compile(src, "<tool " + name + ">", "exec"), ns)
        fn = ns.get(name)
        if not callable(fn):
            raise LookupError("source does not define a function " + repr(name))
        value = fn(**call["arguments"])
        text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False,
                                                               allow_nan=False)
        if len(text) > lim["output_chars"]:
            res["output"] = ("OutputTooLarge: the tool returned " + str(len(text)) + " characters (limit "
                             + str(lim["output_chars"]) + ")")
        else:
            res["ok"], res["output"] = True, text
    except MemoryError:
        res["status"], res["output"] = "memory_limit", "MemoryError"
    except RecursionError as exc:
        res["output"] = "RecursionError: " + str(exc)[:200]
    except (KeyboardInterrupt, SystemExit) as exc:
        res["output"] = type(exc).__name__ + " raised by the tool"
    except BaseException as exc:
        res["output"] = type(exc).__name__ + ": " + str(exc)[:500]
    res["stdout"] = buf.getvalue()[:4096]
    return res


def _child(call, tools, lim, refuse, jailed, rfd, vfd):
    """The forked child: only ``rfd``/``vfd`` stay open; run the call, write its result, exit."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    lo, hi = sorted((rfd, vfd))
    os.closerange(3, lo)
    os.closerange(lo + 1, hi)
    os.closerange(hi + 1, 65536)
    try:
        _limit(lim, jailed)
        sys.addaudithook(_make_hook(vfd, os.path.realpath(os.getcwd()), refuse))
        res = _call(call, tools, lim)
        data = json.dumps(res, ensure_ascii=False).encode("utf-8")
        while data:
            data = data[os.write(rfd, data):]
    finally:
        os._exit(0)


def _sweep(pid, jailed):
    """Kill the call's process and everything it started: in the jail, every process but this one and PID 1."""
    try:
        if jailed and os.getpid() == 2:
            os.kill(-1, SIGKILL)
        else:
            os.kill(pid, SIGKILL)
    except OSError:
        pass


def _collect(pid, rfd, vfd, cap, jailed):
    """Read the child's result (at most ``cap`` bytes) and violations until both pipes close.

    Returns ``(result bytes, violation bytes, wait status, which pipe went over its cap or "")``.
    """
    bufs = {rfd: bytearray(), vfd: bytearray()}
    caps = {rfd: cap, vfd: VIOLATION_CAP}
    pending = [rfd, vfd]
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    status, over, grace = None, "", None
    while pending or status is None:
        if status is None:
            done, st = os.waitpid(pid, os.WNOHANG)
            if done:
                status = st
                _sweep(pid, jailed)  # grandchildren holding the pipes die too, so both reach EOF
                grace = time.monotonic() + 1.0  # outside the jail a detached grandchild may keep them open
        elif time.monotonic() > grace:
            break
        watch = pending + ([pidfd] if pidfd is not None and status is None else [])
        ready = select.select(watch, [], [], 0.05 if pidfd is None or status is not None else None)[0] \
            if watch else []
        for fd in ready:
            if fd == pidfd:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                pending.remove(fd)
                continue
            if len(bufs[fd]) + len(chunk) > caps[fd]:
                over = over or ("result" if fd == rfd else "violations")
                _sweep(pid, jailed)
                bufs[fd] += chunk[:max(0, caps[fd] - len(bufs[fd]))]
            else:
                bufs[fd] += chunk
    if pidfd is not None:
        os.close(pidfd)
    os.close(rfd)
    os.close(vfd)
    return bytes(bufs[rfd]), bytes(bufs[vfd]), status, over


def _verdict(name, result, vio, status, over, cap):
    """One call frame from what the runner read: status, outcome, violations, detail."""
    violations = []
    for line in vio.decode("utf-8", "replace").split("\n"):
        line = line.strip()
        if line and line not in violations:
            violations.append(line[:300])
    frame = {"status": "ok", "outcome": None, "violations": violations, "detail": ""}
    sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
    if over == "result":
        frame["status"], frame["detail"] = "output_limit", "the call wrote more than " + str(cap) + " bytes"
    elif over:
        violations.append("flooded the policy tripwire's channel")
        frame["status"] = "violation"
        frame["detail"] = "the call wrote more than " + str(VIOLATION_CAP) + " bytes of violations"
    elif sig == SIGSYS:
        violations.append("forbidden system call (killed by SIGSYS): a network socket, or a namespace, mount, "
                          "keyring, io_uring, ptrace or bpf call")
        frame["status"], frame["detail"] = "violation", "killed by SIGSYS"
    elif sig in (SIGXCPU, SIGKILL):
        frame["status"], frame["detail"] = "cpu_limit", "killed by " + _SIGNAMES[sig]
    elif sig:
        frame["status"], frame["detail"] = "crashed", "killed by " + _SIGNAMES.get(sig, "signal " + str(sig))
    elif code == HOOK_TAMPERED:
        violations.append("the policy tripwire's channel was closed or replaced by tool code")
        frame["status"], frame["detail"] = "violation", "exit status " + str(code)
    else:
        try:
            res = json.loads(result.decode("utf-8"))
            outcome = {"name": name, "ok": bool(res["ok"]), "output": str(res["output"]),
                       "stdout": str(res.get("stdout", ""))}
            frame["outcome"] = outcome
            if res.get("status") == "memory_limit":
                frame["status"] = "memory_limit"
        except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError):
            frame["status"] = "crashed"
            frame["detail"] = ("the call's process exited with status " + str(code) + " without a well-formed "
                               "result (" + str(len(result)) + " bytes)")
    if violations and frame["status"] == "ok":
        frame["status"] = "violation"
    if frame["outcome"] is None:
        frame["outcome"] = {"name": name, "ok": False, "output": frame["detail"] or frame["status"], "stdout": ""}
    return frame


def _clear(root):
    """Empty the work directory (folders made unwritable by the tool are opened up first)."""
    for dirpath, dirnames, filenames in os.walk(root, topdown=False):
        for n in filenames:
            try:
                os.unlink(os.path.join(dirpath, n))
            except OSError:
                pass
        for n in dirnames:
            p = os.path.join(dirpath, n)
            try:
                os.rmdir(p) if not os.path.islink(p) else os.unlink(p)
            except OSError:
                pass
    for n in os.listdir(root):  # second pass for folders whose mode blocked the first
        p = os.path.join(root, n)
        try:
            if os.path.isdir(p) and not os.path.islink(p):
                for dp, dn, _ in os.walk(p):
                    os.chmod(dp, 0o700)
                    for d in dn:
                        os.chmod(os.path.join(dp, d), 0o700)
                _clear(p)
                os.rmdir(p)
        except OSError:
            pass


def main():
    uid, refuse = int(sys.argv[1]), sys.argv[2] == "refuse"
    jailed = uid >= 0
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    if not _drop(uid, out):
        return
    payload = json.loads(sys.stdin.read())
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    _emit(out, {"ready": True})
    lim, tools = payload["limits"], payload["tools"]
    cap = int(lim["output_kb"]) * 1024
    root = os.path.realpath(os.getcwd())
    for i, call in enumerate(payload["calls"]):
        rr, rw = os.pipe()
        vr, vw = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(rr)
            os.close(vr)
            _child(call, tools, lim, refuse, jailed, rw, vw)
        os.close(rw)
        os.close(vw)
        result, vio, status, over = _collect(pid, rr, vr, cap, jailed)
        _clear(root)
        frame = _verdict(call["name"], result, vio, status, over, cap)
        _emit(out, {"call": i, **frame})
        if frame["status"] != "ok":
            break
    _emit(out, {"done": True})


if __name__ == "__main__":
    main()
