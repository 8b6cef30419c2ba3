from __future__ import annotations

import pytest

from probes.coverage import coverage, coverage_cells, structure_cells
from probes.provenance import trace_trajectory
from probes.toydata import make_trajectory
from toolscale.errors import UsageError


def test_cells_count():
    assert len(coverage_cells(1)) == 1
    assert len(coverage_cells(3)) == 3 + 3 * 2


@pytest.mark.parametrize(("structure", "expected"), [
    ("chain", {("chain", 2), ("chain", 3)}),
    ("fan-out", {("chain", 2), ("fan-out", 2), ("parallel", 2)}),
    ("fan-in", {("parallel", 1), ("fan-in", 2)}),
    ("parallel", {("parallel", 1)}),
])
def test_structure_cells_of_each_structure(structure, expected):
    p = trace_trajectory(make_trajectory(7, structure=structure))
    assert structure_cells(p, 3) == expected


def test_coverage_score_of_a_handmade_set():
    provs = [trace_trajectory(make_trajectory(i, structure=s), i)
             for i, s in enumerate(["chain", "fan-in", "parallel"])]
    rep = coverage(provs, k=3)
    # covered cells: chain@2, chain@3, fan-in@2, parallel@1 -> 4 of 9
    assert rep.score == pytest.approx(4 / 9)
    assert rep.cells["chain@3"] == 1 and rep.cells["parallel@1"] == 2 and rep.cells["fan-out@2"] == 0
    assert rep.depth_histogram == {1: 5, 2: 2, 3: 1}
    # with a quota of 2 only parallel@1 is full, the other three count half
    assert coverage(provs, k=3, quota=2).score == pytest.approx((1 + 3 * 0.5) / 9)
    # depth clamped at k=2: chain@3 folds into chain@2
    assert coverage(provs, k=2).score == pytest.approx(3 / 5)
    assert coverage([], k=2).score == 0.0


def test_coverage_rejects_bad_k():
    with pytest.raises(UsageError, match="k must be >= 1, got 0"):
        coverage([], k=0)
