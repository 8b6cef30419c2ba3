"""OS-level isolation of generated tool code: the bubblewrap command line and a check that it works.

A jailed sandbox run is ``bwrap [namespaces, mounts] PYTHON -S -s -P -B -c RUNNER``. The child gets:

- new PID, network, IPC, UTS and cgroup namespaces (``--unshare-pid --unshare-net ...``). The PID namespace's
  first process is bubblewrap's reaper: when the runner exits (or the caller kills bubblewrap, or the caller
  dies: ``--die-with-parent``), the kernel kills every process left in the namespace, so nothing outlives
  the call. The network namespace holds only its own loopback: the host's listeners, 127.0.0.1 included,
  and abstract unix sockets are out of reach.
- a root file system that is an empty, read-only tmpfs (``--remount-ro /``) holding only what the
  interpreter needs, bound read-only at its own path: the interpreter binary, its standard library (with
  ``site-packages`` hidden under an empty tmpfs) and the shared libraries that ``ldd`` lists for the binary
  and its extension modules. No ``/etc``, no home directory, no ``/tmp``, no project files. A fresh
  ``/proc`` (this namespace's processes only), a minimal ``/dev``, and an empty tmpfs work directory
  ``/work`` of ``limits.work_mb`` MiB are the only other mounts.
- an unprivileged identity, uid/gid 65534 (``nobody``). As root, bubblewrap runs without a user namespace
  and keeps only ``CAP_SETUID``/``CAP_SETGID`` for the child (``NoNewPrivs`` is set), and the runner drops
  to 65534 as its first statement, before it reads the payload: the kernel then enforces
  ``RLIMIT_NPROC`` against a real unprivileged uid (a fork bomb stops at ``limits.max_processes``), which
  it would not for a user namespace whose 65534 maps back to root. As any other user, bubblewrap makes a
  user namespace mapping 65534 to that user, and disables nested user namespaces.
- in both modes, a seccomp filter (:mod:`synth.envs.seccomp`, ``--seccomp FD``) that refuses nested
  namespaces, mounts, the kernel keyring, io_uring, ptrace and bpf, and kills a process that opens any socket
  but ``AF_UNIX`` (so vsock and the network, whose attempt the kernel then records).

Everything is fail-closed: :func:`jail_problem` names what is missing (no bubblewrap, namespaces refused,
no seccomp filter, an interpreter that cannot start inside), and :func:`synth.envs.sandbox.run_calls` raises
:class:`SandboxError` instead of running generated code without the jail.
"""

from __future__ import annotations

import functools
import glob
import os
import shutil
import subprocess
import sys
import sysconfig

from synth.envs.errors import SandboxError
from synth.envs.models import SandboxLimits
from synth.envs.seccomp import filter_bytes, seccomp_problem

__all__ = ["JAIL_UID", "WORK_DIR", "bwrap_argv", "caller_is_root", "interpreter_paths", "jail_problem",
           "require_jail", "INSTALL_HINT"]

JAIL_UID = 65534
"""uid and gid of jailed tool code (``nobody``)."""
WORK_DIR = "/work"
"""The jailed child's working directory: an empty tmpfs, the only writable place."""
INSTALL_HINT = ("install bubblewrap and libseccomp2 (`make install` runs synth/envs/sandbox-setup.sh; or "
                "apt-get install bubblewrap libseccomp2); --insecure-in-process runs generated code without isolation, "
                "for debugging only")

_SKIP_MODULES = ("_tkinter",)  # GUI toolkit: pulls in X11 libraries no tool may use


def _bwrap() -> str | None:
    return shutil.which("bwrap") or (os.path.exists("/usr/bin/bwrap") and "/usr/bin/bwrap") or None


