"""Cluster commands: ``toolscale preflight`` (check a config before a launch) and ``toolscale calibrate-cost``
(what a PFLOP and an evaluation cost, measured on pilot runs)."""

from __future__ import annotations

import argparse
import sys

from toolscale.cli._common import Formatter, add_registry_args, config_of, emit_json, positive_int, print_table, \
    registry_path

__all__ = ["register"]

_PREFLIGHT_EPILOG = """\
examples:
  toolscale preflight --config docs/cluster.toml                 # login checks + one tiny job per rung
  toolscale preflight --config docs/cluster.toml --login-only    # no jobs: templates, paths, storage, locks
  toolscale preflight --config my.toml --size qwen3-4b --json
  toolscale preflight --config my.toml --executor local          # the node checks on this machine

Checks: local model folders when nodes are offline, chat templates that put loss on assistant tokens,
the batch layout per rung, the storage estimate against the quota, O_EXCL lock files, the vLLM env; then
per rung on a node: a shared file system, CUDA and bf16, one training step, one eval step.
Exit 2 when any check fails (each failure is one line naming the value)."""

_CALIBRATE_EPILOG = """\
examples:
  toolscale calibrate-cost --config docs/cluster.toml --gpu-hour-usd 2.5
  toolscale calibrate-cost --config my.toml --json

Reads the experiment's done runs (three pilot runs per rung are enough), their measured training FLOPs
and their GPU-seconds (sacct over every attempt, else what each job recorded), and prints per rung the
measured PFLOP per GPU-hour and what [cost] per_pflop and eval_gpu_s_per_run should be."""


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``preflight`` and ``calibrate-cost``."""
    p = sub.add_parser("preflight", help="check a cluster config before launching: templates, paths, storage, "
                                         "and one tiny training + eval job per rung",
                       formatter_class=Formatter, epilog=_PREFLIGHT_EPILOG)
    p.add_argument("--config", required=True, metavar="CONFIG", help="experiment config (TOML)")
    p.add_argument("--executor", choices=["slurm", "local", "debug"],
                   help="where the node jobs run (default: the config's executor.kind)")
    p.add_argument("--size", action="append", metavar="NAME", help="only this rung's node job (repeatable)")
    p.add_argument("--login-only", action="store_true", help="run the login checks only, submit no job")
    p.add_argument("--timeout-min", type=positive_int, default=60, metavar="N",
                   help="minutes to wait for the node jobs (default 60)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=_preflight)

    p = sub.add_parser("calibrate-cost", help="measured compute cost per PFLOP and per evaluation, from pilot runs",
                       formatter_class=Formatter, epilog=_CALIBRATE_EPILOG)
    add_registry_args(p, config_required=True)
    p.add_argument("--gpu-hour-usd", type=float, metavar="USD",
                   help="price of one GPU-hour (default: the config's cost.gpu_hour_usd)")
    p.add_argument("--json", action="store_true", help="print the calibration as JSON")
    p.set_defaults(func=_calibrate)


def _preflight(args: argparse.Namespace) -> int:
    from pipeline.preflight import run_preflight
    from toolscale.config import load_config

    cfg = load_config(args.config)
    if args.size:
        for name in args.size:
            cfg.model_size(name)  # ConfigError naming the known rungs
    say = None if args.json else (lambda line: print(line, file=sys.stderr))
    report = run_preflight(cfg, executor=args.executor, sizes=args.size, jobs=not args.login_only,
                           timeout_s=60.0 * args.timeout_min, progress=say)
    if args.json:
        emit_json(report.model_dump(mode="json"))
    else:
        print_table([{"check": c.name, "rung": c.rung or "", "where": c.where, "status": c.status,
                      "detail": c.detail} for c in report.checks], title=f"preflight of {report.experiment!r}")
        failed = [c for c in report.checks if c.status == "fail"]
        for c in failed:
            print(f"toolscale: error: preflight {c.name}" + (f" ({c.rung})" if c.rung else "") + f": {c.detail}",
                  file=sys.stderr)
        print("preflight passed" if report.ok else f"preflight failed: {len(failed)} check(s)")
    return 0 if report.ok else 2


def _calibrate(args: argparse.Namespace) -> int:
    from grid.registry import Registry
    from slurm.calibration import calibrate, gpu_seconds
    from toolscale.errors import UsageError

    cfg = config_of(args)
    if args.gpu_hour_usd is not None and not args.gpu_hour_usd > 0:
        raise UsageError(f"--gpu-hour-usd must be a positive price, got {args.gpu_hour_usd}")
    with Registry(registry_path(args, cfg), read_only=True) as reg:
        reg.experiment(cfg.experiment.name)
        runs = reg.runs(cfg.experiment.name, status="done")
    price = cfg.cost.gpu_hour_cost(args.gpu_hour_usd, cfg.experiment.budget_unit)
    gpu_s, source = gpu_seconds(runs)
    report = calibrate(cfg.experiment.name, runs, gpu_s, {s.name: s.gpus for s in cfg.ladder},
                       unit=cfg.experiment.budget_unit, gpu_hour_cost=price, source=source)
    if args.json:
        emit_json(report.model_dump(mode="json"))
        return 0
    print_table([{"rung": r.model_size, "runs": r.runs, "PFLOPs": r.pflops, "GPU-h": r.gpu_hours,
                  "PFLOP/GPU-h": r.pflop_per_gpu_hour, "per_pflop": r.per_pflop, "eval GPU-s/run": r.eval_gpu_s,
                  "source": r.source} for r in report.rungs], title=f"measured cost of {report.experiment!r}")
    print(report.advice)
    return 0
