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


def _add_reader_args(p: argparse.ArgumentParser) -> None:
    """``import-runs``' row and column options: ``--where``, ``--set``, ``--checkpoints``, ``--weight``."""
    p.add_argument("--where", metavar="EXPR", help="keep the rows for which this SQL condition on the file's columns "
                                                   "is true, e.g. \"State = 'finished'\" or \"loss < 4\"")
    p.add_argument("--set", dest="derive", action="append", default=[], metavar="NAME=EXPR",
                   help="add a column computed from others before mapping, e.g. 'tokens=step*2097152' (repeatable)")
    p.add_argument("--checkpoints", choices=["last", "all"], default="last",
                   help="with a step column: keep each run's last checkpoint (default) or all of them (each a run "
                        "<id>@<step>; two-step laws fit stage 2 on all)")
    p.add_argument("--weight", metavar="COLUMN",
                   help="a column of standard errors of the score (else the loss), stored and used as fit weights")


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

    p = sub.add_parser("export", help="write every run (and scored checkpoint) with axes and metrics as CSV/Parquet",
                       formatter_class=Formatter,
                       epilog="examples:\n  toolscale export --experiment E --out runs.parquet   # Parquet by its suffix\n"
                              "  toolscale export --experiment E --long --out runs.parquet\n"
                              "  python -c \"import datasets; print(datasets.load_dataset('parquet', "
                              "data_files='runs.parquet'))\"")
    add_registry_args(p)
    p.add_argument("--experiment", help="only this experiment")
    p.add_argument("--format", choices=["csv", "parquet"],
                   help="file format (default: from the --out suffix, .parquet or .pq for Parquet, else csv)")
    p.add_argument("--long", action="store_true",
                   help="a tidy long table: one row per run, benchmark and metric (score, stderr, split, axes as "
                        "columns), which loads as a Hugging Face dataset")
    p.add_argument("--out", help="output file (default: stdout for csv)")
    p.set_defaults(func=_export)

    p = sub.add_parser("import-runs", help="load results produced elsewhere (CSV/Parquet, lm-eval JSON, a W&B export) "
                                           "so fit and allocate use them",
                       formatter_class=Formatter, epilog=IMPORT_EXAMPLES)
    p.add_argument("file", help="a .csv or .parquet file; with --from lm-eval a results JSON or a folder of them")
    p.add_argument("--experiment", required=True, help="experiment to import into (created if missing)")
    p.add_argument("--from", dest="source", choices=["csv", "lm-eval", "wandb"], default="csv",
                   help="what the file is: a table (csv, the default; Parquet too), lm-evaluation-harness results "
                        "(lm-eval), or a W&B runs or history export (wandb)")
    p.add_argument("--map", action="append", default=[], metavar="COLUMN=FIELD",
                   help="map a column to run_id (kept verbatim), model_size, model_params, train_tokens, train_flops, "
                        "score, loss, benchmark (a long table: one row per run and task), seed, split (fit/heldout), "
                        "step, unique_tokens, or an axis (repeatable); any other target is refused; with --config, "
                        "columns named like an axis map themselves")
    p.add_argument("--axis", action="append", default=[], metavar="NAME",
                   help="declare a data axis NAME that --map may target (without a config; repeatable)")
    p.add_argument("--benchmark", help="benchmark name when the file has no benchmark column")
    _add_reader_args(p)
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


IMPORT_EXAMPLES = """\
examples:
  toolscale import-runs chinchilla.csv --experiment chinchilla --benchmark pile-loss \\
      --map 'Model Size=model_size' --map 'Training FLOP=train_flops' --map loss=loss --where 'loss < 3.7'
  toolscale import-runs results/ --from lm-eval --experiment pythia --map acc=score --weight acc_stderr \\
      --set 'tokens=step*2097152' --map tokens=train_tokens
  toolscale import-runs runs.csv --from wandb --experiment mine --where "State = 'finished'" \\
      --map params=model_size --map tokens=train_tokens --map task=benchmark --map acc=score \\
      --axis n_tools --map n_tools=n_tools
  toolscale import-runs fixed.csv --experiment chinchilla --benchmark pile-loss --map ... --update
sizes and tokens read 70M, 2.8B, 1.4T; NaN and empty cells are missing values"""


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
    for warning in [m.copy_warning for m in cfg.ladder] + [cfg.train.abf_warning]:
        if warning:
            print(f"warning: {warning}", file=sys.stderr)
    if args.json:
        emit_json(cfg)
    else:
        print(f"{args.config}: valid — experiment {cfg.experiment.name!r}, {_count(len(cfg.axes), 'axis', 'axes')} "
              f"({', '.join(a.name for a in cfg.axes)}), {_count(len(cfg.ladder), 'model size', 'model sizes')}, executor {cfg.executor.kind}")
    return 0


def _status(args: argparse.Namespace) -> int:
    from grid.registry import Registry

    with Registry(registry_path(args), read_only=True) as reg:
        if args.experiment:
            reg.experiment(args.experiment)  # an unknown name is refused, naming the known ones
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


def _count(n: int, one: str, many: str) -> str:
    """``1 axis``, ``3 axes``."""
    return f"{n} {one if n == 1 else many}"


