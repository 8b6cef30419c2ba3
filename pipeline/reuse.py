"""Stage outputs that runs of one experiment share: published once to the cache, seeded into later workdirs.

Runs that differ only in a stage axis level (``grpo_steps`` 0 and 6 at one size, data point and seed) train the
same SFT model and the same warm start, and build the same environments: deterministic on the CPU, identical by
construction. The first run to finish those stages **publishes** its folders to ``cache/<key>`` (copied, then
one atomic rename; a second publisher of the same key keeps the first copy); a later run **reuses** them by
copying them into its own workdir before training, where :func:`train.sft.train_sft` finds an identical finished
run (same ``run.json`` identity) and returns its stored accounting without training again. Each run still reports
the FLOPs of every stage it depends on; only the wall time is saved (``plan.reused`` says which runs reused).

The key hashes everything the stages depend on (dataset, shared tokenizer, rung, steps, seed, learning rate,
the environment and warm-start settings); nothing about the stage axis whose arms share the folders.

Arms that run at the same time (a cluster, ``max_parallel`` > 1) would each train the shared stages before
either publishes. :func:`producing` serialises them: a run holds the key's lock (``cache/<key>.lock``,
:func:`slurm.locks.exclusive`: heartbeat, broken when its holder dies) while it reuses or trains and publishes
the shared stages, so a second arm waits and then reuses what the first published.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["stage_key", "reuse", "publish", "file_digest", "producing"]

COMPLETE = ".complete"


def stage_key(prefix: str, payload: dict[str, Any]) -> str:
    """``prefix`` + 16 hex digits of the SHA-256 of ``payload`` as canonical JSON."""
    text = json.dumps(payload, sort_keys=True, default=str)
    return prefix + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def file_digest(path: str | Path) -> str:
    """SHA-256 of a file's bytes (16 hex digits)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def _copy(src: Path, dst: Path) -> None:
    if src.is_dir():
        shutil.copytree(src, dst, dirs_exist_ok=True, ignore=shutil.ignore_patterns("checkpoints"))
    else:
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)


def reuse(cache: Path | None, key: str, names: list[str], workdir: Path) -> bool:
    """Copy ``cache/key/<name>`` into ``workdir/<name>`` for every name when the cache holds a complete copy and
    the workdir has none of them yet; True when it did."""
    folder = None if cache is None else Path(cache) / key
    if folder is None or not (folder / COMPLETE).is_file() or any((workdir / n).exists() for n in names):
        return False
    for n in names:
        _copy(folder / n, workdir / n)
    return True


def publish(cache: Path | None, key: str, names: list[str], workdir: Path) -> None:
    """Publish ``workdir/<name>`` for every name as ``cache/key`` (atomic; an existing complete copy is kept)."""
    if cache is None:
        return
    final = Path(cache) / key
    if (final / COMPLETE).is_file():
        return
    tmp = Path(cache) / f".{key}.tmp-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    try:
        for n in names:
            _copy(workdir / n, tmp / n)
        (tmp / COMPLETE).write_text(key, encoding="utf-8")
        try:
            os.replace(tmp, final)
        except OSError:  # another run published the same key first (a non-empty folder is not replaced)
            pass
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


@contextmanager
def producing(cache: Path | None, key: str | None) -> Iterator[None]:
    """Hold ``cache/<key>.lock`` for the block: one run at a time produces (or reuses) the stages of ``key``.

    No lock without a cache or a key. A run that has to wait says so once on stderr, naming the holder.
    """
    if cache is None or key is None:
        yield
        return
    from slurm.locks import exclusive, owner_of

    lock = Path(cache) / f"{key}.lock"
    holder = owner_of(lock)
    if holder is not None:
        print(f"waiting for the shared stages {key}: produced by job {holder.get('job')} on {holder.get('host')} "
              f"(pid {holder.get('pid')})", file=sys.stderr, flush=True)
    with exclusive(lock, what=f"shared stages {key}"):
        yield

