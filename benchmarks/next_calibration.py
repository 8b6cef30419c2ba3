"""How well `toolscale next` foresees the width of the gain interval after its runs.

For each experiment of a ``benchmarks/next_runs.py --detail`` file (policy ``next``, K = 12), the thin design
and its first fit are rebuilt with the same seeds and noise, `next` proposes again with the current code, and
its ``expected_width_after`` at K = 12 is set against the realised width stored in the file (``allocate``'s
gain interval after the runs and the refit). This needs the criterion to choose the same runs as the code that
wrote the file; each row says whether it did (its expected regret is the same to 1e-9), and the summary counts
only those rows.

    .venv/bin/python benchmarks/next_calibration.py benchmarks/next_runs_k12_seeds40-45_before.jsonl \\
        --first-seed 40 --seeds 3 --detail calib.jsonl
    .venv/bin/python benchmarks/next_calibration.py --from-detail calib.jsonl

No target: the figure is the realised / expected width (1 is calibrated; above 1, next was optimistic).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import next_runs as nr  # noqa: E402


def rows(detail: str, first: int, n: int):
    """One row per truth and seed: next's expected width now and the stored one, and the realised width."""
    stored = {(r["truth"], r["seed"]): r for r in map(json.loads, open(detail, encoding="utf-8"))
              if r["policy"] == "next" and r["k"] == 12}
    names = list(dict.fromkeys(name for name, _seed in stored))
    for seed in range(first, first + n):
        for name in names:
            with tempfile.TemporaryDirectory() as d:
                base = str(Path(d) / "base.duckdb")
                cfg, _law, _params, _tag = nr.thin_experiment(name, seed, base)
                nr.fit_and_store(base, cfg, 100, 15, seed)
                query = nr.AllocationQuery.of(registry=base, budget=nr.BUDGET, benchmark=nr.BENCH, experiment="sim")
                nxt = nr.propose_next_runs(query, runs=24)
            old = stored[(name, seed)]
            yield {"truth": name, "seed": seed, "width_now": nxt.width_now, "realised": old["width"],
                   "expected": nxt.runs[11].expected_width_after, "expected_stored": old["next_expected_width"],
                   "same_choice": abs(nxt.runs[11].expected_regret_after - old["next_expected_regret"]) < 1e-9}


def summary(rs: list[dict]) -> str:
    same = [r for r in rs if r["same_choice"]]
    out = [f"{len(same)} of {len(rs)} experiments chose the same runs as the stored ones"]
    for key in ("expected_stored", "expected"):
        q = np.array([r["realised"] / r[key] for r in same])
        out.append(f"realised / {key}: median {np.median(q):.2f}, quartiles {np.percentile(q, 25):.2f}-"
                   f"{np.percentile(q, 75):.2f}, mean |log| {np.mean(np.abs(np.log(q))):.3f}, "
                   f"realised above expected in {int(np.sum(q > 1))} of {len(q)}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("detail", nargs="?", help="a next_runs.py --detail file (the realised widths)")
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--detail", dest="out", help="append each row here as it finishes (JSON lines)")
    ap.add_argument("--from-detail", help="only summarise the rows of an earlier --detail file")
    a = ap.parse_args(argv)
    if a.from_detail:
        print(summary([json.loads(line) for line in open(a.from_detail, encoding="utf-8")]))
        return 0
    if not a.detail:
        ap.error("give a next_runs.py --detail file, or --from-detail")
    got = []
    for r in rows(a.detail, a.first_seed, a.seeds):
        got.append(r)
        if a.out:
            with open(a.out, "a", encoding="utf-8") as f:
                f.write(json.dumps(r) + "\n")
        print(f"{r['truth']} seed {r['seed']}: realised {r['realised']:.4f}, expected {r['expected']:.4f} "
              f"(stored {r['expected_stored']:.4f})", file=sys.stderr, flush=True)
    print(summary(got))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
