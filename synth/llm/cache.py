"""A content-addressed response cache on disk, safe across processes (SLURM array tasks share it).

Layout: ``ROOT/ab/abcdef....json``, one file per request, named by :func:`request_key` (sha256 hex of
the canonical JSON of the request). A file holds the endpoint's whole response body. Writes go to a
unique temporary file in the same folder and are published with ``os.replace``, which is atomic on
POSIX file systems (NFS included, within one folder): a reader sees either no file or a whole one;
two processes that write the same key write the same request's reply and the last one wins. No lock
is taken, so a crashed writer never blocks others. A file that does not parse (a truncated copy from
another tool) counts as a miss and is overwritten.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from toolscale.files import atomic_write_text

__all__ = ["ResponseCache", "request_key", "default_cache_dir", "CACHE_ENV"]

CACHE_ENV = "TOOLSCALE_LLM_CACHE"
"""Environment variable naming the cache folder (overrides the default)."""


def default_cache_dir() -> Path:
    """``$TOOLSCALE_LLM_CACHE``, else ``$XDG_CACHE_HOME/toolscale/llm``, else ``~/.cache/toolscale/llm``."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "toolscale" / "llm"


def request_key(base_url: str, body: dict[str, Any], salt: str = "") -> str:
    """The content address of one request: sha256 hex of ``{"url", "body", "salt"}`` as canonical JSON.

    ``base_url`` is part of the key (two servers may serve different models under one name); the API
    key is not. ``salt`` separates requests that are meant to differ although their bodies match
    (e.g. the k-th of several samples at temperature > 0).
    """
    blob = json.dumps({"url": base_url.rstrip("/"), "body": body, "salt": salt}, sort_keys=True,
                      ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


class ResponseCache:
    """Response bodies by request key under ``root`` (created on first write)."""

    def __init__(self, root: str | Path):
        self.root = Path(root).expanduser()

    def path(self, key: str) -> Path:
        """The file of ``key``: ``root/key[:2]/key.json``."""
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored body of ``key``, or None (missing or unreadable)."""
        try:
            data = json.loads(self.path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            return None
        return data if isinstance(data, dict) else None

    def put(self, key: str, body: dict[str, Any]) -> None:
        """Store ``body`` under ``key`` atomically (see the module docstring)."""
        atomic_write_text(self.path(key), json.dumps(body, sort_keys=True, ensure_ascii=False))

    def __len__(self) -> int:
        """Entries stored."""
        return sum(1 for _ in self.root.glob("??/*.json")) if self.root.is_dir() else 0
