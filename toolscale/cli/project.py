"""Commands on the config and the registry: init, validate, status, export, import-runs, ingest."""

from __future__ import annotations

import argparse
import sys
from importlib import resources
from pathlib import Path

from toolscale.cli._common import (Formatter, add_registry_args, check_grpo_budget, check_tool_axis, emit_json,
                                   open_fraction, print_table, registry_path, writable_file)
from toolscale.config import load_config
from toolscale.errors import ConfigError, UsageError

__all__ = ["register", "example_config_text"]


def example_config_text(preset: str = "default", domain: str = "tools") -> str:
    """The commented example config shipped with the package (``default``, ``micro``, ``demo`` or ``proxy``);
    ``domain="code"``: the code domain's (``code.toml``, the demo preset's protocol)."""
    if domain == "code":
        if preset not in ("default", "demo"):
            raise UsageError(f"--domain code has one preset, the demo-scale protocol; drop --preset {preset}")
        preset = "code"
    try:
        return resources.files("toolscale.presets").joinpath(f"{preset}.toml").read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"unknown preset {preset!r}; known: default, micro, demo, proxy") from None


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("init", help="write a commented example config (five data axes + support depth)",
                       formatter_class=Formatter,
                       epilog="example:\n  toolscale init experiment.toml\n  toolscale init micro.toml --preset micro\n"
                              "  toolscale init code.toml --domain code   # code agents, spec_dependency axis")
    p.add_argument("path", nargs="?", default="toolscale.toml", help="where to write (default: toolscale.toml)")
    p.add_argument("--preset", default="default", choices=["default", "micro", "demo", "proxy"],
                   help="which example (proxy: the proxy-ladder protocol of docs/results/; demo: the same at demo scale)")
    p.add_argument("--domain", default="tools", choices=["tools", "code"],
                   help="task domain: tools (tool calls over MCP servers) or code (code agents writing modules from "
                        "specs; the demo-scale protocol with library APIs, tasks and spec_dependency as axes)")
    p.add_argument("--force", action="store_true", help="overwrite an existing file")
    p.set_defaults(func=_init)

    p = sub.add_parser("validate", help="check a config and print what is wrong, field by field",
                       formatter_class=Formatter, epilog="example:\n  toolscale validate experiment.toml --json")
    p.add_argument("config", help="config file (TOML)")
    p.add_argument("--json", action="store_true", help="print the validated config as JSON")
    p.set_defaults(func=_validate)

    p = sub.add_parser("status", help="runs by state per experiment, running jobs, and the last failures",
                       formatter_class=Formatter, epilog="example:\n  toolscale status --json")
    add_registry_args(p)
    p.add_argument("--experiment", help="only this experiment")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_status)

    p = sub.add_parser("export", help="write every run with its axes and metrics as CSV or Parquet",
                       formatter_class=Formatter,
                       epilog="example:\n  toolscale export --experiment E --format parquet --out runs.parquet")
    add_registry_args(p)
    p.add_argument("--experiment", help="only this experiment")
    p.add_argument("--format", choices=["csv", "parquet"], default="csv", help="file format (default csv)")
    p.add_argument("--out", help="output file (default: stdout for csv)")
    p.set_defaults(func=_export)

    p = sub.add_parser("import-runs", help="load results produced elsewhere (CSV/Parquet) so fit and allocate use them",
                       formatter_class=Formatter,
                       epilog="example:\n  toolscale import-runs chinchilla.csv --experiment chinchilla "
                              "--benchmark pile-loss \\\n    --map 'Model Size=model_size' "
                              "--map 'Training FLOP=train_flops' --map loss=loss\n"
                              "  toolscale import-runs fixed.csv --experiment chinchilla --benchmark pile-loss "
                              "--map ... --update   # corrected values")
    p.add_argument("file", help="a .csv or .parquet file")
    p.add_argument("--experiment", required=True, help="experiment to import into (created if missing)")
    p.add_argument("--map", action="append", default=[], metavar="COLUMN=FIELD",
                   help="map a column to run_id, model_size, model_params, train_tokens, train_flops, score, "
                        "loss, benchmark, seed, split (fit/heldout), or an axis name (repeatable); with --config, "
                        "columns named like an axis map themselves")
    p.add_argument("--benchmark", help="benchmark name when the file has no benchmark column")
    p.add_argument("--heldout-fraction", type=open_fraction, default=0.25,
                   help="share of runs (top training FLOPs) marked held out, in (0, 1) (default 0.25)")
    p.add_argument("--update", action="store_true",
                   help="apply values that differ from the stored ones for the same run ids (without it such "
                        "conflicts are listed and nothing changes); the old values go to the run_history table")
    add_registry_args(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_import_runs)

    p = sub.add_parser("ingest", help="ingest result files written by jobs (idempotent, all or nothing)",
                       formatter_class=Formatter, epilog="examples:\n  toolscale ingest runs/ --json\n"
                                                         "  toolscale ingest rescored/ --update   # corrected scores")
    p.add_argument("folder", help="folder holding *.result.json files (searched recursively; regular files only)")
    p.add_argument("--update", action="store_true",
                   help="apply results that change stored values (a score, a done run reported failed); without "
                        "it such conflicts are listed and nothing changes; the old values go to run_history and "
                        "the experiment's fits become stale")
    add_registry_args(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_ingest)


