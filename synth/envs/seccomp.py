"""The jail's system-call filter: a compiled seccomp program that bubblewrap installs (``bwrap --seccomp FD``).

Namespaces and a read-only root are not enough on their own: jailed code could make a *nested* user namespace
(``unshare(CLONE_NEWUSER|CLONE_NEWNS)``), become root in it and mount its own tmpfs past ``work_mb``; reach the
machine's kernel keyring (shared by every process of uid 65534, so by every jail); or open a vsock socket (the
VM's vsock port space is not namespaced). The filter closes these at the kernel:

- ``EPERM`` for every call that makes or enters a namespace or mounts (``unshare``, ``setns``, ``clone`` with
  any ``CLONE_NEW*`` flag, ``mount`` and the new mount API), the kernel keyring (``keyctl``, ``add_key``,
  ``request_key``), ``io_uring_*``, ``ptrace`` and the calls that read or write another process's memory or
  descriptors, ``bpf``, ``perf_event_open``, ``userfaultfd``, module and kexec loading.
- ``ENOSYS`` for ``clone3``, whose flags sit in a struct a filter cannot read: the C library then falls back
  to ``clone``, whose flags the filter checks.
- the *death* of the process (``SECCOMP_RET_KILL_PROCESS``, seen as ``SIGSYS``) for a socket of any family
  but ``AF_UNIX`` (so ``AF_INET``, ``AF_INET6``, ``AF_NETLINK``, ``AF_VSOCK``...): a network attempt is
  recorded by the kernel, and tool code cannot catch, hide or clear it.

Built with libseccomp (through ``pyseccomp``, a ctypes binding; libseccomp2 ships with every Debian since apt
depends on it), which resolves names to numbers for the machine's architecture and kills a call made through
another ABI (x32, i386 ``int 0x80``).
"""

from __future__ import annotations

import errno
import functools
import tempfile

__all__ = ["DENIED", "NAMESPACE_FLAGS", "filter_bytes", "seccomp_problem"]

DENIED = ("unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen",
          "fsconfig", "fsmount", "fspick", "mount_setattr", "keyctl", "add_key", "request_key",
          "io_uring_setup", "io_uring_enter", "io_uring_register", "ptrace", "process_vm_readv",
          "process_vm_writev", "pidfd_getfd", "kcmp", "bpf", "perf_event_open", "userfaultfd", "kexec_load",
          "kexec_file_load", "init_module", "finit_module", "delete_module", "open_by_handle_at",
          "name_to_handle_at", "swapon", "swapoff", "reboot", "acct", "quotactl", "syslog", "lookup_dcookie")
"""System calls that fail with ``EPERM`` in the jail."""

REQUIRED = ("unshare", "setns", "mount", "keyctl", "add_key", "request_key", "io_uring_setup", "ptrace", "bpf")
"""Names that must resolve on this architecture, else the filter is refused (fail closed)."""

NAMESPACE_FLAGS = {"CLONE_NEWNS": 0x00020000, "CLONE_NEWCGROUP": 0x02000000, "CLONE_NEWUTS": 0x04000000,
                   "CLONE_NEWIPC": 0x08000000, "CLONE_NEWUSER": 0x10000000, "CLONE_NEWPID": 0x20000000,
                   "CLONE_NEWNET": 0x40000000, "CLONE_NEWTIME": 0x00000080}
"""``clone`` flags that make a namespace; ``clone`` with any of them fails with ``EPERM``."""

AF_UNIX = 1


def _build() -> bytes:
    import pyseccomp as sc  # ctypes over libseccomp.so.2; raises at import when the library is missing

    flt = sc.SyscallFilter(sc.ALLOW)
    for name in DENIED:
        try:
            flt.add_rule(sc.ERRNO(errno.EPERM), name)
        except (OSError, ValueError, RuntimeError):
            if name in REQUIRED:
                raise
    flt.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    for bit in NAMESPACE_FLAGS.values():
        flt.add_rule(sc.ERRNO(errno.EPERM), "clone", sc.Arg(0, sc.MASKED_EQ, bit, bit))
    flt.add_rule(sc.KILL_PROCESS, "socket", sc.Arg(0, sc.NE, AF_UNIX))
    with tempfile.TemporaryFile() as fh:  # libseccomp exports to a descriptor
        flt.export_bpf(fh)
        fh.seek(0)
        return fh.read()


@functools.lru_cache(maxsize=1)
def _cached() -> tuple[bytes, str]:
    try:
        data = _build()
    except Exception as exc:  # noqa: BLE001 - any failure to build the filter means: no jail (fail closed)
        return b"", f"cannot build the jail's seccomp filter (libseccomp via pyseccomp): {exc}"
    if not data or len(data) % 8:
        return b"", f"the seccomp filter came out malformed ({len(data)} bytes, not whole instructions)"
    return data, ""


def filter_bytes() -> bytes:
    """The compiled filter: ``struct sock_filter`` instructions, 8 bytes each, as ``bwrap --seccomp`` reads them.

    Raises
    ------
    RuntimeError
        When it cannot be built (see :func:`seccomp_problem`).
    """
    data, problem = _cached()
    if problem:
        raise RuntimeError(problem)
    return data


def seccomp_problem() -> str:
    """Empty when the filter builds here, else one line saying why not."""
    return _cached()[1]
