"""``toolscale envs build|check``: executable RL environments (ASTRA RL branch) and their artifact check."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from toolscale.cli._common import Formatter, seed_int, emit_json, nonneg_int
from toolscale.errors import UsageError

__all__ = ["register"]


def _tiers(text: str) -> dict[str, int]:
    """argparse type for ``high=1,medium=2,low=2``."""
    out: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        tier, _, count = part.partition("=")
        if tier not in ("high", "medium", "low") or not count.isdigit():
            raise argparse.ArgumentTypeError(f"expected tier=count pairs like high=1,medium=2,low=2, got {part!r}")
        out[tier] = int(count)
    return out


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``envs build`` and ``envs check``."""
    p = sub.add_parser("envs", help="executable RL environments from QA dependency graphs (build, check)",
                       formatter_class=Formatter,
                       epilog="examples:\n  toolscale envs build --out envs/ --n 50 --seed 0\n"
                              "  toolscale envs check envs/envs.jsonl --json")
    es = p.add_subparsers(dest="envs_command", metavar="SUBCOMMAND", title="subcommands")

    b = es.add_parser("build", help="generate, compile, validate and write DIR/envs.jsonl",
                      formatter_class=Formatter,
                      epilog="example:\n  toolscale envs build --out envs/ --n 50 --seed 0 "
                             "--distractors high=1,medium=2,low=2")
    b.add_argument("--out", required=True, metavar="DIR", help="output folder (envs.jsonl is written there)")
    b.add_argument("--n", type=nonneg_int, default=50, help="number of environments (default 50)")
    b.add_argument("--seed", type=seed_int, default=0, help="database and sampling seed (default 0)")
    b.add_argument("--domains", help="comma-separated server domains (default: the training domains)")
    b.add_argument("--heldout", action="store_true", help="use the held-out domains (for evaluation)")
    b.add_argument("--hop-budget", type=int, default=3, metavar="H", help="max tool hops per graph (default 3)")
    b.add_argument("--distractors", type=_tiers, default={"high": 1, "medium": 2, "low": 2},
                   help="distractor tools per tier (default high=1,medium=2,low=2; '' for none)")
    b.add_argument("--json", action="store_true", help="machine-readable summary")
    b.set_defaults(func=_build)

    c = es.add_parser("check", help="replay every golden call of an envs.jsonl in the sandbox; exit 1 if any "
                                    "row is rejected", formatter_class=Formatter,
                      epilog="example:\n  toolscale envs check envs/envs.jsonl --json\n\n"
                             "Generated code runs jailed by bubblewrap (uid 65534; new PID, network, IPC and UTS\n"
                             "namespaces; a read-only root with only the interpreter; an empty tmpfs work folder).\n"
                             "Where the jail cannot be set up the check refuses to run (exit 1) and says why.")
    c.add_argument("file", help="an envs.jsonl artifact (any producer)")
    c.add_argument("--cpu-s", type=float, default=5.0, help="CPU seconds per sandbox run (default 5)")
    c.add_argument("--memory-mb", type=int, default=512, help="memory limit per sandbox run in MiB (default 512)")
    c.add_argument("--wall-s", type=float, default=10.0, help="wall-clock seconds per sandbox run (default 10)")
    c.add_argument("--insecure-in-process", action="store_true",
                   help="DEBUGGING ONLY: run generated code WITHOUT the bubblewrap jail (a plain child process "
                        "as your user, able to read your files and reach your network)")
    c.add_argument("--json", action="store_true", help="machine-readable report")
    c.set_defaults(func=_check)

    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def _progress(total: int | None, label: str):
    if not sys.stderr.isatty():
        return None, None
    from rich.progress import Progress

    prog = Progress(transient=True)
    task = prog.add_task(label, total=total)
    return prog, (lambda *_: prog.advance(task))


def _build(args: argparse.Namespace) -> int:
    from synth.envs.build import build_envs_report
    from synth.envs.io import dump_envs

    domains = None
    if args.heldout:
        from synth.servers.db import HELDOUT_DOMAINS

        domains = list(HELDOUT_DOMAINS)
    if args.domains:
        domains = [d.strip() for d in args.domains.split(",") if d.strip()]
    if args.hop_budget < 1:
        raise UsageError(f"--hop-budget must be >= 1, got {args.hop_budget}")
    prog, tick = _progress(args.n, "building environments")
    if prog:
        with prog:
            samples, rejected = build_envs_report(args.n, args.seed, domains, args.distractors or None,
                                                  hop_budget=args.hop_budget, progress=tick)
    else:
        samples, rejected = build_envs_report(args.n, args.seed, domains, args.distractors or None,
                                              hop_budget=args.hop_budget)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} exists and is not a folder")
    path = dump_envs(samples, out / "envs.jsonl")
    summary = {"path": str(path), "written": len(samples), "requested": args.n, "rejected_draws": len(rejected),
               "structures": _count(s.structure for s in samples), "domains": _count(s.domain for s in samples),
               "rejections": [{"env_id": r.env_id, "reasons": r.reasons} for r in rejected]}
    if args.json:
        emit_json(summary)
    else:
        print(f"wrote {len(samples)} environments to {path} ({len(rejected)} draws rejected); "
              f"next: toolscale envs check {path}")
    return 0 if len(samples) == args.n else 1


def _count(values) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return out


def _check(args: argparse.Namespace) -> int:
    from synth.envs.models import SandboxLimits
    from synth.envs.validate import check_file, summarize

    for flag, value in (("--cpu-s", args.cpu_s), ("--wall-s", args.wall_s)):
        if not math.isfinite(value) or not 0 < value <= 86400:
            raise UsageError(f"{flag} must be a finite number of seconds in (0, 86400]; got {value}")
    if not 64 <= args.memory_mb <= 1 << 20:
        raise UsageError(f"--memory-mb must be in [64, 1048576] MiB; got {args.memory_mb}")
    isolation = "insecure" if args.insecure_in_process else "namespaces"
    if isolation == "insecure":
        print("WARNING: --insecure-in-process: generated tool code runs WITHOUT isolation, as your user, with "
              "access to your files and network. Use it for debugging only, never on untrusted artifacts.",
              file=sys.stderr)
    else:
        from synth.envs.jail import require_jail

        require_jail()
    limits = SandboxLimits(cpu_s=args.cpu_s, memory_mb=args.memory_mb, wall_s=args.wall_s, isolation=isolation)
    prog, tick = _progress(None, "replaying")
    if prog:
        with prog:
            results = check_file(args.file, limits=limits, progress=tick)
    else:
        results = check_file(args.file, limits=limits)
    if not results:
        raise UsageError(f"{args.file} has no rows (expected an envs.jsonl artifact, one JSON object per line)")
    summary = summarize(results)
    bad = [r for r in results if not r.ok]
    if args.json:
        emit_json({**summary, "file": args.file,
                   "rejected_rows": [{"row": r.row, "env_id": r.env_id, "reasons": r.reasons} for r in bad]})
    else:
        for r in bad:
            print(f"REJECTED row {r.row} ({r.env_id}):")
            for reason in r.reasons:
                print(f"  - {reason}")
        iso = ", ".join(summary["isolation"]) or "none (nothing replayed)"
        print(f"{args.file}: {summary['passed']} of {summary['rows']} rows pass, {summary['rejected']} rejected "
              f"(isolation: {iso})")
    return 1 if bad else 0
