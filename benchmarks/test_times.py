"""Where `make test`'s time goes: pytest's ``--durations`` per test module, and the tests over 10 s (issue 36).

Reads the output of ``pytest -m "not slow and not gpu" --durations=0`` (a log file, or runs it with
``--run``) and writes a table: per module, the seconds of its tests' setup, call and teardown, largest
first; then every test phase over ``--over`` seconds with whether the test's docstring gives a reason
(a test over 10 s needs one). Figures are wall seconds on whatever else the machine ran: the header
says the load average at the end and the suite's own wall time.

Usage::

    .venv/bin/python benchmarks/test_times.py --log pytest.log [--out benchmarks/test_times.txt]
    .venv/bin/python benchmarks/test_times.py --log a.log b.log --scope "tests/eval tests/slurm"  # some folders
    .venv/bin/python benchmarks/test_times.py --run [--out benchmarks/test_times.txt]   # runs the suite

``--scope`` names what the logs cover (folders, markers) when they are not the whole default suite (several logs
add up).
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINE = re.compile(r"^([\d.]+)s (setup|call|teardown)\s+(\S+)")
SUMMARY = re.compile(r"\b(passed|failed)\b.* in [\d.]+s")


def parse(text: str) -> tuple[list[tuple[float, str, str]], str]:
    """``([(seconds, phase, node id)], summary line)`` from a pytest log with ``--durations``."""
    rows = [(float(m.group(1)), m.group(2), m.group(3)) for line in text.splitlines() if (m := LINE.match(line))]
    summary = next((line.strip("= ") for line in reversed(text.splitlines()) if SUMMARY.search(line)), "")
    return rows, summary


def has_docstring(node_id: str) -> bool:
    """Whether the test function of ``path::name[param]`` has a docstring (where the reason for its time goes)."""
    path, _, name = node_id.partition("::")
    name = name.split("[")[0].split("::")[-1]
    try:
        tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
            return ast.get_docstring(node) is not None
    return False


def table(rows: list[tuple[float, str, str]], summary: str, over: float, scope: str = "",
          load: tuple[float, float, float] | None = None) -> str:
    per_module: Counter[str] = Counter()
    for seconds, _, node in rows:
        per_module[node.split("::")[0]] += seconds
    total = sum(per_module.values())
    head = f"pytest --durations=0 on {scope}" if scope else "pytest -m 'not slow and not gpu' --durations=0"
    lines = [f"{head}: {summary}",
             f"sum of test phases {total:.0f} s; " + (f"load average at the end {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}"
                                                       if load else "load not recorded (read from a log)"),
             "", f"{'seconds':>8} {'share':>6}  module"]
    lines += [f"{t:8.1f} {100 * t / total:5.1f}%  {mod}" for mod, t in per_module.most_common()]
    slow = sorted(((s, p, n) for s, p, n in rows if s > over), reverse=True)
    lines += ["", f"test phases over {over:g} s (reason: the test's docstring says why it takes that long)",
              f"{'seconds':>8} {'phase':<8} {'reason':<6} test"]
    lines += [f"{s:8.1f} {p:<8} {'yes' if has_docstring(n) else 'NO':<6} {n}" for s, p, n in slow]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--log", nargs="+", help="pytest logs with --durations=0 output (several add up)")
    src.add_argument("--run", action="store_true", help="run the default suite now (minutes) and read its log")
    ap.add_argument("--out", help="write the table here (default: print it)")
    ap.add_argument("--over", type=float, default=10.0, help="list test phases longer than this (s)")
    ap.add_argument("--scope", default="", help="what the logs cover, when not the whole default suite")
    args = ap.parse_args(argv)
    if args.run:
        proc = subprocess.run([sys.executable, "-m", "pytest", "-m", "not slow and not gpu", "--durations=0", "-q",
                               "-p", "no:cacheprovider"], cwd=ROOT, capture_output=True, text=True)
        text = proc.stdout + proc.stderr
    else:
        text = "\n".join(Path(p).read_text(encoding="utf-8", errors="replace") for p in args.log)
    rows, summary = parse(text)
    if args.log and len(args.log) > 1:
        summary = "; ".join(parse(Path(p).read_text(encoding="utf-8", errors="replace"))[1] for p in args.log)
    if not rows:
        print("no --durations lines found", file=sys.stderr)
        return 2
    out = table(rows, summary, args.over, args.scope, os.getloadavg() if args.run else None)
    if args.out:
        Path(args.out).write_text(out, encoding="utf-8")
    else:
        print(out, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
