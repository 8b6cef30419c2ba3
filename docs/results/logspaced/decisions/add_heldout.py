"""Add the design's recipes that have not run at the held-out rung as held-out runs (README.md here).

Reads the config's registry, finds the design recipes (the recorded design's runs) with no run at the held-out
rung, and records each at that rung with the seeds of the held-out recipes already there, as pending runs of one
group with ``split = "heldout"``: :func:`grid.augment.augment_runs` builds them (the rung's cell, the scanned
learning rate), :func:`grid.augment.record_augment` stores them. Adding them again adds nothing.

Usage: python docs/results/logspaced/decisions/add_heldout.py CONFIG
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(cfg_path: str) -> int:
    from grid.augment import augment_runs, record_augment
    from grid.registry import Registry
    from toolscale.config import load_config

    cfg = load_config(cfg_path)
    rung = cfg.experiment.target_model_size
    with Registry(cfg.experiment.registry) as reg:
        runs = reg.runs(cfg.experiment.name)
        design = [r for r in runs if r.source == "design"]
        held = [r for r in design if r.model_size == rung]
        key = lambda r: json.dumps(r.recipe, sort_keys=True)  # noqa: E731
        done = {key(r) for r in held}
        seeds = sorted({r.seed for r in held})
        recipes = {key(r): r.recipe for r in design if key(r) not in done}
        tmult = held[0].metadata["token_multiplier"]
        rate = held[0].metadata["learning_rate"]
        rows = [{"recipe": rec, "model_size": rung, "token_multiplier": tmult, "seed": s}
                for _, rec in sorted(recipes.items()) for s in seeds]
        specs = [s.model_copy(update={"split": "heldout"})
                 for s in augment_runs(cfg, rows, learning_rates={rung: rate})]
        new_group, new_runs = record_augment(reg, cfg, specs, {
            "why": "issue 29: every design recipe at the held-out rung (docs/results/logspaced/decisions/)",
            "rows": rows})
    print(f"{len(recipes)} recipes x seeds {seeds} at {rung} (lr {rate:.6g}): {new_runs} runs recorded "
          f"({'new group' if new_group else 'group already recorded'} {specs[0].design_version})")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
    raise SystemExit(main(sys.argv[1]))
