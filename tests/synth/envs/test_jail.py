"""synth/envs/jail.py: the bubblewrap command line, the interpreter's files, and the fail-closed probe."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from synth.envs import jail
from synth.envs.errors import SandboxError
from synth.envs.models import SandboxLimits


def _pairs(argv: list[str], flag: str) -> list[tuple[str, str]]:
    return [(argv[i + 1], argv[i + 2]) for i, a in enumerate(argv) if a == flag]


def test_symlinked_components_are_recreated_and_real_files_bound(tmp_path: Path):
    real = tmp_path / "usr" / "lib"
    real.mkdir(parents=True)
    (real / "libx.so.1").write_text("")
    (tmp_path / "lib").symlink_to("usr/lib")
    (real / "libx.so").symlink_to("libx.so.1")
    argv = jail.bwrap_argv(SandboxLimits(), paths=(str(tmp_path / "lib" / "libx.so"),), as_root=True)
    assert _pairs(argv, "--symlink") == [("usr/lib", str(tmp_path / "lib")), ("libx.so.1", str(real / "libx.so"))]
    assert _pairs(argv, "--ro-bind") == [(str(real / "libx.so.1"), str(real / "libx.so.1"))]
    # every parent folder is created traversable before anything is bound into it
    dirs = [argv[i + 1] for i, a in enumerate(argv) if a == "--dir"]
    assert str(tmp_path) in dirs and str(real) in dirs
    assert argv.index("--dir") < argv.index("--ro-bind")


def test_namespaces_read_only_root_and_work_tmpfs():
    argv = jail.bwrap_argv(SandboxLimits(work_mb=8), paths=(), as_root=True)
    for flag in ("--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--die-with-parent",
                 "--new-session"):
        assert flag in argv
    assert argv[argv.index("--size") + 1] == str(8 << 20) and argv[argv.index("--size") + 2] == "--tmpfs"
    assert argv[-4:] == ["--remount-ro", "/", "--chdir", jail.WORK_DIR]
    assert "--bind" not in argv and "--dev-bind" not in argv  # nothing writable from the host


def test_root_keeps_only_setuid_caps_and_others_get_a_user_namespace():
    as_root = jail.bwrap_argv(SandboxLimits(), paths=(), as_root=True)
    assert "--unshare-user" not in as_root
    caps = [as_root[i + 1] for i, a in enumerate(as_root) if a == "--cap-add"]
    assert as_root[as_root.index("--cap-drop") + 1] == "ALL" and sorted(caps) == ["CAP_SETGID", "CAP_SETUID"]
    user = jail.bwrap_argv(SandboxLimits(), paths=(), as_root=False)
    assert "--cap-add" not in user and "--disable-userns" in user
    assert user[user.index("--uid") + 1] == str(jail.JAIL_UID) == user[user.index("--gid") + 1]


def test_interpreter_paths_hold_the_binary_stdlib_and_libc_but_no_site_packages():
    paths = jail.interpreter_paths()
    assert os.path.realpath(sys.executable) in paths
    assert any(os.path.basename(p).startswith("libc.so") for p in paths)
    assert not any("site-packages" in p or p.startswith(("/etc", "/home", "/tmp")) for p in paths)


@pytest.mark.integration
def test_the_jail_works_on_this_machine():
    assert jail.jail_problem() == ""


def test_a_broken_bubblewrap_fails_closed(monkeypatch):
    monkeypatch.setattr(jail, "_bwrap", lambda: "/bin/false")
    jail.jail_problem.cache_clear()
    try:
        assert "could not set up the sandbox" in jail.jail_problem()
        with pytest.raises(SandboxError, match="cannot isolate generated tool code.*--insecure-in-process"):
            jail.require_jail()
        monkeypatch.setattr(jail, "_bwrap", lambda: None)
        jail.jail_problem.cache_clear()
        assert jail.jail_problem() == "bubblewrap (bwrap) is not installed"
    finally:
        monkeypatch.undo()
        jail.jail_problem.cache_clear()


def test_the_seccomp_filter_is_passed_by_descriptor_and_built_whole():
    from synth.envs import seccomp

    argv = jail.bwrap_argv(SandboxLimits(), paths=(), as_root=True, seccomp_fd=7)
    assert argv[argv.index("--seccomp") + 1] == "7"
    assert "--seccomp" not in jail.bwrap_argv(SandboxLimits(), paths=(), as_root=True)
    data = seccomp.filter_bytes()
    assert seccomp.seccomp_problem() == "" and len(data) > 0 and len(data) % 8 == 0  # sock_filter: 8 bytes each


def test_no_seccomp_filter_fails_closed(monkeypatch):
    from synth.envs import seccomp

    monkeypatch.setattr(seccomp, "_cached", lambda: (b"", "cannot build the jail's seccomp filter: no libseccomp"))
    monkeypatch.setattr(jail, "seccomp_problem", seccomp.seccomp_problem)
    jail.jail_problem.cache_clear()
    try:
        assert "seccomp filter" in jail.jail_problem()
        with pytest.raises(SandboxError, match="seccomp filter.*--insecure-in-process"):
            jail.require_jail()
    finally:
        monkeypatch.undo()
        jail.jail_problem.cache_clear()
