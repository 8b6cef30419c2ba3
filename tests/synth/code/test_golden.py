"""Golden code trajectories: a fixed recipe must keep producing the same rows (jail results included).

Regenerate after an intended change with ``make golden``.
"""

from __future__ import annotations

from pathlib import Path

from synth.code.dataset import synthesize_code
from synth.code.models import CodeRecipe

GOLDEN = Path(__file__).with_name("golden") / "code_seed0.jsonl"
RECIPE = CodeRecipe(task_count=4, tool_diversity=12, db_diversity=2, spec_dependency=0.7, support_depth=2,
                    defect_rate=0.4, repair_rate=0.5, error_rate=0.5, seed=0)


def test_golden_rows(golden):
    out = synthesize_code(RECIPE)
    rows = "".join(r + "\n" for r in out.rows)
    want = golden.check_in(GOLDEN, rows).splitlines()
    got = rows.splitlines()
    assert len(got) == len(want), f"row count changed ({len(got)} vs {len(want)}); if intended: {golden.command}"
    for i, (g, w) in enumerate(zip(got, want)):
        assert g == w, f"row {i} differs from {GOLDEN.name}; if the change is intended, regenerate: {golden.command}"
