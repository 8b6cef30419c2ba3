"""How long `build_design` takes for the presets and larger designs (prints figures; asserts nothing).

Run:  .venv/bin/python benchmarks/design_time.py [--repeat 3] [--json] [--quick]

Targets: the presets well under a second each (the CLI builds the design on every call);
an 10-axis two-level fraction (exact alias map over 2^10 - 1 effects) in a few seconds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import tomllib
from importlib import resources

from grid.design import build_design
from toolscale.config import parse_config


def _preset(name: str) -> dict:
    return tomllib.loads(resources.files("toolscale.presets").joinpath(f"{name}.toml").read_text(encoding="utf-8"))


def _wide(kind: str, n_axes: int, **design) -> dict:
    base = _preset("micro")
    axes = []
    for i in range(n_axes):
        quality = i % 2 == 1
        axes.append({"name": f"x{i}", "kind": "quality" if quality else "diversity", "unit": "u",
                     "min": 1, "max": 64, "levels": 3, "integer": True})
    return {**base, "axes": axes, "design": {**base["design"], "kind": kind, "constraints": [],
                                             "fraction_points": None, **design}}


CASES = {
    "micro preset (2^(6-3) III, 3 rungs)": lambda: _preset("micro"),
    "default preset (gsd, ~300 runs)": lambda: _preset("default"),
    "8 axes, fractional res IV": lambda: _wide("fractional", 8, resolution=4),
    "10 axes, fractional res IV": lambda: _wide("fractional", 10, resolution=4),
    "8 axes, lhs 200 points": lambda: _wide("lhs", 8, lhs_samples=200),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", action="store_true", help="print records for benchmarks/run_all")
    ap.add_argument("--quick", action="store_true", help="3 repeats")
    args = ap.parse_args()
    repeat = 3 if args.quick else args.repeat
    records = []
    if not args.json:
        print(f"{'case':36s} {'runs':>6s} {'points':>6s} {'res':>4s} {'median s':>8s}")
    for name, make in CASES.items():
        config = parse_config(make())
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            d = build_design(config)
            times.append(time.perf_counter() - t0)
        res = d.summary.resolution
        median = statistics.median(times)
        records.append({"benchmark": "grid design", "figure": f"{name}: {d.summary.runs} runs (median)",
                        "value": median, "unit": "s", "target": "< 1 s for presets"})
        if not args.json:
            print(f"{name:36s} {d.summary.runs:6d} {d.summary.points:6d} {str(res or '-'):>4s} {median:8.3f}")
    if args.json:
        print(json.dumps(records))


if __name__ == "__main__":
    main()
