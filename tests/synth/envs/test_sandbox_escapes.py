"""synth/envs/sandbox.py in the bubblewrap jail: every escape seen in the wild, as a regression test.

Each test runs hostile tool code through :func:`run_calls` with the default (jailed) isolation and checks
the *effect* on the host, not just the audit hook's verdict: inside the jail the hook only records, so these
attempts really reach the kernel. ``benchmarks/sandbox_escapes.py`` counts the failures of this file as
"escapes that succeed" (target 0).
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import sysconfig
import threading
import time
from pathlib import Path

import pytest

from synth.envs.models import SandboxLimits
from synth.envs.sandbox import run_calls

pytestmark = pytest.mark.integration

LIMITS = SandboxLimits(cpu_s=3, wall_s=10, memory_mb=256)
STDLIB = os.path.realpath(sysconfig.get_paths()["stdlib"])  # a host folder the jail binds read-only


def _run(body: str, limits: SandboxLimits = LIMITS):
    src = "def f():\n" + "".join("    " + line + "\n" for line in body.splitlines())
    run = run_calls({"f": src}, [{"name": "f", "arguments": {}}], limits=limits)
    assert run.isolation == "namespaces"
    return run


def _processes_with(marker: str) -> list[int]:
    """PIDs of host processes whose command line contains ``marker``."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if marker.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    pids.append(int(entry))
            except OSError:
                pass
    return pids


def _gone(marker: str, within_s: float = 2.0) -> bool:
    deadline = time.monotonic() + within_s
    while _processes_with(marker):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture
def targets(tmp_path: Path):
    """Host paths an escape would create: one in a scratch folder, one in a folder the jail can see."""
    token = secrets.token_hex(6)
    paths = [tmp_path / f"escaped-{token}.txt", Path(STDLIB) / f"toolscale-escape-{token}.txt"]
    yield paths
    for p in (*paths, Path("/", paths[1].name)):
        p.unlink(missing_ok=True)


def test_fork_exec_runs_only_inside_the_jail(targets):
    # _posixsubprocess.fork_exec raises no audit event: it ran `sh` and wrote files before the jail.
    write = "; ".join(f"open({str(p)!r}, 'w').write('x')" for p in targets)
    body = f"""import _posixsubprocess, os, sys
out = {{}}
for name, argv in (("sh", [b"/bin/sh", b"-c", b"touch {targets[0]}"]),
                   ("python", [sys.executable.encode(), b"-c", b"open('/work/ran', 'w').write('1'); " + {write!r}.encode()])):
    errpipe_read, errpipe_write = os.pipe()
    try:
        pid = _posixsubprocess.fork_exec(argv, [argv[0]], True, (errpipe_write,), None, None, -1, -1, -1, -1, -1,
                                         -1, errpipe_read, errpipe_write, False, False, -1, None, None, None, -1,
                                         None, False)
        os.close(errpipe_write)
        err = os.read(errpipe_read, 200)
        _, status = os.waitpid(pid, 0)
        out[name] = [err.decode(errors="replace")[:60], os.waitstatus_to_exitcode(status)]
    except OSError as exc:
        out[name] = repr(exc)
out["ran_inside"] = os.path.exists("/work/ran")
return out"""
    run = _run(body)
    assert not any(p.exists() for p in targets)
    assert '"ran_inside": true' in run.calls[0].output  # the interpreter did run, in the jail
    assert "OSError:" in run.calls[0].output or "No such file" in run.calls[0].output  # no /bin/sh to run
    assert run.failed


def test_os_system_finds_no_shell(targets):
    run = _run(f"import os\nreturn os.system('touch {targets[0]} {targets[1]}')")
    assert not any(p.exists() for p in targets)
    assert run.calls[0].ok and run.calls[0].output != "0"  # 127 * 256: no /bin/sh in the jail
    assert run.failed and any("os.system" in v for v in run.violations)


def test_subprocess_cannot_write_to_the_host(targets):
    code = "; ".join(f"open({str(p)!r}, 'w').write('x')" for p in targets)
    body = (f"import subprocess, sys\nr = subprocess.run([sys.executable, '-S', '-c', {code!r}],"
            " capture_output=True)\nreturn [r.returncode, r.stderr.decode()[-120:]]")
    run = _run(body)
    assert not any(p.exists() for p in targets)
    out = run.calls[0].output
    assert out.startswith("[1,") and ("No such file" in out or "Read-only" in out)
    assert run.failed


def test_ctypes_syscalls_are_refused_by_the_kernel(targets):
    body = f"""import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
out = []
for p in {[str(p) for p in targets]!r}:
    fd = libc.open(p.encode(), os.O_WRONLY | os.O_CREAT, 0o644)
    out.append([fd, ctypes.get_errno()])
out.append(["unshare-net", libc.unshare(0x40000000), ctypes.get_errno()])
out.append(["setuid0", libc.setuid(0), ctypes.get_errno()])
out.append(["system", libc.system(b"touch {targets[0]}")])
return out"""
    run = _run(body)
    assert not any(p.exists() for p in targets)
    out = run.calls[0].output
    assert out.startswith("[[-1, 2], [-1, 30]")  # ENOENT (no such folder in the jail), EROFS
    assert '["unshare-net", -1, 1]' in out and '["setuid0", -1, 1]' in out  # EPERM: no privileges
    assert run.failed and any("ctypes" in v for v in run.violations)