def _init(args: argparse.Namespace) -> int:
    path = Path(args.path)
    if path.exists() and not args.force:
        raise UsageError(f"{path} exists; pass --force to overwrite it")
    path.write_text(example_config_text(args.preset, args.domain), encoding="utf-8")
    print(f"wrote {path}; next: toolscale validate {path}")
    return 0


def _validate(args: argparse.Namespace) -> int:
    try:
        cfg = load_config(args.config)
    except ConfigError as err:
        for line in str(err).splitlines():
            print(line, file=sys.stderr)
        n = len(str(err).splitlines())
        print(f"toolscale: error: {args.config} is not valid ({n} problem{'s' if n > 1 else ''})", file=sys.stderr)
        return 2
    check_tool_axis(cfg)
    check_grpo_budget(cfg)
    from eval.benchmarks import check_validation

    check_validation(cfg.eval.validation, list(cfg.eval.benchmarks))
    for m in cfg.ladder:
        if m.copy_warning:
            print(f"warning: {m.copy_warning}", file=sys.stderr)
    if args.json:
        emit_json(cfg)
    else:
        print(f"{args.config}: valid — experiment {cfg.experiment.name!r}, {len(cfg.axes)} axes "
              f"({', '.join(a.name for a in cfg.axes)}), {len(cfg.ladder)} model sizes, executor {cfg.executor.kind}")
    return 0


def _status(args: argparse.Namespace) -> int:
    from grid.registry import Registry

    with Registry(registry_path(args), read_only=True) as reg:
        counts = reg.status_counts(args.experiment)
        running = [r for r in reg.runs(args.experiment, status=["submitted", "running"])]
        failures = reg.last_failures(5, args.experiment)
    experiments = {e: {**c, "total": sum(c.values())} for e, c in counts.items()}
    if args.json:
        emit_json({"experiments": experiments, "total": sum(c["total"] for c in experiments.values()),
                   "running": [{"run_id": r.run_id, "status": r.status, "job_id": r.job_id} for r in running],
                   "failures": failures})
        return 0
    print_table([{"experiment": e, **c} for e, c in experiments.items()], title="runs by state")
    if running:
        print_table([{"run_id": r.run_id, "status": r.status, "job_id": r.job_id, "model": r.model_size}
                     for r in running[:20]], title="submitted / running")
    if failures:
        print_table([{"run_id": f["run_id"], "attempts": f["attempts"],
                      "error": (f["error"] or "").strip().splitlines()[-1][:100] if f["error"] else ""}
                     for f in failures], title="last failures")
    return 0