def _export(args: argparse.Namespace) -> int:
    import pandas as pd

    from grid.registry import Registry

    fmt = args.format or ("parquet" if args.out and Path(args.out).suffix.lower() in (".parquet", ".pq") else "csv")
    if fmt == "parquet" and not args.out:
        raise UsageError("--format parquet needs --out FILE")
    if args.out is not None:  # "" is refused, not read as stdout
        writable_file(args.out, suffixes=(".parquet", ".pq") if fmt == "parquet" else (".csv",),
                      protect=(registry_path(args), getattr(args, "config", None)))
    with Registry(registry_path(args), read_only=True) as reg:
        if args.experiment:
            reg.experiment(args.experiment)
        rows = _long_rows(reg, args.experiment) if args.long else reg.export_rows(args.experiment)
    frame = _step_column(pd.DataFrame(rows))
    if args.out:  # whole or not at all: a full disk names the file and leaves no empty or cut one
        import io

        from toolscale.files import atomic_write_bytes

        buf = io.BytesIO()
        if fmt == "parquet":
            frame.to_parquet(buf, index=False)
        else:
            frame.to_csv(buf, index=False)
        atomic_write_bytes(Path(args.out), buf.getvalue())
    else:
        frame.to_csv(sys.stdout, index=False)
    if args.out:
        runs = frame["run_id"].nunique() if len(frame) else 0  # the wide table adds a row per scored checkpoint
        print(f"wrote {len(frame)} rows ({runs} run{'s' if runs != 1 else ''}) to {args.out}", file=sys.stderr)
    return 0


def _step_column(frame):
    """``frame`` with its ``step`` column, if any row has one, next to ``run_id`` (whole numbers as a nullable
    integer column, empty for rows without a step)."""
    if "step" not in frame.columns:
        return frame
    step = frame["step"].astype("float64")
    values = step.dropna()
    if len(values) and (values == values.round()).all():
        step = step.astype("Int64")
    out = frame.drop(columns="step")
    out.insert(list(out.columns).index("run_id") + 1 if "run_id" in out.columns else 0, "step", step)
    return out


def _long_rows(reg, experiment: str | None) -> list[dict]:
    """One row per run, benchmark and metric: the run's fields and axes (its ``step`` when it was imported with
    one), then the metric's value and stderr."""
    out = []
    for r in reg.runs(experiment):
        base = {"run_id": r.run_id, "experiment": r.experiment, "split": r.split, "model_size": r.model_size,
                "model_params": r.model_params, "train_tokens": r.train_tokens, "train_flops": r.train_flops,
                "seed": r.seed, "status": r.status, "source": r.source, **{k: float(v) for k, v in r.recipe.items()}}
        if r.metadata.get("step") is not None:  # imported with a step column (<id>@<step>: --checkpoints all)
            base["step"] = r.metadata["step"]
        for key, value in r.metrics.items():
            bench, _, metric = key.rpartition("/")
            out.append({**base, "benchmark": bench, "metric": metric, "value": value, "stderr": r.stderrs.get(key)})
    return out


def _score_range(benchmark: str | None) -> tuple[float, float] | None:
    """``(0, 1)`` for a registered benchmark (its headline score is a share of items), else None."""
    if benchmark is None:
        return None
    from eval.benchmarks import list_benchmarks

    return (0.0, 1.0) if benchmark in {b.name for b in list_benchmarks()} else None


def _import_runs(args: argparse.Namespace) -> int:
    import tempfile

    from grid.import_store import stage_table
    from grid.importer import parse_column_map
    from grid.registry import Registry

    cfg = load_config(args.config) if args.config else None
    axes = [a.name for a in cfg.axes] if cfg else None
    mapping = parse_column_map(args.map, axes, require_metric=False, extra_axes=args.axis)
    say = _progress_line(args)
    with tempfile.TemporaryDirectory(prefix="toolscale-read-") as tmp:
        path, mapping = _source_table(args, mapping, Path(tmp))
        staged = stage_table(path, mapping, experiment=args.experiment, benchmark=args.benchmark,
                             heldout_fraction=args.heldout_fraction, score_range=_score_range(args.benchmark),
                             config_axes=axes, where=args.where, derive=args.derive, checkpoints=args.checkpoints,
                             weight=args.weight)
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
        print(f"imported {report.rows} runs into {args.experiment!r} ({report.new_runs} new{changed}, "
              f"{report.heldout} held out); axes: {', '.join(report.axes) or 'none'}{stale}")
        for note in report.notes:
            print(f"note: {note}")
    return 0


def _source_table(args: argparse.Namespace, mapping: dict[str, str], tmp: Path) -> tuple[Path, dict[str, str]]:
    """The table to stage (the file itself, or lm-eval / W&B rows written to ``tmp``) and the mapping with the
    source's default columns added where the user mapped neither the target nor the column."""
    from grid.readers import DEFAULT_MAPS, read_source, write_rows

    if args.source == "csv":
        return Path(args.file), mapping
    rows = read_source(args.source, args.file)
    columns = {k for row in rows for k in row}
    used = set(mapping.values())
    for column, target in DEFAULT_MAPS[args.source]:
        filled = any(row.get(column, "").strip() for row in rows)
        if target not in mapping and column in columns and column not in used and filled:
            mapping = {**mapping, target: column}
    return write_rows(rows, tmp / "table.parquet"), mapping


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
    if not Path(registry_path(args)).exists():  # results belong to runs a registry already holds
        raise UsageError(f"registry not found: {registry_path(args)} (ingest adds results to the runs of an existing "
                         "registry; check --registry or the config's experiment.registry)")
    if not results and problems:
        raise UsageError(f"{args.folder}: no readable result among {len(problems)} file(s); first: {problems[0]}")
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
