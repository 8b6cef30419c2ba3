"""The reliability table: attacks and careless inputs tried on the project, and how many held.

Each row of ``benchmarks/reliability_cases.csv`` is one case (what was tried, its category, the issue that
found it) and the tests that try it; a case *holds* when every one of its tests passes (all parametrizations,
both jail modes), and *broke* otherwise. A new case joins as a new row. Target: 0 broke in every category.

Usage::

    .venv/bin/python benchmarks/reliability.py [--json] [--quick] [--category TEXT]
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = Path(__file__).resolve().parent / "reliability_cases.csv"


def load_cases(path: Path = CASES) -> list[dict[str, str]]:
    """The case rows: ``case``, ``category``, ``issue``, ``tests`` (pytest node ids, space-separated)."""
    with open(path, newline="", encoding="utf-8") as fh:
        return [row for row in csv.DictReader(fh) if row.get("case")]


def run_tests(nodes: list[str]) -> dict[str, str]:
    """``{"file::test": "passed" | "failed" | "skipped"}`` over all parametrizations of each node."""
    with tempfile.TemporaryDirectory() as tmp:
        xml = Path(tmp) / "junit.xml"
        subprocess.run([sys.executable, "-m", "pytest", *nodes, "-q", "-p", "no:cacheprovider",
                        f"--junitxml={xml}"], cwd=ROOT, capture_output=True, text=True)
        if not xml.exists():
            return {}
        outcome: dict[str, str] = {}
        for tc in ET.parse(xml).getroot().iter("testcase"):
            file = tc.get("classname", "").replace(".", "/") + ".py"
            node = f"{file}::{tc.get('name', '').split('[', 1)[0]}"
            kind = ("failed" if tc.find("failure") is not None or tc.find("error") is not None
                    else "skipped" if tc.find("skipped") is not None else "passed")
            prev = outcome.get(node)
            if prev == "failed" or kind == "failed":
                outcome[node] = "failed"
            elif prev == "passed" or kind == "passed":
                outcome[node] = "passed"
            else:
                outcome[node] = kind
        return outcome


def verdicts(cases: list[dict[str, str]], outcome: dict[str, str]) -> list[dict[str, str]]:
    """Each case with ``verdict``: ``held`` (every test passed), ``broke``, or ``not run`` (missing/skipped)."""
    out = []
    for c in cases:
        states = [outcome.get(t, "missing") for t in c["tests"].split()]
        verdict = ("broke" if "failed" in states else "held" if states and all(s == "passed" for s in states)
                   else "not run")
        out.append({**c, "verdict": verdict})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="accepted for run_all; every case runs")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--category", help="only cases whose category contains this text")
    args = ap.parse_args()
    cases = [c for c in load_cases() if not args.category or args.category in c["category"]]
    nodes = sorted({t for c in cases for t in c["tests"].split()})
    rows = verdicts(cases, run_tests(nodes))
    held = Counter(r["category"] for r in rows if r["verdict"] == "held")
    broke = Counter(r["category"] for r in rows if r["verdict"] == "broke")
    total = Counter(r["category"] for r in rows)
    records = [{"benchmark": "reliability", "figure": f"{cat}: held of {total[cat]} cases", "value": held[cat],
                "unit": "cases", "target": f"{total[cat]} ({broke[cat]} broke)"} for cat in total]
    if not args.json:
        print(f"{'category':<40} {'cases':>6} {'held':>6} {'broke':>6}")
        for cat in total:
            print(f"{cat:<40} {total[cat]:>6} {held[cat]:>6} {broke[cat]:>6}")
        print(f"{'all':<40} {len(rows):>6} {sum(held.values()):>6} {sum(broke.values()):>6}")
        for r in rows:
            if r["verdict"] != "held":
                print(f"  {r['verdict'].upper()}: {r['case']} ({r['tests']})")
    print(json.dumps(records))


if __name__ == "__main__":
    main()