def _export(args: argparse.Namespace) -> int:
    import pandas as pd

    from grid.registry import Registry

    if args.format == "parquet" and not args.out:
        raise UsageError("--format parquet needs --out FILE")
    if args.out:
        writable_file(args.out)
    with Registry(registry_path(args), read_only=True) as reg:
        if args.experiment:
            reg.experiment(args.experiment)
        rows = reg.export_rows(args.experiment)
    frame = pd.DataFrame(rows)
    if args.out:  # whole or not at all: a full disk names the file and leaves no empty or cut one
        import io

        from toolscale.files import atomic_write_bytes

        buf = io.BytesIO()
        if args.format == "parquet":
            frame.to_parquet(buf, index=False)
        else:
            frame.to_csv(buf, index=False)
        atomic_write_bytes(Path(args.out), buf.getvalue())
    else:
        frame.to_csv(sys.stdout, index=False)
    if args.out:
        print(f"wrote {len(frame)} runs to {args.out}", file=sys.stderr)
    return 0


def _score_range(benchmark: str | None) -> tuple[float, float] | None:
    """``(0, 1)`` for a registered benchmark (its headline score is a share of items), else None."""
    if benchmark is None:
        return None
    from eval.benchmarks import list_benchmarks

    return (0.0, 1.0) if benchmark in {b.name for b in list_benchmarks()} else None


def _import_runs(args: argparse.Namespace) -> int:
    from grid.import_store import stage_table
    from grid.importer import parse_column_map
    from grid.registry import Registry

    cfg = load_config(args.config) if args.config else None
    axes = [a.name for a in cfg.axes] if cfg else None
    mapping = parse_column_map(args.map, axes, require_metric=not axes)
    say = _progress_line(args)
    staged = stage_table(args.file, mapping, experiment=args.experiment, benchmark=args.benchmark,
                         heldout_fraction=args.heldout_fraction, score_range=_score_range(args.benchmark),
                         config_axes=axes)
    say(f"read and checked {staged.rows:,} rows of {args.file} in {staged.read_s:.1f} s (no lock held)",
        rows=staged.rows)
    with staged, Registry(registry_path(args, cfg)) as reg:
        report = reg.store_staged(staged, args.experiment, kind="import",
                                  on_conflict="update" if args.update else "refuse", progress=say)
    report = report.model_copy(update={"read_s": staged.read_s})
    if args.json:
        emit_json(report)
    else:
        changed = f", {report.updated_runs} updated" if report.updated_runs else ""
        stale = f"; {report.stale_fits} fits now stale (rerun toolscale fit)" if report.stale_fits else ""
        print(f"imported {report.rows} rows into {args.experiment!r} ({report.new_runs} new{changed}, "
              f"{report.heldout} held out); axes: {', '.join(report.axes) or 'none'}{stale}")
    return 0


def _progress_line(args: argparse.Namespace):
    """``say(text)``: a progress line on stderr for long imports (a terminal, or tables of 100k rows and more)."""
    state = {"on": sys.stderr.isatty()}

    def say(text: str, rows: int | None = None) -> None:
        if rows is not None and rows >= 100_000:
            state["on"] = True
        if state["on"]:
            print(f"import-runs: {text}", file=sys.stderr, flush=True)
    return say


def _ingest(args: argparse.Namespace) -> int:
    from grid.registry import Registry
    from grid.results import read_results

    if not Path(args.folder).is_dir():
        raise UsageError(f"{args.folder}: no such folder (expected the folder jobs write *.result.json files to)")
    results, problems = read_results(args.folder)
    with Registry(registry_path(args)) as reg:
        report = reg.ingest(results, on_conflict="update" if args.update else "refuse")
    report = report.model_copy(update={"problems": problems + report.problems})
    if args.json:
        emit_json(report.model_dump(mode="json"))
    else:
        changed = f", {report.updated_runs} runs updated" if report.updated_runs else ""
        stale = f"; {report.stale_fits} fits now stale (rerun toolscale fit)" if report.stale_fits else ""
        print(f"ingested {report.ingested} results ({report.duplicate} already in, "
              f"{report.unknown_run} unknown runs, {len(report.problems)} problems{changed}){stale}")
        for p in report.problems:
            print(f"  {p}", file=sys.stderr)
    return 0
