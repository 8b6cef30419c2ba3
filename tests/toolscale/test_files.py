"""toolscale.files: the one atomic write (whole file or none, fsync-ed, the error names the target)."""

from __future__ import annotations

import errno
import json
import os

import pytest

from toolscale.files import atomic_write_bytes, atomic_write_json, atomic_write_text


def test_writes_whole_files_and_creates_folders(tmp_path):
    target = tmp_path / "a" / "b" / "x.json"
    assert atomic_write_json(target, {"b": 1, "a": [2]}) == target
    assert json.loads(target.read_text()) == {"a": [2], "b": 1}
    atomic_write_text(target, "new")
    assert target.read_text() == "new" and sorted(p.name for p in target.parent.iterdir()) == ["x.json"]


def test_a_failed_write_keeps_the_old_file_leaves_no_temp_and_names_the_target(tmp_path, monkeypatch):
    target = tmp_path / "report.md"
    target.write_text("old")

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError) as err:
        atomic_write_bytes(target, b"new" * 1000)
    assert err.value.errno == errno.ENOSPC and err.value.filename == str(target)
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["report.md"]


def test_an_interrupted_write_leaves_no_temp(tmp_path, monkeypatch):
    def interrupted(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        atomic_write_text(tmp_path / "x.txt", "data")
    assert list(tmp_path.iterdir()) == []


def test_a_symlink_is_written_through_and_modes_follow_the_umask_or_the_old_file(tmp_path):
    import os
    import stat

    real = tmp_path / "real.csv"
    real.write_text("old")
    link = tmp_path / "link.csv"
    link.symlink_to(real)
    atomic_write_text(link, "new")
    assert link.is_symlink() and real.read_text() == "new"
    os.chmod(real, 0o640)
    atomic_write_text(real, "newer")
    assert stat.S_IMODE(real.stat().st_mode) == 0o640  # the replaced file's mode is kept
    old = os.umask(0o027)
    try:
        atomic_write_text(tmp_path / "fresh.csv", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "fresh.csv").stat().st_mode) == 0o640  # 0666 & ~umask, not mkstemp's 0600
