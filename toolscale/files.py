"""Atomic file writes: the one way toolscale publishes a file (part of the kernel, imports nothing of the project).

A file is written to a temporary file in the same folder, flushed and fsync-ed, then renamed over
the target (``os.replace``, atomic on POSIX), and the folder is fsync-ed so the rename survives a
crash. Readers see the whole old file or the whole new one, never a cut one. A failed write (a full
disk, a file too large) removes the temporary file and raises ``OSError`` whose ``filename`` is the
target, so the one-line error names the file the user asked for.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["atomic_write_bytes", "atomic_write_text", "atomic_write_json"]


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` whole or not at all; creates missing parent folders; returns the path.

    A symlink is written through (its target is replaced, the link stays). The file keeps the mode of the one it
    replaces, or gets the umask's default for a new file (a temporary file is created 0600)."""
    path = Path(path)
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    target.parent.mkdir(parents=True, exist_ok=True)
    mode = target.stat().st_mode & 0o7777 if target.exists() else 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name[:64]}.", suffix=".tmp")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except OSError as err:
        Path(tmp).unlink(missing_ok=True)
        raise OSError(err.errno, err.strerror or str(err), str(path)) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(target.parent)
    return path


def _umask() -> int:
    """The process umask (read by setting it and putting it back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """:func:`atomic_write_bytes` of ``text`` in UTF-8."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | os.PathLike, obj: Any, **dumps: Any) -> Path:
    """:func:`atomic_write_text` of ``json.dumps(obj, **dumps)`` (default: indent 1, sorted keys)."""
    dumps = {"indent": 1, "sort_keys": True, "default": str, **dumps}
    return atomic_write_text(path, json.dumps(obj, **dumps))


def _fsync_dir(folder: Path) -> None:
    """Make a rename in ``folder`` durable (best effort: some filesystems refuse a folder fsync)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
