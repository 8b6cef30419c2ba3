"""Collect the figures of every ``benchmarks/*.py`` script into one table.

Each script, run with ``--json``, prints as its LAST stdout line a JSON list of
``{"benchmark", "figure", "value", "unit", "target"}`` records (``target`` is the
issue's goal as text, e.g. ``"< 10 s"``). ``--quick`` is passed through for shorter runs.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def machine() -> str:
    cpu = "unknown cpu"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{platform.node()}: {os.cpu_count()} cores ({cpu}), {mem:.0f} GiB, Python {platform.python_version()}"


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    rows, failures = [], []
    for script in sorted(HERE.glob("*.py")):
        if script.name.startswith("_"):
            continue
        t0 = time.monotonic()
        cmd = [sys.executable, str(script), "--json"] + (["--quick"] if quick else [])
        proc = subprocess.run(cmd, capture_output=True, text=True)
        took = time.monotonic() - t0
        records = None
        for line in reversed(proc.stdout.strip().splitlines()):
            try:
                records = json.loads(line)
                break
            except json.JSONDecodeError:
                continue
        if proc.returncode != 0 or not isinstance(records, list):
            failures.append(f"{script.name}: exit {proc.returncode}: {(proc.stderr or proc.stdout).strip()[-300:]}")
            continue
        for r in records:
            rows.append({**r, "script": script.name, "script_s": round(took, 1)})
    print(f"machine: {machine()}")
    print(f"{'benchmark':<22} {'figure':<44} {'value':>12} {'unit':<12} target")
    for r in rows:
        value = r.get("value")
        shown = f"{value:.4g}" if isinstance(value, (int, float)) else str(value)
        print(f"{r.get('benchmark', r['script']):<22} {r.get('figure', ''):<44} {shown:>12} "
              f"{r.get('unit', ''):<12} {r.get('target', '')}")
    for f in failures:
        print(f"FAILED {f}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
