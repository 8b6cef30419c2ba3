"""Private staging folders of bulk imports, and the removal of those a killed import left behind.

:func:`grid.import_store.stage_table` writes its validated rows to ``<tmp>/toolscale-stage-XXXX/stage.duckdb``.
The folder holds an ``owner.lock`` that the importing process keeps ``flock``-ed while it lives; the kernel drops
the lock when the process dies, however it dies. The next import removes every folder whose lock nobody holds.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
import time
from pathlib import Path

__all__ = ["STAGE_PREFIX", "new_stage", "release_stage", "sweep_stale_stages"]

STAGE_PREFIX = "toolscale-stage-"
_OWNER = "owner.lock"
_HELD: dict[str, int] = {}  # stage folder -> descriptor of its owner lock, held while this process lives


def new_stage() -> Path:
    """A fresh staging folder whose ``owner.lock`` this process holds (``flock``) until it exits.

    First removes the staging folders of processes that died (killed mid-import): a lock nobody holds means the
    owner is gone; a folder without a lock file is removed once it is a minute old.
    """
    sweep_stale_stages()
    folder = Path(tempfile.mkdtemp(prefix=STAGE_PREFIX))
    fd = os.open(folder / _OWNER, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    _HELD[str(folder)] = fd
    return folder


def sweep_stale_stages(root: str | Path | None = None, *, grace_s: float = 60.0) -> list[str]:
    """Remove staging folders under ``root`` (default: the temp folder) left by dead processes; returns them."""
    removed = []
    for folder in Path(root or tempfile.gettempdir()).glob(STAGE_PREFIX + "*"):
        if str(folder) in _HELD or not folder.is_dir() or folder.is_symlink():
            continue
        try:
            fd = os.open(folder / _OWNER, os.O_RDWR | os.O_CLOEXEC)
        except FileNotFoundError:
            try:
                if time.time() - folder.stat().st_mtime < grace_s:
                    continue  # being created right now
            except OSError:
                continue
            fd = None
        except OSError:
            continue
        try:
            if fd is not None:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held by a live owner: BlockingIOError
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(str(folder))
        except OSError:
            pass
        finally:
            if fd is not None:
                os.close(fd)
    return removed


def release_stage(folder: str) -> None:
    """Remove ``folder`` and drop this process's lock on it."""
    shutil.rmtree(folder, ignore_errors=True)
    fd = _HELD.pop(folder, None)
    if fd is not None:
        os.close(fd)
