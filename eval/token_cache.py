"""Tokenised benchmark requests cached on disk, per tokenizer: every run of an experiment encodes each item once.

Rendering a conversation through the chat template (Jinja) and tokenising it costs milliseconds per item;
an experiment scores the same items with the same tokenizer (its shared one) for every run and checkpoint.
A :class:`TokenCache` maps a request (its messages and tools, hashed) to what the transformers backend
computes from it: the scored ids with their assistant mask and UTF-8 byte count, the generation prompt's
ids, a text's token count. The file is ``<folder>/v1-<fingerprint>.json`` where the fingerprint
(:func:`train.tokenizer.tokenizer_fingerprint`, computed by the backend) hashes the tokenizer's whole
pipeline (vocabulary, merges, normalisation, added tokens) and its chat template, so an entry is only ever
read back by an identical tokenizer: the cache is exact, never approximate. Writers merge under a file lock
and replace the file atomically (:mod:`toolscale.files`); a missing or unreadable file is an empty cache.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from eval.models import ChatRequest

__all__ = ["TokenCache", "request_key", "CACHE_VERSION"]

CACHE_VERSION = 1
"""Format of the cache file (and of what the backend stores in it); part of the file's name."""

T = TypeVar("T")


def request_key(kind: str, request: ChatRequest | str) -> str:
    """``kind:`` + sha256 (20 hex digits) of a request's messages and tools (or of a text)."""
    text = request if isinstance(request, str) else json.dumps(
        {"messages": request.messages, "tools": request.tools}, sort_keys=True, ensure_ascii=False, default=str)
    return f"{kind}:{hashlib.sha256(text.encode('utf-8')).hexdigest()[:20]}"


class TokenCache:
    """Encodings of one tokenizer, loaded from and saved to ``folder`` (None: in memory only).

    ``hits`` and ``misses`` count lookups since loading (the benchmark reports them).
    """

    def __init__(self, folder: str | Path | None, fingerprint: str) -> None:
        self.path = Path(folder) / f"v{CACHE_VERSION}-{fingerprint}.json" if folder is not None else None
        self.fingerprint = fingerprint
        self.entries: dict[str, Any] = self._read() if self.path is not None else {}
        self.new: dict[str, Any] = {}
        self.hits = 0
        self.misses = 0

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))  # type: ignore[union-attr]
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict) or data.get("fingerprint") != self.fingerprint:
            return {}
        return dict(data.get("entries") or {})

    def get(self, key: str, compute: Callable[[], T]) -> T:
        """The stored value of ``key``, else ``compute()`` (stored as new; JSON-able values only)."""
        if key in self.entries:
            self.hits += 1
            return self.entries[key]
        self.misses += 1
        value = compute()
        self.entries[key] = self.new[key] = value
        return value

    def save(self) -> int:
        """Merge the new entries into the file (locked, atomic); returns how many were added. No-op in memory."""
        if self.path is None or not self.new:
            return 0
        from toolscale.files import atomic_write_text

        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_suffix(".lock"), "a+") as lock:
            try:
                fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            except OSError:  # a filesystem without flock: the last writer wins; a lost entry is recomputed
                pass
            merged = {**self._read(), **self.new}
            atomic_write_text(self.path, json.dumps({"version": CACHE_VERSION, "fingerprint": self.fingerprint,
                                                     "entries": merged}, separators=(",", ":")))
        added = len(self.new)
        self.new = {}
        return added
