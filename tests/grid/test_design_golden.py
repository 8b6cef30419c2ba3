"""Golden designs for fixed configs and seeds (fractional + fold-over, GSD, LHS).

Regenerate after an intended change with ``make golden`` (and bump grid.design.ALGORITHM_VERSION if run ids
change).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grid.design import build_design
from toolscale.config import parse_config

GOLDEN = Path(__file__).parent / "golden"

AXES = [
    {"name": "tool_diversity", "kind": "diversity", "unit": "tools", "min": 4, "max": 40, "levels": 4,
     "integer": True},
    {"name": "task_count", "kind": "diversity", "unit": "tasks", "min": 64, "max": 1024, "levels": 3,
     "integer": True},
    {"name": "db_diversity", "kind": "diversity", "unit": "databases", "min": 1, "max": 8, "levels": 3,
     "integer": True},
    {"name": "repair_rate", "kind": "quality", "unit": "fraction", "min": 0.0, "max": 1.0, "levels": 3,
     "spacing": "linear"},
    {"name": "support_depth", "kind": "quality", "unit": "hops", "min": 1, "max": 4, "levels": 4,
     "spacing": "linear", "integer": True},
]
LADDER = [
    {"name": "s", "hidden_size": 32, "num_layers": 1, "vocab_size": 512, "max_seq_len": 128, "max_steps": 20},
    {"name": "l", "hidden_size": 64, "num_layers": 2, "vocab_size": 512, "max_seq_len": 128, "max_steps": 100},
]
CASES = {
    "fractional_foldover": {"kind": "fractional", "resolution": 3, "fraction_points": 8, "foldover": ["repair_rate"],
                            "center_points": 1, "constraints": ["task_count >= tool_diversity"]},
    "gsd": {"kind": "gsd", "gsd_reduction": 6, "center_points": 2, "token_multipliers": [0.5, 1.0]},
    "lhs": {"kind": "lhs", "lhs_samples": 12, "seed": 5, "center_points": 0, "replicates": 2},
}


def _snapshot(name: str) -> dict:
    config = parse_config({"experiment": {"name": f"golden-{name}", "seeds": [0, 1]}, "axes": AXES,
                           "ladder": LADDER, "design": CASES[name]})
    d = build_design(config)
    summary = d.summary.model_dump(mode="json", exclude={"cells"})
    return {
        "version": d.version,
        "summary": summary,
        "alias_map": d.alias.alias_map,
        "points": d.points,
        "runs": [{"run_id": r.run_id, "model_size": r.model_size, "token_multiplier": r.token_multiplier,
                  "seed": r.seed, "split": r.split, "point": r.metadata["point"], "train_flops": r.train_flops}
                 for r in d.runs],
    }


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_design(name, golden):
    path = GOLDEN / f"design_{name}.json"
    got = json.loads(json.dumps(_snapshot(name)))
    want = json.loads(golden.check_in(path, json.dumps(got, indent=1, sort_keys=True) + "\n"))
    diffs = golden.diff(got, want, name, rel=1e-6, abs_tol=1e-9)
    assert not diffs, f"{len(diffs)} differences from {path.name} (first: {diffs[:5]}); if intended, run: " \
                      f"{golden.command}"
