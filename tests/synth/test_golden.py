"""Golden trajectories: a fixed recipe on the travel server must keep producing the same rows.

Regenerate after an intended change with ``make golden``.
"""

from __future__ import annotations

from pathlib import Path

from synth.dataset import synthesize
from synth.models import Recipe

GOLDEN = Path(__file__).with_name("golden") / "travel_seed0.jsonl"
RECIPE = Recipe(task_count=6, tool_diversity=7, domains=("travel",), seed=0, coverage_quota=0.15, support_depth=2,
                defect_rate=0.3, repair_rate=0.5)


def _rows() -> str:
    return "".join(r + "\n" for r in synthesize(RECIPE).rows)


def test_golden_rows(golden):
    rows = _rows()
    want = golden.check_in(GOLDEN, rows).splitlines()
    got = rows.splitlines()
    assert len(got) == len(want), f"row count changed ({len(got)} vs {len(want)}); if intended: {golden.command}"
    for i, (g, w) in enumerate(zip(got, want)):
        assert g == w, f"row {i} differs from {GOLDEN.name}; if the change is intended, regenerate: {golden.command}"
