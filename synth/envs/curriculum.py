"""A curriculum of environments for GRPO: single-hop first, then multi-hop, then parallel with distractors.

A policy fresh from SFT rarely completes a 4-call parallel episode among 9 tools, so every group of a GRPO step
would score the same and teach nothing. The curriculum (:data:`CURRICULUM`) splits the environments into phases
built from the generator's own knobs, ``structures``, ``hop_budget`` and :class:`DistractorSpec`:

===========  ======================  ===  ==========================
phase        structure               H    distractors (high/med/low)
===========  ======================  ===  ==========================
single-hop   one lookup              1    none
multi-hop    a chain of 2-3 lookups  3    none
parallel     two chains + a join     3    1 / 2 / 2
===========  ======================  ===  ==========================

Each sample records its phase in ``meta["phase"]`` (0, 1, 2) and ``meta["phase_name"]``. GRPO draws its prompts
from one phase at a time, in order, over equal shares of its steps (``train.grpo``); the SFT warm start trains
on all phases of a disjoint set.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from synth.envs.build import build_envs_report
from synth.envs.models import DistractorSpec, EnvSample, Phase, SandboxLimits
from toolscale.errors import UsageError

__all__ = ["Phase", "CURRICULUM", "FLAT", "build_curriculum", "phase_of", "phases_of"]


CURRICULUM: tuple[Phase, ...] = (
    Phase(name="single-hop", structures=["single-hop"], hop_budget=1,
          distractors=DistractorSpec(high=0, medium=0, low=0)),
    Phase(name="multi-hop", structures=["multi-hop"], hop_budget=3,
          distractors=DistractorSpec(high=0, medium=0, low=0)),
    Phase(name="parallel", structures=["parallel-multi-hop"], hop_budget=3,
          distractors=DistractorSpec(high=1, medium=2, low=2)),
)
"""The default curriculum (see the module docstring)."""

FLAT: tuple[Phase, ...] = (Phase(name="mixed", structures=None, hop_budget=3, distractors=DistractorSpec()),)
"""No curriculum: one phase with the generator's defaults (multi-hop or parallel, default distractors)."""


def _split(n: int, k: int) -> list[int]:
    """``n`` items over ``k`` phases, as equal as possible, the remainder to the first phases."""
    return [n // k + (1 if i < n % k else 0) for i in range(k)]


def build_curriculum(n: int, seed: int = 0, domains: Sequence[str] | None = None, *,
                     phases: Sequence[Phase] = CURRICULUM, validate: bool = True, id_prefix: str = "",
                     exclude_prompts: Collection[str] = (), limits: SandboxLimits | None = None) -> list[EnvSample]:
    """``n`` environments split over ``phases`` (equal shares, in phase order), each tagged with its phase.

    Parameters
    ----------
    n : int
        Environments in all (>= the number of phases, so that every phase has one).
    seed, domains, validate, limits
        As in :func:`synth.envs.build.build_envs`.
    id_prefix : str
        Starts every ``env_id``; also separates the draw stream (a warm-start set uses another prefix).
    exclude_prompts : collection of str
        Prompts no sample may repeat (e.g. the RL set's, when building the warm-start set).
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < len(phases):
        raise UsageError(f"a curriculum of {len(phases)} phases needs n >= {len(phases)} environments, got {n!r}")
    out: list[EnvSample] = []
    seen = set(exclude_prompts)
    for k, (phase, count) in enumerate(zip(phases, _split(n, len(phases)), strict=True)):
        samples, _ = build_envs_report(count, seed, domains, phase.distractors, hop_budget=phase.hop_budget,
                                       validate=validate, limits=limits, structures=phase.structures,
                                       id_prefix=f"{id_prefix}p{k}-", exclude_prompts=seen)
        seen |= {s.prompt for s in samples}
        out += [s.model_copy(update={"meta": {**s.meta, "phase": k, "phase_name": phase.name}}) for s in samples]
    return out


def phase_of(sample: EnvSample) -> int:
    """The sample's curriculum phase (``meta["phase"]``; 0 for samples built without a curriculum)."""
    value = sample.meta.get("phase", 0)
    return value if isinstance(value, int) and value >= 0 else 0


def phases_of(samples: Sequence[EnvSample]) -> list[list[EnvSample]]:
    """Samples grouped by phase, in phase order (empty phases dropped)."""
    groups: dict[int, list[EnvSample]] = {}
    for s in samples:
        groups.setdefault(phase_of(s), []).append(s)
    return [groups[k] for k in sorted(groups)]
