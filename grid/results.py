"""Result files: what a job writes instead of touching the registry.

A job writes ``<folder>/<run_id>.result.json`` with :func:`write_result`: to a
temporary file in the same folder, fsynced, then renamed, so a reader sees the
whole file or none. :func:`read_results` parses a folder of them and reports the
files it cannot use (truncated, not JSON, wrong shape) without failing.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from pydantic import ValidationError

from grid.models import RunResult
from toolscale.files import atomic_write_text

__all__ = ["RESULT_SUFFIX", "RESULT_MAX_BYTES", "result_path", "write_result", "read_results"]

RESULT_SUFFIX = ".result.json"
RESULT_MAX_BYTES = 16 << 20
"""Largest result file read (bytes): a job's result is a few KiB; anything past this is not one."""


def result_path(folder: str | Path, run_id: str) -> Path:
    """Where the result of ``run_id`` lives under ``folder``."""
    return Path(folder) / f"{run_id}{RESULT_SUFFIX}"


def write_result(folder: str | Path, result: RunResult) -> Path:
    """Write ``result`` atomically to ``folder/<run_id>.result.json``; returns its path."""
    return atomic_write_text(result_path(folder, result.run_id), result.model_dump_json(indent=1))


def read_results(folder: str | Path) -> tuple[list[tuple[RunResult, str, str]], list[str]]:
    """Parse every result file under ``folder`` (recursively).

    Returns ``([(result, sha256 of the bytes, path), ...], problems)``; each problem is
    one line naming a file that was not usable and why. Only regular files of at most
    :data:`RESULT_MAX_BYTES` are read: a FIFO would block forever, ``/dev/zero`` never ends.
    """
    good: list[tuple[RunResult, str, str]] = []
    problems: list[str] = []
    root = Path(folder)
    if not root.exists():
        return good, [f"{root}: no such folder"]
    for path in sorted(root.rglob(f"*{RESULT_SUFFIX}")):
        data, problem = _read_regular(path)
        if problem:
            problems.append(f"{path}: {problem}")
            continue
        try:
            result = RunResult.model_validate_json(data)
        except ValidationError as err:
            first = err.errors()[0]
            kind = "truncated or not JSON" if first["type"] == "json_invalid" else first["msg"]
            problems.append(f"{path}: not a valid result file ({kind})")
            continue
        good.append((result, hashlib.sha256(data).hexdigest(), str(path)))
    return good, problems


def _read_regular(path: Path) -> tuple[bytes, str]:
    """``(bytes, "")`` of a regular file of at most :data:`RESULT_MAX_BYTES`, else ``(b"", why not)``.

    Opened non-blocking and checked on the open descriptor, so a file swapped for a FIFO or a device between
    the listing and the read is refused too.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        return b"", f"cannot be read ({exc.strerror or exc})"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return b"", "not a regular file (a FIFO, device or socket); skipped"
        if st.st_size > RESULT_MAX_BYTES:
            return b"", f"{st.st_size:,} bytes, more than a result file holds ({RESULT_MAX_BYTES:,}); skipped"
        chunks, total = [], 0
        while chunk := os.read(fd, 1 << 20):
            total += len(chunk)
            if total > RESULT_MAX_BYTES:
                return b"", f"more than {RESULT_MAX_BYTES:,} bytes (still growing); skipped"
            chunks.append(chunk)
        return b"".join(chunks), ""
    except OSError as exc:
        return b"", f"cannot be read ({exc.strerror or exc})"
    finally:
        os.close(fd)
