"""Coded -> real levels of the data axes, and constraints between axes.

A design works in *coded* units: every axis runs from -1 (its ``min``) to +1 (its
``max``), the center point is 0. This module maps coded values to real levels in
each axis' unit (log or linear spacing, integer rounding for axes that count
things) and enforces constraints such as ``task_count >= tool_diversity``.
Pure functions; no I/O.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from toolscale.config import AxisSpec
from grid.errors import DesignError

__all__ = [
    "Constraint",
    "coded_to_real",
    "level_values",
    "parse_constraint",
    "apply_constraints",
]

_SIG_DIGITS = 10
"""Real levels are rounded to this many significant digits, so run ids never depend on float noise."""


def _tidy(x: float) -> float:
    if x == 0 or not math.isfinite(x):
        return float(x)
    return float(f"{x:.{_SIG_DIGITS}g}")


def coded_to_real(axis: AxisSpec, coded: Sequence[float] | np.ndarray) -> list[float]:
    """Real levels (in ``axis.unit``) of coded values in [-1, 1].

    Notes
    -----
    With ``t = (c + 1) / 2`` in [0, 1]:

    - linear spacing: ``x = min + t (max - min)``
    - log spacing:    ``x = exp(log min + t (log max - log min))`` (so the center is the geometric mean)

    Integer axes are rounded to the nearest integer and kept inside
    ``[ceil(min), floor(max)]``; others are rounded to 10 significant digits.

    Examples
    --------
    >>> from toolscale.config import AxisSpec
    >>> ax = AxisSpec(name="tools", kind="diversity", unit="tools", min=4, max=64, spacing="log", integer=True)
    >>> coded_to_real(ax, [-1, 0, 1])
    [4.0, 16.0, 64.0]
    """
    c = np.asarray(coded, dtype=float)
    if np.any(c < -1 - 1e-9) or np.any(c > 1 + 1e-9):
        raise DesignError(f"axis {axis.name!r}: coded levels must lie in [-1, 1], got {c.min():g}..{c.max():g}")
    t = (np.clip(c, -1.0, 1.0) + 1.0) / 2.0
    if axis.spacing == "log":
        x = np.exp(math.log(axis.min) + t * (math.log(axis.max) - math.log(axis.min)))
    else:
        x = axis.min + t * (axis.max - axis.min)
    if axis.integer:
        lo, hi = math.ceil(axis.min), math.floor(axis.max)
        if hi < lo:
            raise DesignError(f"axis {axis.name!r}: integer axis has no integer in {axis.min:g}..{axis.max:g}")
        x = np.clip(np.floor(x + 0.5), lo, hi)
    return [_tidy(v) for v in x.tolist()]


def level_values(axis: AxisSpec, n_levels: int) -> list[float]:
    """The ``n_levels`` real levels of an axis, evenly spaced in coded units.

    Raises :class:`DesignError` when ``n_levels < 2`` or when integer rounding
    makes two levels equal (the axis would have fewer levels than the design needs).
    """
    if n_levels < 2:
        raise DesignError(f"axis {axis.name!r} has {n_levels} level(s); a design needs at least 2 to vary it")
    coded = np.linspace(-1.0, 1.0, n_levels)
    real = coded_to_real(axis, coded)
    if len(set(real)) < n_levels:
        raise DesignError(
            f"axis {axis.name!r}: {n_levels} levels collapse to {sorted(set(real))} after integer rounding in "
            f"{axis.min:g}..{axis.max:g} {axis.unit}; use fewer levels or a wider range")
    return real


@dataclass(frozen=True)
class Constraint:
    """``lhs >= factor * rhs`` (``op = ">="``) or ``lhs <= factor * rhs`` (``op = "<="``) between two axes."""

    lhs: str
    op: str
    factor: float
    rhs: str
    text: str

    def holds(self, recipe: dict[str, float]) -> bool:
        bound = self.factor * recipe[self.rhs]
        return recipe[self.lhs] >= bound - 1e-9 if self.op == ">=" else recipe[self.lhs] <= bound + 1e-9


_CONSTRAINT = re.compile(r"^\s*([a-z][a-z0-9_]*)\s*(>=|<=)\s*(?:([0-9]*\.?[0-9]+(?:e[-+]?\d+)?)\s*\*\s*)?"
                         r"([a-z][a-z0-9_]*)\s*$")


def parse_constraint(text: str, axes: Sequence[str]) -> Constraint:
    """Parse ``"task_count >= tool_diversity"`` or ``"task_count >= 2 * tool_diversity"``.

    Raises :class:`DesignError` naming the text and the expected form, or the unknown axis.
    """
    m = _CONSTRAINT.match(text)
    if not m:
        raise DesignError(f"design constraint {text!r} is not of the form 'AXIS >= [K *] AXIS' or "
                          f"'AXIS <= [K *] AXIS'")
    lhs, op, factor, rhs = m.group(1), m.group(2), float(m.group(3) or 1.0), m.group(4)
    for name in (lhs, rhs):
        if name not in axes:
            raise DesignError(f"design constraint {text!r} names unknown axis {name!r}; known: {', '.join(axes)}")
    if lhs == rhs:
        raise DesignError(f"design constraint {text!r} relates an axis to itself")
    if factor <= 0:
        raise DesignError(f"design constraint {text!r}: factor must be > 0, got {factor:g}")
    return Constraint(lhs=lhs, op=op, factor=factor, rhs=rhs, text=text.strip())


def apply_constraints(recipe: dict[str, float], constraints: Sequence[Constraint],
                      axes: dict[str, AxisSpec]) -> tuple[dict[str, float], bool]:
    """Move the left-hand axis of each violated constraint onto its bound.

    Returns ``(recipe, changed)``. The left-hand level is set to ``factor * rhs``
    (rounded up/down for integer axes); :class:`DesignError` if that leaves the
    axis' range, or if the constraints still do not all hold afterwards (they conflict).
    """
    out = dict(recipe)
    changed = False
    for c in constraints:
        if c.holds(out):
            continue
        ax = axes[c.lhs]
        bound = c.factor * out[c.rhs]
        if ax.integer:
            bound = math.ceil(bound - 1e-9) if c.op == ">=" else math.floor(bound + 1e-9)
        if not (ax.min - 1e-9 <= bound <= ax.max + 1e-9):
            raise DesignError(
                f"design constraint {c.text!r} cannot hold at {c.rhs} = {out[c.rhs]:g}: {c.lhs} would need "
                f"{bound:g}, outside its range {ax.min:g}..{ax.max:g} {ax.unit}")
        out[c.lhs] = _tidy(float(bound))
        changed = True
    broken = [c.text for c in constraints if not c.holds(out)]
    if broken:
        raise DesignError(f"design constraints conflict: after adjusting, {'; '.join(broken)} fails at "
                          + ", ".join(f"{k} = {v:g}" for k, v in out.items()))
    return out, changed
