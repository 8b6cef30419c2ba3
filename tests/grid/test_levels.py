"""grid/levels.py: coded -> real levels (log/linear, integer rounding) and constraints between axes."""

from __future__ import annotations

import math

import pytest

from grid.errors import DesignError
from grid.levels import apply_constraints, coded_to_real, level_values, parse_constraint
from toolscale.config import AxisSpec


def _axis(**kw) -> AxisSpec:
    base = dict(name="x", kind="diversity", unit="u", min=1.0, max=100.0, spacing="log")
    return AxisSpec(**{**base, **kw})


def test_log_spacing_center_is_geometric_mean():
    ax = _axis(min=4, max=64)
    lo, mid, hi = coded_to_real(ax, [-1, 0, 1])
    assert (lo, hi) == (4.0, 64.0)
    assert mid == pytest.approx(math.sqrt(4 * 64))


def test_linear_spacing_and_quarters():
    ax = _axis(min=0.0, max=0.2, spacing="linear", kind="quality")
    assert coded_to_real(ax, [-1, -0.5, 0, 0.5, 1]) == pytest.approx([0.0, 0.05, 0.1, 0.15, 0.2])


def test_integer_axes_round_and_stay_in_range():
    ax = _axis(min=1, max=16, integer=True)
    # exp(log(16) * (1/3)) = 2.52 -> 3, exp(log(16) * 2/3) = 6.35 -> 6
    assert level_values(ax, 4) == [1.0, 3.0, 6.0, 16.0]
    ax = _axis(min=1.5, max=3.5, spacing="linear", integer=True)
    assert coded_to_real(ax, [-1, 1]) == [2.0, 3.0]  # kept inside [ceil(min), floor(max)]


def test_coded_out_of_range_is_rejected():
    with pytest.raises(DesignError, match=r"coded levels must lie in \[-1, 1\]"):
        coded_to_real(_axis(), [0.0, 1.5])


def test_too_few_levels_and_collapsing_levels():
    with pytest.raises(DesignError, match="has 1 level"):
        level_values(_axis(), 1)
    ax = _axis(name="depth", min=1, max=3, spacing="linear", integer=True)
    with pytest.raises(DesignError, match="depth.*collapse"):
        level_values(ax, 4)


def test_parse_constraint_forms_and_errors():
    c = parse_constraint("task_count >= 2 * tool_diversity", ["task_count", "tool_diversity"])
    assert (c.lhs, c.op, c.factor, c.rhs) == ("task_count", ">=", 2.0, "tool_diversity")
    with pytest.raises(DesignError, match="not of the form"):
        parse_constraint("task_count > tool_diversity", ["task_count", "tool_diversity"])
    with pytest.raises(DesignError, match="unknown axis 'tools'"):
        parse_constraint("task_count >= tools", ["task_count", "tool_diversity"])


def test_apply_constraint_moves_the_left_axis():
    axes = {"tasks": _axis(name="tasks", min=8, max=1024, integer=True),
            "tools": _axis(name="tools", min=4, max=40, integer=True)}
    c = parse_constraint("tasks >= tools", list(axes))
    out, changed = apply_constraints({"tasks": 8.0, "tools": 40.0}, [c], axes)
    assert changed and out == {"tasks": 40.0, "tools": 40.0}
    out, changed = apply_constraints({"tasks": 64.0, "tools": 4.0}, [c], axes)
    assert not changed and out["tasks"] == 64.0


def test_impossible_and_conflicting_constraints():
    axes = {"tasks": _axis(name="tasks", min=8, max=32, integer=True),
            "tools": _axis(name="tools", min=4, max=40, integer=True)}
    c = parse_constraint("tasks >= tools", list(axes))
    with pytest.raises(DesignError, match="cannot hold at tools = 40"):
        apply_constraints({"tasks": 8.0, "tools": 40.0}, [c], axes)
    c2 = parse_constraint("tools >= 2 * tasks", list(axes))
    with pytest.raises(DesignError, match="conflict"):
        apply_constraints({"tasks": 8.0, "tools": 10.0}, [c, c2], axes)
