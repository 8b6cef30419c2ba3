"""Probe kinds behind one interface (``[probe].kind``), registered lazily as ``"module:attr"``.

A probe is ``run(rows, provs, spec, target_train_flops, progress) -> ProbeRun``: it scores every action of
a dataset (``ActionScore.groundedness``, higher = more grounded; None for a failure, never grounded) and
says what it cost. Kinds:

- ``copy``: :func:`probes.copyprobe.run_copy`, training-free (the CPU default);
- ``lm``: :func:`probes.lmprobe.run_lm`, a tiny LM trained on the data, cross-fitted;
- ``hf:MODEL_DIR``: :func:`probes.hfprobe.run_hf`, any saved causal LM loaded with ``from_pretrained``.

Importing this module imports neither torch nor transformers.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from toolscale.config import PROBE_KINDS
from toolscale.errors import UsageError

if TYPE_CHECKING:  # pragma: no cover
    from probes.models import ActionScore, TrajectoryProvenance
    from probes.provenance import ParsedRow
    from toolscale.config import ProbeSpec

__all__ = ["ProbeRun", "Progress", "PROBES", "get_probe", "probe_key"]

Progress = Callable[[str, int, int], None]
"""``progress(stage, done, total)``."""


@dataclass
class ProbeRun:
    """What a probe returns: one score per action and its FLOP accounting inputs."""

    scores: list["ActionScore"]
    params: float = 0.0
    """Probe parameters N (0 for ``copy``)."""
    train_tokens: float = 0.0
    """Non-padding tokens the probe trained on."""
    score_tokens: float = 0.0
    """Non-padding tokens of every scoring forward pass."""
    data_tokens: float = 0.0
    """Tokens of the dataset under the probe's tokenizer."""
    problems: list[str] = field(default_factory=list)
    """Problems found while probing (a failed fold, a budget cut)."""


ProbeFn = Callable[[Sequence["ParsedRow"], Sequence["TrajectoryProvenance"], "ProbeSpec", "float | None",
                    "Progress | None"], ProbeRun]

PROBES: dict[str, str] = {"copy": "probes.copyprobe:run_copy", "lm": "probes.lmprobe:run_lm",
                          "hf": "probes.hfprobe:run_hf"}
"""Registered probe kinds, ``name -> "module:attr"`` (``hf`` serves every ``hf:MODEL_DIR``)."""


def probe_key(kind: str) -> str:
    """The registry key of a ``[probe].kind`` (``hf:/path`` -> ``hf``); UsageError listing the kinds."""
    key = "hf" if kind.startswith("hf:") and len(kind) > 3 else kind
    if key not in PROBES:
        raise UsageError(f"unknown probe kind {kind!r}; known kinds: {', '.join(PROBE_KINDS)}")
    return key


def get_probe(kind: str) -> ProbeFn:
    """The probe function of ``kind`` (imported on first use)."""
    module, _, attr = PROBES[probe_key(kind)].partition(":")
    return getattr(importlib.import_module(module), attr)
