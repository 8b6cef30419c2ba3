"""Commands that run the grid: launch, sync, cancel (a thin layer over :mod:`slurm`)."""

from __future__ import annotations

import argparse
import sys

from toolscale.cli._common import (Formatter, add_registry_args, config_of, emit_json, positive_int, print_table,
                                   registry_path)
from toolscale.errors import UsageError

__all__ = ["register"]


def register(sub: argparse._SubParsersAction) -> None:
    """Add launch, sync and cancel."""
    p = sub.add_parser("launch", help="submit the experiment's pending runs (SLURM job arrays, local, debug)",
                       formatter_class=Formatter,
                       epilog="examples:\n  toolscale launch --config my.toml --executor slurm\n"
                              "  toolscale launch --config my.toml --executor local --max-parallel 2 --wait\n"
                              "  toolscale launch --config my.toml --resume      # rerun failed/cancelled runs\n"
                              "  toolscale launch --config my.toml --pilot 3     # 3 pending runs per rung first\n"
                              "  toolscale launch --config my.toml --dry-run --json")
    add_registry_args(p, config_required=True)
    p.add_argument("--executor", choices=["slurm", "local", "debug"],
                   help="where jobs run (default: the config's executor.kind)")
    p.add_argument("--max-parallel", type=positive_int, metavar="N",
                   help="runs at once (array parallelism; default: executor.max_parallel)")
    p.add_argument("--resume", action="store_true", help="also resubmit failed and cancelled runs (never done ones)")
    p.add_argument("--pilot", type=positive_int, metavar="N",
                   help="submit only N pending runs per ladder rung (pilots: check throughput and cost first)")
    p.add_argument("--wait", action="store_true", help="sync until every run finished, with a progress bar")
    p.add_argument("--dry-run", action="store_true",
                   help="show what would be submitted per model size (runs, resources) and submit nothing")
    p.add_argument("--folder", help="root of submitit folders and result files (default: executor.folder)")
    p.add_argument("--job-kind", default="pipeline", help="registered job kind to run (default: pipeline)")
    p.add_argument("--poll", type=float, default=5.0, metavar="S", help="seconds between syncs with --wait")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_launch)

    p = sub.add_parser("sync", help="ingest result files, update run states from the scheduler, retry failures",
                       formatter_class=Formatter,
                       epilog="examples:\n  toolscale sync --config my.toml\n"
                              "  toolscale sync --config my.toml --wait --json")
    add_registry_args(p)
    p.add_argument("--experiment", help="experiment (default: the config's)")
    p.add_argument("--folder", help="root of result files (default: executor.folder, else ./runs)")
    p.add_argument("--no-retry", action="store_true", help="do not resubmit failed runs")
    p.add_argument("--wait", action="store_true", help="keep syncing until no run is live, with a progress bar")
    p.add_argument("--poll", type=float, default=5.0, metavar="S", help="seconds between syncs with --wait")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_sync)

    p = sub.add_parser("cancel", help="cancel an experiment's live jobs and record the runs as cancelled",
                       formatter_class=Formatter,
                       epilog="examples:\n  toolscale cancel --config my.toml\n"
                              "  toolscale cancel --config my.toml --pending   # stop the whole experiment\n"
                              "  toolscale cancel --experiment E --registry r.duckdb --folder runs\n"
                              "`toolscale launch --resume` restarts cancelled runs.")
    add_registry_args(p)
    p.add_argument("--experiment", help="experiment (default: the config's)")
    p.add_argument("--pending", action="store_true",
                   help="also cancel runs not started yet, so no launch or waiting launcher starts them")
    p.add_argument("--folder", help="root of launch folders (default: executor.folder, else ./runs)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_cancel)


def _progress(total_of):
    """A callback drawing a rich progress bar over finished runs when stderr is a terminal;
    elsewhere (logs, CI) it prints one line on stderr each time a run finishes."""
    if not sys.stderr.isatty():
        return None, _log_lines(total_of)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(TextColumn("runs"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
                   TimeElapsedColumn(), transient=False)
    task = bar.add_task("", total=None)

    def update(report) -> None:
        c = report.counts
        finished = c.get("done", 0) + c.get("failed", 0) + c.get("cancelled", 0)
        bar.update(task, total=total_of(report), completed=finished,
                   description=f"done {c.get('done', 0)} failed {c.get('failed', 0)} live {report.active}")
    return bar, update


def _log_lines(total_of):
    """The non-terminal progress: ``runs 5/24 (done 5 failed 0 live 2) 3.1 min`` when the count moves."""
    import time

    t0, last = time.monotonic(), [None]

    def update(report) -> None:
        c = report.counts
        finished = c.get("done", 0) + c.get("failed", 0) + c.get("cancelled", 0)
        if finished == last[0]:
            return
        last[0] = finished
        print(f"runs {finished}/{total_of(report)} (done {c.get('done', 0)} failed {c.get('failed', 0)} "
              f"live {report.active}) {(time.monotonic() - t0) / 60:.1f} min", file=sys.stderr, flush=True)
    return update


def _wait(reg_path: str, cfg, args, top_up=None):
    from slurm.sync import wait

    bar, update = _progress(lambda r: sum(r.counts.values()))
    if bar is None:
        return wait(reg_path, config=cfg, folder=args.folder, poll_s=args.poll, top_up=top_up, progress=update)
    with bar:
        return wait(reg_path, config=cfg, folder=args.folder, poll_s=args.poll, top_up=top_up, progress=update)


def _sync_line(rep) -> str:
    c = rep.counts
    return (f"ingested {rep.ingested} results ({rep.duplicate} already in); {len(rep.transitions)} state changes; "
            f"{len(rep.retried)} retried; now: " + ", ".join(f"{k} {v}" for k, v in c.items() if v))


def _pilots(cfg, reg, n: int) -> list[str]:
    """``n`` pending runs per rung: the design's center points first (the middle of every axis), then by run id."""
    from grid.registry import Registry

    with Registry(reg, read_only=True) as r:
        r.experiment(cfg.experiment.name)
        pending = r.runs(cfg.experiment.name, status="pending")
    picked: list[str] = []
    for size in cfg.ladder:
        rows = sorted((x for x in pending if x.model_size == size.name),
                      key=lambda x: (not (x.metadata or {}).get("center"), x.run_id))
        picked += [x.run_id for x in rows[:n]]
    if not picked:
        raise UsageError(f"no pending runs of {cfg.experiment.name!r} to pilot; run `toolscale grid design` first")
    return picked


def _check_stored_config(cfg, reg: str, path: str) -> None:
    """One config per experiment: refuse a ``--config`` whose run settings differ from the copy ``grid design``
    stored (fit and allocate read that copy), naming the keys; executor and resource settings may differ."""
    from grid.registry import Registry
    from toolscale.config import config_differences
    from toolscale.errors import ToolscaleError

    try:
        with Registry(reg, read_only=True) as r:
            stored = r.experiment(cfg.experiment.name).config
    except ToolscaleError:
        return  # no registry or no such experiment yet: launch says so itself
    keys = config_differences(stored, cfg) if stored else []
    if keys:
        shown = ", ".join(keys[:6]) + (f" and {len(keys) - 6} more" if len(keys) > 6 else "")
        raise UsageError(f"{path} differs from the config stored for experiment {cfg.experiment.name!r} by "
                         f"`grid design` in {shown}; launch with the config it was designed with, or design a new "
                         "experiment")


def _launch(args: argparse.Namespace) -> int:
    from slurm.launcher import launch

    cfg = config_of(args)
    reg = registry_path(args, cfg)
    _check_stored_config(cfg, reg, args.config)
    kw = dict(executor=args.executor, max_parallel=args.max_parallel, folder=args.folder, job_kind=args.job_kind)
    if args.pilot:
        kw["run_ids"] = _pilots(cfg, reg, args.pilot)
    if args.dry_run:
        from slurm.launcher import preview

        plan = preview(cfg, reg, resume=args.resume, max_parallel=args.max_parallel, job_kind=args.job_kind,
                       run_ids=kw.get("run_ids"))
        if args.json:
            emit_json({"executor": args.executor or cfg.executor.kind, "plan": plan})
        else:
            print_table([{"model_size": g["model_size"], "runs": len(g["runs"]),
                          "time_min": g["parameters"]["timeout_min"], "cpus": g["parameters"]["cpus_per_task"],
                          "mem_gb": g["parameters"]["mem_gb"], "gpus": g["parameters"].get("gpus_per_node", 0),
                          "partition": g["parameters"].get("slurm_partition", "")} for g in plan],
                        title=f"would submit (executor {args.executor or cfg.executor.kind})")
        return 0
    if cfg.eval.checkpoints and cfg.eval.validation is not None:
        from eval.benchmarks import check_validation

        check_validation(cfg.eval.validation, list(cfg.eval.benchmarks))  # before anything trains
    from pipeline.preflight import launch_checks

    launch_checks(cfg)  # local models on offline clusters, templates that train, storage within the quota
    report = launch(cfg, reg, resume=args.resume, **kw)
    out: dict = {"launch": report.model_dump(mode="json")}
    if not args.json:
        print(f"submitted {len(report.submitted)} runs of {report.experiment!r} in {report.arrays} "
              f"submission(s) via {report.executor}" + (f" (launch {report.launch_id})" if report.launch_id else "")
              + (f"; {len(report.left_pending)} wait for a free slot"
                 + ("" if args.wait else " (`toolscale launch --wait` starts them as slots free up)")
                 if report.left_pending else ""))
    if args.wait:
        top_up = (lambda: launch(cfg, reg, **kw)) if report.executor == "local" else None
        final = _wait(reg, cfg, args, top_up=top_up)
        out["sync"] = final.model_dump(mode="json")
        if not args.json:
            print(_sync_line(final))
            for p in final.problems:
                print(f"  {p}", file=sys.stderr)
    if args.json:
        emit_json(out)
    return 0


def _sync(args: argparse.Namespace) -> int:
    from slurm.sync import sync

    cfg = config_of(args)
    if cfg is None and not args.experiment:
        raise UsageError("sync needs --config CONFIG or --experiment NAME")
    reg = registry_path(args, cfg)
    if args.wait:
        if cfg is None:
            raise UsageError("sync --wait needs --config CONFIG")
        rep = _wait(reg, cfg, args)
    else:
        rep = sync(reg, config=cfg, experiment=args.experiment, folder=args.folder, retry=not args.no_retry)
    if args.json:
        emit_json(rep)
        return 0
    print(_sync_line(rep))
    for p in rep.problems:
        print(f"  {p}", file=sys.stderr)
    if rep.transitions:
        print_table([{"run_id": k, "status": v} for k, v in list(rep.transitions.items())[:20]],
                    title="state changes")
    return 0


def _cancel(args: argparse.Namespace) -> int:
    from slurm.launcher import cancel

    cfg = config_of(args)
    experiment = args.experiment or (cfg.experiment.name if cfg else None)
    if not experiment:
        raise UsageError("cancel needs --config CONFIG or --experiment NAME")
    rep = cancel(cfg, registry_path(args, cfg), experiment=experiment, folder=args.folder, pending=args.pending)
    if args.json:
        emit_json(rep)
        return 0
    print(f"cancelled {len(rep.cancelled)} runs of {experiment!r} ({len(rep.job_ids)} jobs)")
    for e in rep.errors:
        print(f"  {e}", file=sys.stderr)
    return 0
