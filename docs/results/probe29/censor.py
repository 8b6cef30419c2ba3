"""Exploratory probe (issues 29 and 33), not a rerun of the experiment: one held-out run of the tool domain's
committed experiment (docs/results/proxy.toml) trained again with log-spaced checkpoints.

In both committed proxy experiments, 6 of the 9 held-out p-l runs are best on validation at their first kept
checkpoint (20% of training), so their early-stopped envelope may overstate their best loss. This trains the
recipe of one of them (p-l, 8 tools, 1,024 tasks, 1 database, repair rate 0, seed 0: run r-b2fb1dc8f7dcff4b)
through the product's pipeline, at the experiment's rate for p-l (lr_scan.json) and its 741 steps, keeping 6
checkpoints at halving steps (``[eval] checkpoint_spacing = "log"``: 23, 46, 93, 185, 370, 741), each scored on
valid-calls, the best one and the last on both test benchmarks. It answers one question: where is this run's
validation optimum, and what is its envelope there? The reproduction check is the last checkpoint, which the
committed run also scored.

Usage (from the repository root):  .venv/bin/python docs/results/probe29/censor.py   (registry: runs/probe29/)
"""

from __future__ import annotations

import json
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from grid.models import RunSpec  # noqa: E402
from grid.registry import Registry  # noqa: E402
from slurm.launcher import launch  # noqa: E402
from slurm.sync import sync  # noqa: E402
from toolscale.config import parse_config  # noqa: E402

RECIPE = {"tool_diversity": 8.0, "task_count": 1024.0, "db_diversity": 1.0, "repair_rate": 0.0}
RUN_ID = "probe29-p-l-8t-1024-1db-s0"


def main() -> None:
    src = tomllib.loads((ROOT / "docs/results/proxy.toml").read_text(encoding="utf-8"))
    src["experiment"].update(name="probe29", registry="./runs/probe29/toolscale.duckdb")
    src["executor"].update(folder="./runs/probe29", max_parallel=1)
    src["eval"].update(checkpoints=6, checkpoint_spacing="log")
    cfg = parse_config(src)
    lr = json.loads((ROOT / "docs/results/lr_scan.json").read_text())["learning_rates"]["p-l"]
    Path("runs/probe29").mkdir(parents=True, exist_ok=True)
    with Registry(cfg.experiment.registry) as reg:
        reg.ensure_experiment("probe29", config=cfg.model_dump(mode="json"))
        if not reg.runs("probe29"):
            reg.add_runs([RunSpec(run_id=RUN_ID, experiment="probe29", design_version="probe", recipe=RECIPE,
                                  model_size="p-l", seed=0, split="heldout",
                                  metadata={"max_steps": 741, "learning_rate": float(lr)})])
    launch(cfg, cfg.experiment.registry, executor="local", resume=True)
    while True:  # what `launch --wait` does: sync the result files until the run has finished
        sync(cfg.experiment.registry, config=cfg, folder=cfg.executor.folder, retry=False)
        with Registry(cfg.experiment.registry, read_only=True) as reg:
            (run,) = reg.runs("probe29")
        if run.status in ("done", "failed", "cancelled"):
            break
        time.sleep(30)
    print(json.dumps({"status": run.status, "error": run.error, "metrics": run.metrics,
                      "checkpoints": {str(k): v for k, v in sorted(run.checkpoints.items())},
                      "learning_rate": lr}, indent=1, default=str))


if __name__ == "__main__":
    main()
