"""Bulk ``import-runs``: wall time, peak RSS, write-lock time and how long a reader waits, for a big CSV.

Writes a CSV of N rows x 10 columns (id, N, D, score, loss, four axes, seed; default 1,000,000 rows,
``--quick``: 100,000), then runs ``toolscale import-runs`` on it as a child process into a fresh registry,
while a second process runs ``toolscale status`` on the same registry every 0.5 s. Reports the import's wall
time and peak RSS (``getrusage`` of the child), the write transaction's time (``ImportReport.lock_s``: the
lock is held only while the registry is open, after the file has been read and checked), the longest
``status`` call, and a re-import of the same file (no conflicts: nothing written).

Usage::

    .venv/bin/python benchmarks/import_bulk.py [--quick] [--json] [--rows N]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _write_csv(path: Path, n: int) -> None:
    import numpy as np

    rng = np.random.default_rng(0)
    sizes = rng.choice([1e6, 4e6, 1.6e7, 6.4e7], n)
    tokens = sizes * rng.choice([10.0, 20.0, 40.0], n)
    cols = {
        "id": np.char.add("r", np.arange(n).astype(str)),
        "params": sizes, "tokens": tokens,
        "acc": np.round(rng.uniform(0.1, 0.9, n), 6), "loss": np.round(rng.uniform(1.0, 4.0, n), 6),
        "tool_diversity": rng.integers(4, 64, n), "task_count": rng.integers(100, 5000, n),
        "db_count": rng.integers(1, 20, n), "repair_rate": np.round(rng.uniform(0, 1, n), 4),
        "seed": rng.integers(0, 3, n),
    }
    import pandas as pd

    pd.DataFrame(cols).to_csv(path, index=False)


def _toolscale(*args: str) -> list[str]:
    return [sys.executable, "-m", "toolscale.cli", *args]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--rows", type=int, default=None)
    args = ap.parse_args()
    n = args.rows or (100_000 if args.quick else 1_000_000)
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    with tempfile.TemporaryDirectory(prefix="toolscale-bench-import-") as tmp:
        csv, db = Path(tmp) / "runs.csv", Path(tmp) / "r.duckdb"
        t0 = time.perf_counter()
        _write_csv(csv, n)
        gen_s = time.perf_counter() - t0
        subprocess.run(_toolscale("init", str(Path(tmp) / "x.toml")), env=env, capture_output=True, check=True)
        cmd = _toolscale("import-runs", str(csv), "--experiment", "big", "--benchmark", "b", "--registry", str(db),
                         "--map", "id=run_id", "--map", "params=model_params", "--map", "tokens=train_tokens",
                         "--map", "acc=score", "--map", "loss=loss", "--map", "tool_diversity=tool_diversity",
                         "--map", "task_count=task_count", "--axis", "db_count", "--map", "db_count=db_count",
                         "--map", "repair_rate=repair_rate", "--map", "seed=seed", "--json")
        waits: list[float] = []
        stop = threading.Event()

        def reader() -> None:
            while not stop.is_set():
                if db.exists():
                    t = time.perf_counter()
                    subprocess.run(_toolscale("status", "--registry", str(db), "--json"), env=env,
                                   capture_output=True)
                    waits.append(time.perf_counter() - t)
                time.sleep(0.5)

        th = threading.Thread(target=reader, daemon=True)
        th.start()
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        stop.set()
        th.join(60)
        rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        if proc.returncode != 0:
            print(proc.stderr[-2000:], file=sys.stderr)
            sys.exit(1)
        report = json.loads(proc.stdout)
        t0 = time.perf_counter()
        again = subprocess.run(cmd, env=env, capture_output=True, text=True)
        again_s = time.perf_counter() - t0
        again_report = json.loads(again.stdout) if again.returncode == 0 else {}
        size_mb = db.stat().st_size / 2**20
    records = [
        {"benchmark": "import", "figure": f"import-runs of {n:,} rows x 10 columns", "value": round(wall, 1),
         "unit": "s", "target": "<= 30 s (1M rows)"},
        {"benchmark": "import", "figure": "peak RSS of the largest child process", "value": round(rss_mb),
         "unit": "MiB", "target": "<= 1024 MiB"},
        {"benchmark": "import", "figure": "read + check, no lock held", "value": round(report["read_s"], 1),
         "unit": "s", "target": ""},
        {"benchmark": "import", "figure": "write transaction (lock held)", "value": round(report["lock_s"], 1),
         "unit": "s", "target": "<= 30 s"},
        {"benchmark": "import", "figure": f"longest concurrent status ({len(waits)} calls)",
         "value": round(max(waits), 1) if waits else None, "unit": "s", "target": "seconds, not minutes"},
        {"benchmark": "import", "figure": "re-import of the same file (no-op)", "value": round(again_s, 1),
         "unit": "s", "target": f"new_runs 0 (got {again_report.get('new_runs')})"},
        {"benchmark": "import", "figure": "registry size after the import", "value": round(size_mb),
         "unit": "MiB", "target": ""},
        {"benchmark": "import", "figure": "writing the CSV (not part of the import)", "value": round(gen_s, 1),
         "unit": "s", "target": ""},
    ]
    if not args.json:
        for r in records:
            print(f"{r['figure']:<44} {r['value']!s:>10} {r['unit']}  {r['target']}")
    print(json.dumps(records))


if __name__ == "__main__":
    main()
