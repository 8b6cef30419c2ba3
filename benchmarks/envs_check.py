"""Executable environments: build and artifact-check speed, sandbox call latency.

Builds N environments (default 50; ``--quick``: 10) with distractors, writes ``envs.jsonl``, then times
``toolscale envs check`` on it (every golden call replayed twice, one sandbox process per run per row),
one sandbox round trip in the bubblewrap jail and without it (``insecure``), and a full golden episode
through ``Environment.step``.

Usage::

    .venv/bin/python benchmarks/envs_check.py [--quick] [--json] [--n 50]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--n", type=int, default=None)
    args = ap.parse_args()
    n = args.n or (10 if args.quick else 50)

    from synth.envs.api import Environment
    from synth.envs.build import build_envs
    from synth.envs.io import dump_envs, load_envs
    from synth.envs.models import SandboxLimits
    from synth.envs.sandbox import run_calls
    from synth.envs.validate import check_file

    with tempfile.TemporaryDirectory(prefix="toolscale-bench-envs-") as tmp:
        t0 = time.perf_counter()
        samples = build_envs(n, seed=0)
        build_s = time.perf_counter() - t0
        path = dump_envs(samples, Path(tmp) / "envs.jsonl")
        t0 = time.perf_counter()
        results = check_file(path)
        check_s = time.perf_counter() - t0
        size_kb = path.stat().st_size / 1024
        loaded = load_envs(path)

    src = "def ping(x):\n    return {'x': x}\n"
    lat, lat_insecure = [], []
    for _ in range(20):
        for limits, out in ((SandboxLimits(), lat), (SandboxLimits(isolation="insecure"), lat_insecure)):
            t0 = time.perf_counter()
            run = run_calls({"ping": src}, [{"name": "ping", "arguments": {"x": 1}}], limits=limits)
            out.append(time.perf_counter() - t0)
            assert run.status == "ok", run
    ep = []
    for s in loaded[:10]:
        env = Environment(s)
        env.reset()
        t0 = time.perf_counter()
        for call in env.golden_calls():
            env.step(call)
        ep.append(time.perf_counter() - t0)
        assert env.reward() == 1.0
    targets = statistics.mean(len(s.targets) for s in loaded)
    records = [
        {"benchmark": "envs", "figure": f"build_envs({n}) incl. validation", "value": round(build_s, 2),
         "unit": "s", "target": ""},
        {"benchmark": "envs", "figure": f"envs check on {n} rows", "value": round(check_s, 2), "unit": "s",
         "target": "seconds, not minutes"},
        {"benchmark": "envs", "figure": "rows passing the check", "value": sum(r.ok for r in results),
         "unit": "rows", "target": f"{n}"},
        {"benchmark": "envs", "figure": "sandbox round trip, jailed (median of 20)", "value": round(
            1000 * statistics.median(lat), 1), "unit": "ms", "target": "<= 100 ms"},
        {"benchmark": "envs", "figure": "sandbox round trip, no jail (median of 20)", "value": round(
            1000 * statistics.median(lat_insecure), 1), "unit": "ms", "target": ""},
        {"benchmark": "envs", "figure": f"golden episode via step() ({targets:.1f} calls avg)",
         "value": round(1000 * statistics.median(ep), 1), "unit": "ms", "target": ""},
        {"benchmark": "envs", "figure": "artifact size per row", "value": round(size_kb / max(1, n), 1),
         "unit": "KiB", "target": ""},
    ]
    if not args.json:
        for r in records:
            print(f"{r['figure']:<44} {r['value']:>10} {r['unit']}")
    print(json.dumps(records))


if __name__ == "__main__":
    main()
