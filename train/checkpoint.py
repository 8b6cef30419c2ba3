"""Where a run keeps its checkpoints, and which one a resumed run picks up.

Layout of a run folder ``out_dir``::

    out_dir/
      config.json, model.safetensors, tokenizer.json, ...   the final model (from_pretrained-loadable)
      run.json                                              what the run is (dataset id, rung, steps, seed)
      train_stats.json                                      accounting of the finished run
      checkpoints/checkpoint-<step>/                        Trainer checkpoints (model, optimizer, RNG,
                                                            trainer_state.json, toolscale_accounting.json)
      snapshots/step-<step>/                                kept checkpoints (checkpoints as data): the model
                                                            and tokenizer at that step, snapshot.json (step,
                                                            tokens seen); the last one is ``out_dir`` itself
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from toolscale.config import kept_steps

__all__ = ["CHECKPOINT_DIR", "SNAPSHOT_DIR", "STATS_FILE", "RUN_FILE", "checkpoint_dir", "last_checkpoint",
           "clear_checkpoints", "snapshot_steps", "snapshot_dir"]

CHECKPOINT_DIR = "checkpoints"
"""Sub-folder of ``out_dir`` holding Trainer checkpoints."""
STATS_FILE = "train_stats.json"
"""Accounting written beside the final model."""
SNAPSHOT_DIR = "snapshots"
"""Sub-folder of ``out_dir`` holding the kept checkpoints (``step-<step>``)."""
RUN_FILE = "run.json"
"""Identity of the run in a folder (dataset id, rung, steps, seed), written before training starts."""

_CKPT_RE = re.compile(r"^checkpoint-(\d+)$")
_WEIGHTS = ("model.safetensors", "pytorch_model.bin", "model.safetensors.index.json")


def checkpoint_dir(out_dir: str | Path) -> Path:
    """``out_dir/checkpoints``."""
    return Path(out_dir) / CHECKPOINT_DIR


def _complete(folder: Path) -> bool:
    # A checkpoint cut short by preemption lacks its trainer state or weights: skip it.
    return (folder / "trainer_state.json").is_file() and any((folder / w).is_file() for w in _WEIGHTS)


def last_checkpoint(out_dir: str | Path) -> Path | None:
    """The complete checkpoint with the highest step under ``out_dir/checkpoints``, or None."""
    root = checkpoint_dir(out_dir)
    if not root.is_dir():
        return None
    found = [(int(m.group(1)), p) for p in root.iterdir() if p.is_dir() and (m := _CKPT_RE.match(p.name))]
    for _, folder in sorted(found, reverse=True):
        if _complete(folder):
            return folder
    return None


def clear_checkpoints(out_dir: str | Path) -> None:
    """Remove ``out_dir/checkpoints`` (a fresh start); nothing else in ``out_dir`` is touched."""
    root = checkpoint_dir(out_dir)
    if root.is_dir():
        shutil.rmtree(root)


def snapshot_steps(max_steps: int, k: int, spacing: str = "linear") -> list[int]:
    """The ``k`` steps whose checkpoints a run keeps, the last at ``max_steps``: evenly spaced (``linear``,
    ``round(i max_steps / k)`` for ``i = 1 .. k``) or each half the next (``log``); ``[]`` for ``k = 0``
    (:func:`toolscale.config.kept_steps`). ValueError when the run is too short for ``k`` of them."""
    return kept_steps(max_steps, k, spacing)


def snapshot_dir(out_dir: str | Path, step: int) -> Path:
    """``out_dir/snapshots/step-<step>``."""
    return Path(out_dir) / SNAPSHOT_DIR / f"step-{step}"
