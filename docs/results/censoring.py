"""Where each run's early-stopped envelope sits among its kept checkpoints, and the held-out errors of the runs
whose envelope is their first kept checkpoint against the others (issues 29 and 33; an analysis of the committed
runs, no new runs). Also each fit's residual SD beside its replicate (seed) SD.

Usage (from the repository root):  .venv/bin/python docs/results/censoring.py
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
DOMAINS = {  # runs.csv, validation metric, fits
    "tools": ("docs/results/runs.csv", "valid-calls/bpb",
              ["docs/results/fit-indist-calls.json", "docs/results/fit-heldout-servers.json"]),
    "tools, log-spaced checkpoints": ("docs/results/logspaced/runs.csv", "valid-calls/bpb",
                                      ["docs/results/logspaced/fit-indist-calls.json",
                                       "docs/results/logspaced/fit-heldout-servers.json"]),
    "code": ("docs/results/code/runs.csv", "code-valid/bpb",
             ["docs/results/code/fit-code-indist.json", "docs/results/code/fit-code-heldout-apis.json"]),
    "code, log-spaced checkpoints": ("docs/results/code/logspaced/runs.csv", "code-valid/bpb",
                                     ["docs/results/code/logspaced/fit-code-indist.json",
                                      "docs/results/code/logspaced/fit-code-heldout-apis.json"]),
}


def best_index(runs: pd.DataFrame, valid: str) -> dict[str, tuple[str, str, int, int]]:
    """``run_id -> (split, size, index of the checkpoint best on validation, checkpoints kept)``."""
    finals = runs[runs.step.isna()].set_index("run_id")
    out = {}
    for rid, g in runs[runs.step.notna()].groupby("run_id"):
        v = g.sort_values("step")[valid].to_numpy()
        out[rid] = (finals.loc[rid, "split"], finals.loc[rid, "model_size"], int(np.nanargmin(v)), len(v))
    return out


def main() -> None:
    for name, (csv, valid, fits) in DOMAINS.items():
        if not (ROOT / csv).is_file() or not all((ROOT / f).is_file() for f in fits):
            print(f"## {name}: not run ({csv} or its fits missing)")
            continue
        best = best_index(pd.read_csv(ROOT / csv), valid)
        print(f"## {name}: index of the checkpoint best on {valid.split('/')[0]} (0 = the first kept), runs per index")
        cells: dict[tuple[str, str], list[int]] = {}
        for split, size, i, k in best.values():
            cells.setdefault((split, size), [0] * k)[i] += 1
        for (split, size), counts in sorted(cells.items()):
            print(f"  {split:8s} {size:5s} {counts}")
        for path in fits:
            f = json.loads((ROOT / path).read_text())
            rows = [(best[p["run_id"]][2] == 0, (p["actual"] - p["predicted"]) / p["actual"])
                    for p in f["heldout_predictions"]]
            parts = []
            for first, label in ((True, "at the first"), (False, "later")):
                e = [x for flag, x in rows if flag is first]
                parts.append(f"{label}: {len(e)} runs, mean (actual - predicted) / actual "
                             f"{np.mean(e):+.3f}" if e else f"{label}: 0 runs")
            lof = f.get("lack_of_fit") or {}
            print(f"  {Path(path).stem}: {'; '.join(parts)}; residual SD {f['residual_sd']:.3f}, replicate SD "
                  f"{f['replicate_sd']:.3f} (ratio {lof.get('ratio', float('nan')):.2f}, lack-of-fit p "
                  f"{lof.get('p_value', float('nan')):.2g})")


if __name__ == "__main__":
    main()
