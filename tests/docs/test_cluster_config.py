"""The cluster guide's config validates and designs as the guide says (294 runs, 16x extrapolation)."""

from __future__ import annotations

from pathlib import Path

from grid.design import build_design
from toolscale.config import load_config

CLUSTER = Path(__file__).resolve().parents[2] / "docs" / "cluster.toml"


def test_cluster_config_designs_as_documented() -> None:
    cfg = load_config(CLUSTER)
    assert all(m.pretrained for m in cfg.ladder)
    design = build_design(cfg)
    runs = design.runs
    held = [r for r in runs if r.split == "heldout"]
    fitted = [r for r in runs if r.split == "fit"]
    assert len(runs) == 294 and len(held) == 74
    ratio = max(r.train_flops for r in held) / max(r.train_flops for r in fitted)
    assert ratio >= 16.0
    total = sum(r.train_flops for r in runs)
    assert 8e20 < total < 1e21  # "about 9.1e20 FLOPs" in docs/cluster.md
