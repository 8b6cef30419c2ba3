"""Golden trajectories: a fixed recipe on the travel server must keep producing the same rows.

Regenerate after an intended change with::

    .venv/bin/python tests/synth/test_golden.py --regenerate
"""

from __future__ import annotations

import sys
from pathlib import Path

from synth.dataset import synthesize
from synth.models import Recipe

GOLDEN = Path(__file__).with_name("golden") / "travel_seed0.jsonl"
RECIPE = Recipe(task_count=6, tool_diversity=7, domains=("travel",), seed=0, coverage_quota=0.15, support_depth=2,
                defect_rate=0.3, repair_rate=0.5)
REGEN = ".venv/bin/python tests/synth/test_golden.py --regenerate"


def _rows() -> str:
    return "".join(r + "\n" for r in synthesize(RECIPE).rows)


def test_golden_rows():
    want = GOLDEN.read_text(encoding="utf-8").splitlines()
    got = _rows().splitlines()
    assert len(got) == len(want), f"row count changed ({len(got)} vs {len(want)}); if intended: {REGEN}"
    for i, (g, w) in enumerate(zip(got, want)):
        assert g == w, f"row {i} differs from {GOLDEN.name}; if the change is intended, regenerate: {REGEN}"


if __name__ == "__main__" and "--regenerate" in sys.argv:
    GOLDEN.write_text(_rows(), encoding="utf-8")
    print(f"wrote {GOLDEN}")
