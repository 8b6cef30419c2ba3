"""Reward curves, ABF fill rates and FLOPs per stage of the RL experiment's runs (docs/results/rl/README.md).

Reads ``runs.csv`` (``toolscale export``) for each run's size, task count, GRPO steps and seed, and each run's
``work/<run_id>/{warmstart,grpo}/train_stats.json``; writes ``curves.json`` (every GRPO step row of every run,
and each run's stage accounting) and ``curves.md`` (per cell: F1 and partial credit over every episode drawn,
groups with reward variance, fill rate, skipped steps; FLOPs per stage).

Usage: python docs/results/rl/curves.py RUNS_ROOT OUT_DIR    (RUNS_ROOT: the executor folder, e.g. runs/rl)
"""

from __future__ import annotations

import csv
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path


def _stats(path: Path) -> dict | None:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def collect(root: Path, runs_csv: Path) -> list[dict]:
    """One record per done run: its cell, its warm-start and GRPO accounting, and its GRPO step rows."""
    out = []
    with runs_csv.open(encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            if row["status"] != "done":
                continue
            work = root / "work" / row["run_id"]
            warm, grpo, sft = (_stats(work / d / "train_stats.json") for d in ("warmstart", "grpo", "model"))
            steps = int(float(row["axis_grpo_steps"]))
            out.append({"run_id": row["run_id"], "model_size": row["model_size"], "seed": int(row["seed"]),
                        "task_count": int(float(row.get("axis_task_count") or 0)), "grpo_steps": steps,
                        "flops": {"sft": (sft or {}).get("train", {}).get("train_flops"),
                                  "warmstart": (warm or {}).get("train", {}).get("train_flops"),
                                  "grpo": (grpo or {}).get("flops") if steps else None},
                        "warm_loss": (warm or {}).get("train", {}).get("final_loss"),
                        "steps": (grpo or {}).get("steps", []) if steps else [],
                        "metrics": {k: float(v) for k, v in row.items() if "/" in k and v not in ("", None)}})
    return out


def _mean(xs: list[float]) -> float | None:
    xs = [x for x in xs if x is not None]
    return statistics.mean(xs) if xs else None


def _fmt(x: float | None, digits: int = 3) -> str:
    return "—" if x is None else f"{x:.{digits}g}"


def markdown(records: list[dict]) -> str:
    """Per (size, task count) cell of the GRPO arm: means over seeds per step, and FLOPs per stage."""
    lines = ["# GRPO steps per cell (means over seeds)", "",
             "| size | tasks | step | phase | F1 (all drawn) | partial | groups with variance | fill rate | "
             "skipped | draws |", "|---|---|---|---|---|---|---|---|---|---|"]
    cells: dict[tuple, list[dict]] = defaultdict(list)
    for r in records:
        if r["grpo_steps"]:
            cells[(r["model_size"], r["task_count"])].append(r)
    for (size, tasks), runs in sorted(cells.items()):
        for k in range(max(len(r["steps"]) for r in runs)):
            rows = [r["steps"][k] for r in runs if k < len(r["steps"])]
            lines.append(f"| {size} | {tasks} | {k + 1} | {rows[0]['phase']} | "
                         f"{_fmt(_mean([x['f1'] for x in rows]))} | "
                         f"{_fmt(_mean([x['partial'] for x in rows]))} | "
                         f"{_fmt(_mean([x['variance_share'] for x in rows]))} | "
                         f"{_fmt(_mean([x['fill_rate'] for x in rows]))} | "
                         f"{sum(x['skipped'] for x in rows)}/{len(rows)} | {_fmt(_mean([x['draws'] for x in rows]))} |")
    lines += ["", "# FLOPs per stage (means over seeds)", "",
              "| size | tasks | arm | SFT | warm start | GRPO generation | GRPO optimization | warm-start final loss |",
              "|---|---|---|---|---|---|---|---|"]
    arms: dict[tuple, list[dict]] = defaultdict(list)
    for r in records:
        arms[(r["model_size"], r["task_count"], r["grpo_steps"])].append(r)
    for (size, tasks, steps), runs in sorted(arms.items()):
        grpo = [r["flops"]["grpo"] for r in runs if r["flops"]["grpo"]]
        lines.append(f"| {size} | {tasks} | {'SFT+GRPO' if steps else 'SFT'} | "
                     f"{_fmt(_mean([r['flops']['sft'] for r in runs]))} | "
                     f"{_fmt(_mean([r['flops']['warmstart'] for r in runs]))} | "
                     f"{_fmt(_mean([g['generation'] for g in grpo])) if grpo else '—'} | "
                     f"{_fmt(_mean([g['optimization'] for g in grpo])) if grpo else '—'} | "
                     f"{_fmt(_mean([r['warm_loss'] for r in runs]))} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    root, out = Path(sys.argv[1]), Path(sys.argv[2])
    records = collect(root, out / "runs.csv")
    (out / "curves.json").write_text(json.dumps(records, indent=1) + "\n", encoding="utf-8")
    (out / "curves.md").write_text(markdown(records), encoding="utf-8")
    print(f"wrote {out / 'curves.json'} and {out / 'curves.md'} ({len(records)} runs)")


if __name__ == "__main__":
    main()