def _ldd(files: list[str]) -> set[str]:
    """Absolute paths of the shared libraries ``files`` load (``ldd``; the dynamic loader included)."""
    try:
        out = subprocess.run(["ldd", *files], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SandboxError(f"cannot list the interpreter's shared libraries (ldd): {exc}") from exc
    libs: set[str] = set()
    for line in out.splitlines():
        line = line.strip()
        if line.endswith(":"):  # "FILE:" header before each file's list
            continue
        target = line.split("=>", 1)[1] if "=>" in line else line
        path = target.split("(", 1)[0].strip()
        if path.startswith("/"):
            libs.add(path)
    return libs


@functools.lru_cache(maxsize=1)
def interpreter_paths() -> tuple[str, ...]:
    """The host paths the jailed interpreter needs: binary, standard library, shared libraries (sorted).

    Computed once per process (``ldd`` over the binary and every extension module, about 0.5 s).
    """
    exe = os.path.realpath(sys.executable)
    stdlib = sysconfig.get_paths()["stdlib"]
    dynload = sysconfig.get_config_var("DESTSHARED") or os.path.join(stdlib, "lib-dynload")
    modules = [m for m in glob.glob(os.path.join(dynload, "*.so"))
               if not os.path.basename(m).startswith(_SKIP_MODULES)]
    return tuple(sorted({exe, os.path.realpath(stdlib), *_ldd([exe, *modules])}))


def _expose(path: str, ops: list[tuple[str, str, str]], seen: set[str]) -> None:
    """Append the mount ops that make ``path`` resolve inside the jail as it does on the host.

    Symlinked components (``/lib -> usr/lib``, ``/lib64/ld-linux...``) are recreated as symlinks and their
    targets exposed in turn; the final real file or directory is bound read-only at its real path.
    """
    parts = path.strip("/").split("/")
    cur = ""
    for i, comp in enumerate(parts):
        nxt = f"{cur}/{comp}"
        if os.path.islink(nxt):
            if nxt not in seen:
                seen.add(nxt)
                ops.append(("--symlink", os.readlink(nxt), nxt))
            rest = "/".join(parts[i + 1:])
            real = os.path.realpath(nxt)
            _expose(f"{real}/{rest}" if rest else real, ops, seen)
            return
        cur = nxt
    if cur not in seen:
        seen.add(cur)
        ops.append(("--ro-bind", cur, cur))


def caller_is_root() -> bool:
    """Whether bubblewrap runs in its root mode here (tests pin the other mode by replacing this)."""
    return os.geteuid() == 0


def bwrap_argv(limits: SandboxLimits, *, bwrap: str = "/usr/bin/bwrap", paths: tuple[str, ...] | None = None,
               as_root: bool | None = None, seccomp_fd: int | None = None) -> list[str]:
    """The bubblewrap command line up to (not including) the interpreter command.

    Parameters
    ----------
    limits : SandboxLimits
        ``work_mb`` sizes the work tmpfs.
    bwrap : str
        The bubblewrap binary.
    paths : tuple of str, optional
        Host paths to expose read-only (default :func:`interpreter_paths`).
    as_root : bool, optional
        Whether the caller is root (default: ``os.geteuid() == 0``): root runs without a user namespace and
        lets the runner drop to :data:`JAIL_UID` itself; anyone else gets a user namespace with that uid.
    seccomp_fd : int, optional
        A descriptor holding the compiled filter (:func:`synth.envs.seccomp.filter_bytes`), inherited by
        bubblewrap, which installs it just before it starts the interpreter.
    """
    paths = interpreter_paths() if paths is None else paths
    as_root = caller_is_root() if as_root is None else as_root
    ops: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    for p in paths:
        _expose(p, ops, seen)
    argv = [bwrap, "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
            "--hostname", "toolscale-sandbox", "--die-with-parent", "--new-session"]
    if seccomp_fd is not None:
        argv += ["--seccomp", str(seccomp_fd)]
    if as_root:
        argv += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        argv += ["--unshare-user", "--uid", str(JAIL_UID), "--gid", str(JAIL_UID), "--disable-userns"]
    # Parent folders of the binds would copy their host mode (/root is 0700): make them traversable first.
    parents: set[str] = set()
    for _, _, dest in ops:
        d = os.path.dirname(dest)
        while d not in ("/", ""):
            parents.add(d)
            d = os.path.dirname(d)
    bound = {dest for op, _, dest in ops if op == "--ro-bind"}
    for d in sorted(parents - bound, key=lambda x: (x.count("/"), x)):
        argv += ["--perms", "0555", "--dir", d]
    for op, src, dest in ops:
        argv += [op, src, dest]
    stdlib = os.path.realpath(sysconfig.get_paths()["stdlib"])
    site = os.path.join(stdlib, "site-packages")
    if stdlib in bound and os.path.isdir(site):
        argv += ["--tmpfs", site, "--remount-ro", site]
    argv += ["--proc", "/proc", "--dev", "/dev",
             "--perms", "1777", "--size", str(int(limits.work_mb) << 20), "--tmpfs", WORK_DIR,
             "--remount-ro", "/", "--chdir", WORK_DIR]
    return argv


_PROBE = ("import os, sys\n"
          "if os.getuid() == 0:\n"
          "    os.setgroups([]); os.setresgid({uid}, {uid}, {uid}); os.setresuid({uid}, {uid}, {uid})\n"
          "seccomp = [l.split()[1] for l in open('/proc/self/status') if l.startswith('Seccomp:')]\n"
          "print(os.getuid(), os.getpid(), seccomp[0] if seccomp else '-', sorted(os.listdir('/')))\n")


@functools.lru_cache(maxsize=1)
def jail_problem() -> str:
    """Empty when the jail works on this machine, else one line saying why not (checked once per process).

    Starts one jailed interpreter and checks that it runs as :data:`JAIL_UID`, as PID 2 of its own PID
    namespace (bubblewrap's reaper is PID 1), under the seccomp filter (``Seccomp: 2``), and sees only the
    jail's root folder.
    """
    bwrap = _bwrap()
    if bwrap is None:
        return "bubblewrap (bwrap) is not installed"
    if seccomp_problem():
        return seccomp_problem()
    import tempfile

    exe = os.path.realpath(sys.executable)
    try:
        with tempfile.TemporaryFile() as flt:
            flt.write(filter_bytes())
            flt.seek(0)
            argv = bwrap_argv(SandboxLimits(), bwrap=bwrap, seccomp_fd=flt.fileno())
            res = subprocess.run([*argv, exe, "-S", "-s", "-P", "-B", "-c", _PROBE.format(uid=JAIL_UID)],
                                 capture_output=True, text=True, timeout=30, env={"PATH": "/usr/bin:/bin"},
                                 pass_fds=(flt.fileno(),))
    except SandboxError as exc:
        return str(exc)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap did not start: {exc}"
    if res.returncode != 0:
        tail = (res.stderr.strip().splitlines() or [f"exit status {res.returncode}"])[-1]
        return f"bubblewrap could not set up the sandbox: {tail[:200]}"
    fields = res.stdout.split(" ", 3)
    if len(fields) < 4 or fields[0] != str(JAIL_UID) or fields[1] != "2" or "'etc'" in fields[3]:
        return f"the sandbox probe saw an unexpected identity or file system: {res.stdout.strip()[:200]}"
    if fields[2] != "2":
        return f"the sandbox probe ran without its seccomp filter (Seccomp: {fields[2]})"
    return ""


def require_jail() -> str:
    """The bubblewrap binary, or :class:`SandboxError` naming why generated code cannot be isolated."""
    problem = jail_problem()
    if problem:
        raise SandboxError(f"cannot isolate generated tool code: {problem}; {INSTALL_HINT}")
    return _bwrap() or "bwrap"
