"""The measured effect of an axis' levels against its lowest, per model size, paired by seed (no law involved).

For an axis with levels ``x_0 < x_1 < ...`` (a stage axis: ``x_0 = 0``, the stage off), each pair is two done
runs that differ only in that axis, one at ``x_0`` and one at ``x_k``: same model size, same seed, same level
of every other axis. The effect of ``x_k`` at a size is the mean paired difference
``metric(x_k) - metric(x_0)`` with a Student-t interval over the pairs (95% unless asked otherwise) and the
number of pairs. This answers "did mid-training help at this scale?" without trusting a fitted law.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from fit.errors import FitInputError
from grid.models import RunRecord

__all__ = ["ArmEffect", "EffectReport", "paired_effects"]


class ArmEffect(BaseModel):
    """The paired effect of ``axis`` going from ``low`` to ``high`` at one model size (and other-axis cell)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model_size: str
    """Ladder rung."""
    others: dict[str, float]
    """Levels of the other axes this cell holds fixed."""
    axis: str
    """The axis compared."""
    low: float
    """Its low level."""
    high: float
    """Its high level."""
    metric: str
    """``benchmark/metric`` compared."""
    n_pairs: int
    """Seed-paired runs."""
    mean_low: float
    """Mean metric at ``low``."""
    mean_high: float
    """Mean metric at ``high``."""
    effect: float
    """Mean paired difference ``high - low``, metric units."""
    lo: float | None
    """Lower bound of its t interval at ``level`` (None with one pair)."""
    hi: float | None
    """Upper bound."""
    level: float = 0.95
    """Confidence level of ``lo`` and ``hi``."""


class EffectReport(BaseModel):
    """What ``toolscale effect --json`` prints: one experiment's paired effects of one axis."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    experiment: str
    """Experiment name."""
    axis: str
    """The axis compared."""
    metric: str
    """``benchmark/metric``."""
    effects: list[ArmEffect]
    """One per model size and cell of the other axes."""


def _t_quantile(df: int, level: float) -> float:
    from scipy.stats import t

    return float(t.ppf(0.5 + level / 2, df))


def paired_effects(runs: Sequence[RunRecord], axis: str, metric: str, level: float = 0.95) -> list[ArmEffect]:
    """Effects of each level of ``axis`` against its lowest (at least two levels among ``runs``) on ``metric``
    (``benchmark/metric`` key of ``run.metrics``), per model size and cell of the other axes; see the module
    docstring.

    ``runs`` are done :class:`grid.models.RunRecord` rows (``recipe``, ``model_size``, ``seed``, ``metrics``);
    ``level`` is the confidence level of the intervals, in (0, 1).
    """
    if not 0.0 < level < 1.0:
        raise FitInputError(f"level must be in (0, 1), got {level!r}")
    levels = sorted({float(r.recipe[axis]) for r in runs if axis in r.recipe})
    if not levels:
        known = sorted({a for r in runs for a in r.recipe})
        raise FitInputError(f"unknown axis {axis!r}: no run has it; axes of these runs: {', '.join(known) or 'none'}")
    if len(levels) < 2:
        raise FitInputError(f"axis {axis!r} needs at least two levels among the runs, found {levels}")
    low = levels[0]
    cells: dict[tuple, dict[float, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
    for r in runs:
        value = r.metrics.get(metric)
        if value is None or axis not in r.recipe or not math.isfinite(value):
            continue
        others = tuple(sorted((k, float(v)) for k, v in r.recipe.items() if k != axis))
        cells[(r.model_size, others)][float(r.recipe[axis])][r.seed] = float(value)
    out = []
    for ((size, others), by_level), high in ((c, h) for c in sorted(cells.items()) for h in levels[1:]):
        seeds = sorted(set(by_level[low]) & set(by_level[high]))
        if not seeds:
            continue
        d = [by_level[high][s] - by_level[low][s] for s in seeds]
        mean = sum(d) / len(d)
        lo = hi = None
        if len(d) > 1:
            sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (len(d) - 1))
            half = _t_quantile(len(d) - 1, level) * sd / math.sqrt(len(d))
            lo, hi = mean - half, mean + half
        out.append(ArmEffect(model_size=size, others=dict(others), axis=axis, low=low, high=high, metric=metric,
                             n_pairs=len(d), mean_low=sum(by_level[low][s] for s in seeds) / len(seeds),
                             mean_high=sum(by_level[high][s] for s in seeds) / len(seeds), effect=mean, lo=lo, hi=hi,
                             level=level))
    if not out:
        raise FitInputError(f"no seed-paired runs differ only in {axis!r} with {metric!r} measured")
    return out