def test_dir_fd_writes_outside_the_work_dir_fail(targets):
    body = f"""import os
out = []
for folder in ({STDLIB!r}, "/", "/work/.."):
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.close(os.open({targets[1].name!r}, os.O_WRONLY | os.O_CREAT, dir_fd=fd))
        out.append("created in " + folder)
    except OSError as exc:
        out.append(type(exc).__name__ + " " + str(exc.errno))
return out"""
    run = _run(body)
    assert not targets[1].exists() and not Path("/", targets[1].name).exists()
    assert json.loads(run.calls[0].output) == ["OSError 30"] * 3  # EROFS in each of the three folders


def test_reads_of_etc_home_and_host_files_find_nothing(tmp_path: Path):
    secret = tmp_path / "secret.txt"
    secret.write_text("s3cr3t-" + secrets.token_hex(4))
    home = os.path.expanduser("~")
    paths = ["/etc/passwd", "/etc/shadow", "/etc/hostname", f"{home}/.bashrc", f"{home}/.profile", str(secret),
             "/proc/1/root/etc/passwd", "/proc/1/environ", "/proc/1/cwd/" + secret.name, "~/.bashrc"]
    body = f"""import os
out = {{}}
for p in {paths!r}:
    try:
        out[p] = open(os.path.expanduser(p), errors="replace").read()[:200]
    except OSError as exc:
        out[p] = "ERR " + type(exc).__name__
out["listing"] = sorted(os.listdir("/"))
out["home"] = os.path.expanduser("~")
return out"""
    run = _run(body)
    out = json.loads(run.calls[0].output)
    assert {p: out[p] for p in paths} == {p: "ERR FileNotFoundError" if not p.startswith("/proc/1")
                                          else "ERR PermissionError" for p in paths}
    assert "etc" not in out["listing"] and not any(p.startswith(home) for p in out["listing"])


def test_sockets_reach_no_host_listener(tmp_path: Path):
    seen: list[str] = []
    tcp = socket.create_server(("127.0.0.1", 0))
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    unix_path = str(tmp_path / "s.sock")
    unix = socket.socket(socket.AF_UNIX)
    unix.bind(unix_path)
    unix.listen()
    abstract_name = "\0toolscale-test-" + secrets.token_hex(4)
    abstract = socket.socket(socket.AF_UNIX)
    abstract.bind(abstract_name)
    abstract.listen()
    for s in (tcp, udp, unix, abstract):
        s.settimeout(0.2)
    stop = threading.Event()

    def watch():
        while not stop.is_set():
            for s in (tcp, unix, abstract):
                try:
                    s.accept()
                    seen.append("connect")
                except OSError:
                    pass
            try:
                seen.append(udp.recv(100).decode())
            except OSError:
                pass

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    body = f"""import socket
out = []
for family, addr in ((socket.AF_INET, ("127.0.0.1", {tcp.getsockname()[1]})), (socket.AF_UNIX, {unix_path!r}),
                     (socket.AF_UNIX, {abstract_name!r})):
    s = socket.socket(family)
    s.settimeout(1)
    try:
        s.connect(addr)
        out.append("connected")
    except OSError as exc:
        out.append(type(exc).__name__)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    u.sendto(b"udp-escape", ("127.0.0.1", {udp.getsockname()[1]}))
    out.append("sent")
except OSError as exc:
    out.append(type(exc).__name__)
return out"""
    try:
        run = _run(body)
        time.sleep(0.5)
    finally:
        stop.set()
        t.join(2)
        for s in (tcp, udp, unix, abstract):
            s.close()
    assert seen == []
    assert "connected" not in run.calls[0].output
    assert run.failed and any("network access attempted" in v for v in run.violations)


def test_fork_bomb_stops_at_the_process_limit():
    marker = "toolscale-bomb-" + secrets.token_hex(4)
    body = f"""import os, sys
n = 0
for _ in range(200):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        os.execv(sys.executable, [sys.executable, "-S", "-c", "import time; time.sleep(30)", {marker!r}])
    n += 1
return n"""
    limits = SandboxLimits(cpu_s=3, wall_s=20, memory_mb=256, max_processes=12)
    t0 = time.monotonic()
    run = _run(body, limits)
    assert time.monotonic() - t0 < 15
    assert run.calls and 0 < int(run.calls[0].output) < 12  # the runner itself is one of the 12
    assert run.failed and any("os.fork" in v for v in run.violations)
    assert _gone(marker)


def test_a_child_does_not_outlive_the_call():
    # A detached grandchild (setsid, PPID 1) wrote a file 3 s after `envs check` returned.
    marker = "toolscale-outlive-" + secrets.token_hex(4)
    body = f"""import os, sys, time
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-S", "-c", "import time; time.sleep(30)", {marker!r}])
    os.write(w, b"x")
    os._exit(0)
os.read(r, 1)
for _ in range(100):
    alive = [p for p in os.listdir("/proc") if p.isdigit()
             and {marker!r}.encode() in open("/proc/" + p + "/cmdline", "rb").read()]
    if alive:
        return "started " + alive[0]
    time.sleep(0.02)
return "not started" """
    run = _run(body)
    assert run.calls[0].output.startswith('"started ') or run.calls[0].output.startswith("started ")
    assert _gone(marker)


def test_host_processes_cannot_be_signalled():
    victim = subprocess.Popen([sys.executable, "-S", "-c", "import time; time.sleep(30)"])
    try:
        body = (f"import os, signal\nout = []\nfor pid in ({victim.pid}, -1, 1):\n    try:\n"
                "        os.kill(pid, signal.SIGKILL)\n        out.append('sent')\n    except OSError as exc:\n"
                "        out.append(type(exc).__name__)\nreturn out")
        run = _run(body)
        time.sleep(0.2)
        assert victim.poll() is None
        assert run.calls[0].output.startswith('["ProcessLookupError"')  # not even visible from the jail
        assert run.failed
    finally:
        victim.send_signal(signal.SIGKILL)
        victim.wait()
