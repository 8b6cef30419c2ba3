"""Sandbox escapes that succeed: the regression suite of known escapes, run against the bubblewrap jail.

Runs ``tests/synth/envs/test_sandbox_escapes.py`` (fork_exec, os.system, subprocess, ctypes, dir_fd, reads of
/etc and $HOME, sockets to host listeners, a fork bomb, a child that outlives the call, signalling host
processes; since issue 35 also nested namespaces and mounts, the kernel keyring, vsock, io_uring, ptrace and
bpf, output floods, the wall limit on the whole group, forged and scrubbed verdicts, state shared between
calls), each in bubblewrap's root and user namespace modes; every failed test is an escape that succeeded.
Target 0. ``benchmarks/reliability.py`` counts the same cases per case, beside the other reliability cases.

Usage::

    .venv/bin/python benchmarks/sandbox_escapes.py [--json] [--quick]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUITE = "tests/synth/envs/test_sandbox_escapes.py"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="accepted for run_all; the suite is already quick")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    proc = subprocess.run([sys.executable, "-m", "pytest", SUITE, "-q", "-p", "no:cacheprovider", "-rf"],
                          cwd=ROOT, capture_output=True, text=True)
    counts = {k: int(v) for v, k in re.findall(r"(\d+) (passed|failed|error)", proc.stdout)}
    failed = counts.get("failed", 0) + counts.get("error", 0)
    total = failed + counts.get("passed", 0)
    if total == 0:
        print(proc.stdout[-2000:] + proc.stderr[-2000:], file=sys.stderr)
        sys.exit(1)
    records = [
        {"benchmark": "sandbox", "figure": f"escapes that succeed, of {total} known", "value": failed,
         "unit": "escapes", "target": "0"},
    ]
    if not args.json:
        for line in proc.stdout.splitlines():
            if line.startswith("FAILED"):
                print(line)
        for r in records:
            print(f"{r['figure']:<44} {r['value']:>10} {r['unit']}")
    print(json.dumps(records))


if __name__ == "__main__":
    main()
