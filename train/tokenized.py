"""Tokenised training sets as flat arrays, cached on disk: the runs that share a dataset and a tokenizer
tokenise it once.

:func:`train.data.tokenize_rows` renders every conversation through the chat template (Jinja) and tokenises
it with its assistant mask: several seconds for a thousand conversations on a CPU core, the largest set-up
cost of a small run. A design trains many runs on one dataset (every width and token multiple of a recipe)
with the experiment's one tokenizer, so the result is the same for all of them. :func:`cached_tokenize`
keys it by everything it depends on: the dataset's content hash, the tokenizer's fingerprint (its whole
pipeline and chat template, :func:`train.tokenizer.tokenizer_fingerprint`), ``max_len`` and ``seed`` (which
draws the loss weights of repaired calls); an entry is only read back for identical inputs, so the cache is
exact. Files are ``<folder>/<key>.npz``, written atomically (:mod:`toolscale.files`); an unreadable file is
recomputed.

:class:`TokenizedArrays` keeps the examples as three flat arrays, from which :meth:`TokenizedArrays.dataset`
builds the trainer's Arrow table directly (no Python list per token).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from train.data import TokenizedData, tokenize_rows

__all__ = ["TokenizedArrays", "cached_tokenize", "cache_key", "CACHE_VERSION", "IGNORE_INDEX"]

CACHE_VERSION = 1
"""Format of the cache files; part of every key."""
IGNORE_INDEX = -100
"""Label of a token outside the loss (the assistant mask's zeros)."""
COUNTS = ("n_rows", "n_truncated", "n_dropped", "tokens", "loss_tokens")
"""The counts of :class:`train.data.TokenizedData` kept beside the arrays."""


@dataclass(frozen=True)
class TokenizedArrays:
    """The examples of :func:`train.data.tokenize_rows` as flat arrays.

    ``ids`` (int32, shape ``(T,)``) and ``masks`` (int8, ``(T,)``) concatenate the examples; example ``i`` is
    ``[offsets[i], offsets[i + 1])`` (``offsets``: int64, ``(E + 1,)``); ``counts`` holds :data:`COUNTS`.
    """

    ids: Any
    masks: Any
    offsets: Any
    counts: dict[str, int]

    @property
    def n_examples(self) -> int:
        return len(self.offsets) - 1

    @classmethod
    def of(cls, data: TokenizedData) -> TokenizedArrays:
        """The arrays of a :func:`train.data.tokenize_rows` result."""
        import numpy as np

        lengths = [len(e["input_ids"]) for e in data["examples"]]
        offsets = np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)]).astype(np.int64)
        ids = np.fromiter((t for e in data["examples"] for t in e["input_ids"]), dtype=np.int32, count=int(offsets[-1]))
        masks = np.fromiter((m for e in data["examples"] for m in e["assistant_masks"]), dtype=np.int8,
                            count=int(offsets[-1]))
        return cls(ids=ids, masks=masks, offsets=offsets, counts={k: int(data[k]) for k in COUNTS})

    def examples(self) -> list[dict[str, list[int]]]:
        """The examples as :func:`train.data.tokenize_rows` returns them (``input_ids``, ``assistant_masks``)."""
        return [{"input_ids": self.ids[a:b].tolist(), "assistant_masks": self.masks[a:b].tolist()}
                for a, b in zip(self.offsets[:-1], self.offsets[1:])]

    def dataset(self, *, all_tokens: bool = False) -> Any:
        """A ``datasets.Dataset`` with ``input_ids`` and ``labels`` (the id under the mask, else
        :data:`IGNORE_INDEX`): what TRL's dataset preparation makes of pre-tokenised, truncated rows.
        ``all_tokens``: every label is its id (the loss on every token, as in language modelling)."""
        import numpy as np
        import pyarrow as pa
        from datasets import Dataset
        from datasets.table import InMemoryTable

        offsets = pa.array(self.offsets, type=pa.int32())  # < 2^31 tokens in a training set
        keep = np.ones_like(self.masks, dtype=bool) if all_tokens else self.masks.astype(bool)
        labels = np.where(keep, self.ids, np.int32(IGNORE_INDEX)).astype(np.int32)
        table = pa.table({"input_ids": pa.ListArray.from_arrays(offsets, pa.array(self.ids)),
                          "labels": pa.ListArray.from_arrays(offsets, pa.array(labels))})
        return Dataset(InMemoryTable(table))


def cache_key(dataset_id: str, fingerprint: str, max_len: int, seed: int) -> str:
    """``tok-`` + 20 hex digits of sha256 over the inputs of :func:`train.data.tokenize_rows`."""
    text = json.dumps({"v": CACHE_VERSION, "dataset": dataset_id, "tokenizer": fingerprint, "max_len": max_len,
                       "seed": seed}, sort_keys=True)
    return "tok-" + hashlib.sha256(text.encode()).hexdigest()[:20]


def _load(path: Path) -> TokenizedArrays | None:
    import numpy as np

    try:
        with np.load(path) as f:
            return TokenizedArrays(ids=f["ids"], masks=f["masks"], offsets=f["offsets"],
                                   counts={k: int(v) for k, v in json.loads(str(f["counts"])).items()})
    except (OSError, ValueError, KeyError):
        return None


def _save(path: Path, arrays: TokenizedArrays) -> None:
    import io

    import numpy as np

    from toolscale.files import atomic_write_bytes

    buf = io.BytesIO()
    np.savez(buf, ids=arrays.ids, masks=arrays.masks, offsets=arrays.offsets, counts=json.dumps(arrays.counts))
    atomic_write_bytes(path, buf.getvalue())


def cached_tokenize(rows: list[dict[str, Any]] | Callable[[], list[dict[str, Any]]], tokenizer: Any, max_len: int,
                    *, seed: int, dataset_id: str, folder: str | Path | None) -> tuple[TokenizedArrays, bool]:
    """:func:`train.data.tokenize_rows` through the cache in ``folder``; returns ``(arrays, read_from_cache)``.

    ``rows`` is a list of rows, or a callable returning them (called on a miss only). Without ``folder``, or
    for a tokenizer that cannot be fingerprinted, it tokenises every time.
    """
    from train.tokenizer import tokenizer_fingerprint

    fingerprint = tokenizer_fingerprint(tokenizer) if folder is not None else None
    path = Path(folder) / f"{cache_key(dataset_id, fingerprint, max_len, seed)}.npz" if fingerprint else None
    if path is not None and path.is_file():
        arrays = _load(path)
        if arrays is not None:
            return arrays, True
    arrays = TokenizedArrays.of(tokenize_rows(rows() if callable(rows) else rows, tokenizer, max_len, seed=seed))
    if path is not None:
        _save(path, arrays)
    return arrays, False
