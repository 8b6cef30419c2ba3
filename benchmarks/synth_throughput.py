"""Synthesis throughput: judged trajectories per minute, in-process emulator and live stdio servers.

Target (issue 3): >= 2,000 judged trajectories per minute on one core against the emulator. The live
figure includes starting one stdio server per (server, database instance) and shutting it down. The
user-server figures run a real ``mcp-server-git`` over a scratch repository as the user's server
(issue 19 target: <= 1 connect per server per job) next to the bundled travel server.

    .venv/bin/python benchmarks/synth_throughput.py [--tasks 1024] [--live-tasks 128] [--repeats 3] [--no-live]
                                                    [--no-user] [--quick] [--json]

Prints one table (``--json``: plus, as the last line, the records ``benchmarks/run_all`` collects); timings are medians of ``--repeats`` runs (the live run once: it is slow to set up).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from synth.dataset import build_dataset, synthesize
from synth.models import Recipe


def _time(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def _user_server(tasks: int) -> tuple[float, int, int]:
    """``(seconds, connects, calls)`` of a synthesis whose tools include mcp-server-git over a scratch repo."""
    from synth.userservers import UserServers

    with tempfile.TemporaryDirectory() as d:
        repo = Path(d) / "repo"
        repo.mkdir()
        for cmd in (["init", "-q"], ["-c", "user.email=b@x", "-c", "user.name=b", "commit", "-q", "--allow-empty",
                                      "-m", "bench"]):
            subprocess.run(["git", *cmd], cwd=repo, check=True, capture_output=True)
        recipe = Recipe(task_count=tasks, tool_diversity=19, domains=("travel",), seed=0,
                        servers=(f"{sys.executable} -m mcp_server_git --repository {repo}",),
                        arg_values={"repo_path": [str(repo)]})
        t0 = time.perf_counter()
        with UserServers(recipe.servers) as live:
            build_dataset(recipe, Path(d) / "out", user_servers=live)
        return time.perf_counter() - t0, live.connects, live.calls


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=int, default=1024)
    ap.add_argument("--live-tasks", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-live", action="store_true")
    ap.add_argument("--no-user", action="store_true", help="skip the user-server (mcp-server-git) figures")
    ap.add_argument("--quick", action="store_true", help="256 emulator tasks, 32 live tasks, one repeat")
    ap.add_argument("--json", action="store_true", help="also print the records as one JSON line (last)")
    args = ap.parse_args()
    if args.quick:
        args.tasks, args.live_tasks, args.repeats = 256, 32, 1

    rows = []
    recipe = Recipe(task_count=args.tasks, tool_diversity=40, db_diversity=4, coverage_quota=0.1, support_depth=3,
                    repair_rate=0.5)
    synthesize(recipe.model_copy(update={"task_count": 32}))  # warm imports
    times = [_time(lambda: synthesize(recipe)) for _ in range(args.repeats)]
    t = statistics.median(times)
    rows.append(("emulator (in-process), synthesize", args.tasks, t, args.tasks / t * 60))
    with tempfile.TemporaryDirectory() as d:
        t = statistics.median([_time(lambda: build_dataset(recipe, d)) for _ in range(args.repeats)])
    rows.append(("emulator, build_dataset (with file writes)", args.tasks, t, args.tasks / t * 60))
    micro = Recipe(task_count=128, tool_diversity=16, db_diversity=2)
    with tempfile.TemporaryDirectory() as d:
        t = statistics.median([_time(lambda: build_dataset(micro, d)) for _ in range(args.repeats)])
    rows.append(("micro grid point (128 tasks, 16 tools)", 128, t, 128 / t * 60))
    if not args.no_live:
        live = Recipe(task_count=args.live_tasks, tool_diversity=12, db_diversity=1, backend="live")
        with tempfile.TemporaryDirectory() as d:
            t0 = time.perf_counter()
            m = build_dataset(live, d)
            t = time.perf_counter() - t0
        rows.append((f"live stdio ({len(m.servers)} servers x 1 db, incl. start-up)", args.live_tasks, t,
                     args.live_tasks / t * 60))

    user = None
    if not args.no_user:
        n_user = args.live_tasks
        secs, connects, calls = _user_server(n_user)
        user = (connects, calls)
        rows.append(("user server mcp-git + travel, live (incl. start-up)", n_user, secs, n_user / secs * 60))

    print(f"{'setting':<52} {'tasks':>6} {'seconds':>8} {'traj/min':>10}")
    for name, n, secs, rate in rows:
        print(f"{name:<52} {n:>6} {secs:>8.2f} {rate:>10.0f}")
    if user is not None:
        print(f"user server: {user[0]} connect(s) for {user[1]} tool calls in one synthesis (target <= 1)")
    if args.json:
        targets = {0: ">= 2000 /min on one core"}
        records = [{"benchmark": "synth_throughput", "figure": name, "value": round(rate, 1),
                    "unit": "trajectories/min", "target": targets.get(i, "")} for i, (name, n, secs, rate) in enumerate(rows)]
        if user is not None:
            records.append({"benchmark": "synth_throughput", "figure": "user stdio server: connects per server per job",
                            "value": user[0], "unit": "connects", "target": "<= 1"})
        print(json.dumps(records))


if __name__ == "__main__":
    main()
