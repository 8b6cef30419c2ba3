"""The 40-tool recipes' advantage over the 8-tool ones at each rung (README.md here, written after the results).

For each rung and benchmark: the mean envelope bpb of the 8-tool and the 40-tool recipes, their gap, and the gaps
of the 40-tool recipes against the 8-tool ones with the same task count and databases. The p-m rows and below
are fitted runs (seen before the held-out check); the p-l rows are held-out runs (seen after).

Usage: python docs/results/logspaced/decisions/tool_gap.py [REGISTRY] > docs/results/logspaced/decisions/tool_gap.txt
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

RUNGS = ("p-xs", "p-s", "p-m", "p-l")


def main(registry: str) -> int:
    from fit.targets import target_values
    from pipeline.fit import load_runs, validation_of

    loaded = load_runs(registry, "proxy-log")
    runs = [r for r in loaded.runs if r.status == "done"]
    for bench in ("indist-calls", "heldout-servers"):
        values = target_values(runs, benchmark=bench, metric="bpb", target="envelope",
                               validation=validation_of(loaded.config, None))
        cell: dict[tuple, list[float]] = defaultdict(list)
        for r in runs:
            if r.run_id in values:
                rec = r.recipe
                cell[(r.model_size, rec["tool_diversity"], rec["task_count"], rec["db_diversity"],
                      rec["repair_rate"])].append(values[r.run_id])
        print(f"{bench} (envelope bpb; the 40-tool minus the 8-tool recipes)")
        for size in RUNGS:
            mean = {t: float(np.mean([np.mean(v) for k, v in cell.items() if k[0] == size and k[1] == t]))
                    for t in (8.0, 40.0)}
            matched = [float(np.mean(v) - np.mean(w)) for k, v in cell.items() if k[0] == size and k[1] == 40.0
                       for kk, w in cell.items() if kk[0] == size and kk[1] == 8.0 and kk[2:4] == k[2:4]]
            gap = mean[40.0] - mean[8.0]
            print(f"  {size}: 8 tools {mean[8.0]:.3f}, 40 tools {mean[40.0]:.3f}, gap {gap:+.3f} "
                  f"({gap / mean[8.0]:+.1%}); matched gaps {', '.join(f'{g:+.3f}' for g in matched)}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
    raise SystemExit(main(sys.argv[1] if len(sys.argv) > 1 else "runs/proxy-log-dec/toolscale.duckdb"))
