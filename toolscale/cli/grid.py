"""``toolscale grid design``: build the fractional-factorial design x ladder and record it as pending runs."""

from __future__ import annotations

import argparse
import sys

from toolscale.cli._common import Formatter, check_tool_axis, emit_json, print_table
from toolscale.config import load_config
from toolscale.errors import UsageError

__all__ = ["register"]

_DESIGN_EPILOG = """\
examples:
  toolscale grid design my.toml --dry-run            # print the design, write nothing
  toolscale grid design my.toml --dry-run --json     # runs, resolution, levels, heldout_runs, extrapolation_factor
  toolscale grid design my.toml                      # record the runs as pending (idempotent)
  toolscale grid design my.toml --new-version        # after changing the config: add a second design version
  toolscale grid design my.toml --augment next.json  # add `toolscale next`'s proposed runs as a group of their own

A changed config gives a new design version; it is never mixed silently with the
experiment's existing version (pass --new-version, or rename the experiment)."""


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``grid`` group and its ``design`` subcommand."""
    grid = sub.add_parser("grid", help="experimental designs over the data axes x the model ladder",
                          formatter_class=Formatter, epilog="example:\n  toolscale grid design my.toml --dry-run")
    gsub = grid.add_subparsers(dest="grid_command", metavar="SUBCOMMAND", title="subcommands")
    p = gsub.add_parser("design", help="build the design, print its summary and record the runs as pending",
                        formatter_class=Formatter, epilog=_DESIGN_EPILOG)
    p.add_argument("config", help="experiment config (TOML)")
    p.add_argument("--registry", metavar="PATH", help="DuckDB registry file (default: the config's)")
    p.add_argument("--dry-run", action="store_true", help="build and print the design; write nothing")
    p.add_argument("--new-version", action="store_true",
                   help="record this design even though the experiment has runs of another design version")
    p.add_argument("--show-runs", action="store_true", help="also list every planned run (table or JSON)")
    p.add_argument("--augment", metavar="NEXT.json",
                   help="add the runs a `toolscale next` proposal names (its --json) as pending runs of their own group")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_design)
    grid.set_defaults(func=lambda args: (grid.print_help(), 2)[1])


def _design(args: argparse.Namespace) -> int:
    from grid.design import build_design

    config = load_config(args.config)
    check_tool_axis(config)
    if args.augment:
        from toolscale.cli.next_runs import augment

        return augment(args, config, _scan_rates(args, config))
    design = build_design(config, learning_rates=_scan_rates(args, config))
    for m in config.ladder:
        if m.copy_warning:
            print(f"warning: {m.copy_warning}", file=sys.stderr)
    written = None
    if not args.dry_run:
        from grid.planner import record_design
        from grid.registry import Registry

        with Registry(args.registry or config.experiment.registry) as reg:
            written = record_design(reg, design, config, new_version=args.new_version)
    if args.json:
        from grid.design import DesignReport

        report = DesignReport.of(design, written, show_runs=args.show_runs)
        emit_json(report.model_dump(mode="json", exclude=None if args.show_runs else {"run_list"}))
        return 0
    _print_summary(design, written, args)
    return 0


def _scan_rates(args: argparse.Namespace, config) -> dict[str, float] | None:
    """The learning rates of the config's scan (None without an [lr_scan] section)."""
    if config.lr_scan is None:
        return None
    from pipeline.lr_scan import read_scan, scan_path

    scan = read_scan(config)
    if scan is None and not args.dry_run:
        raise UsageError(f"{args.config} has an [lr_scan] section but {scan_path(config)} does not exist; "
                         f"run `toolscale lr-scan {args.config}` first")
    return scan.learning_rates if scan is not None else None


def _print_summary(design, written, args: argparse.Namespace) -> None:
    s = design.summary
    res = f"resolution {s.resolution_roman}" if s.resolution else "no regular resolution (multi-level)"
    sizes = len({c.model_size for c in s.cells})
    print(f"design {s.design_version} for {s.experiment!r}: {s.runs} runs over {sizes} model sizes "
          f"({s.fit_runs} fitted on {s.fitted_sizes}, {s.heldout_runs} held out); {s.kind}, {s.points} points "
          f"({s.center_points} center), {res}; quality x diversity clear of main effects: "
          f"{'yes' if s.qd_clear_of_main else 'NO'}; D-efficiency {s.d_efficiency:.3f}")
    if s.generators:
        print(f"generators: {s.generators}")
    print_table([{"axis": a, "unit": s.units[a], "levels": len(v), "values": ", ".join(f"{x:g}" for x in v)}
                 for a, v in s.levels.items()], title="levels per axis")
    print_table([{"model": c.model_size, "x tokens": c.token_multiplier, "N": c.model_params,
                  "steps": c.max_steps, "D": c.train_tokens, "FLOPs": c.train_flops, "runs": c.runs,
                  "split": c.split} for c in s.cells], title="cells (rung x token multiplier)")
    factor = s.extrapolation_factor
    six = f" ({s.extrapolation_factor_6nd:.1f}x in 6ND)" if factor and s.extrapolation_factor_6nd else ""
    print(f"split {s.split_rule}: {s.fit_runs} fit, {s.heldout_runs} held out "
          f"({100 * s.heldout_share:.1f}%)" + (f", largest held-out / largest fitted FLOPs = {factor:.1f}x{six}, "
                                                   "attention and unembedding counted" if factor else ""))
    print(f"FLOPs {s.flops_range[0]:.3g} .. {s.flops_range[1]:.3g}; estimated cost "
          f"{s.estimated_cost.total:,.0f} {s.estimated_cost.unit} (data {s.estimated_cost.data:,.0f}, "
          f"compute {s.estimated_cost.compute:,.0f})")
    if s.storage is not None:
        st = s.storage
        print(f"storage {st.total_gb:,.1f} GB under executor.folder: final models {st.final_models_gb:,.1f} GB, "
              f"checkpoints {st.checkpoints_gb:,.1f} GB (" + ("kept after success" if st.keep_checkpoints else
                                                            "one per running run, deleted after success")
              + f"), datasets {st.datasets_gb:,.1f} GB")
    print(f"interactions: {s.qd_statement}")
    print(f"ladder: {s.ladder_statement}")
    for h in s.alias_highlights[:8]:
        print(f"  alias: {h}")
    if args.show_runs:
        print_table([{"run_id": r.run_id, "model": r.model_size, "seed": r.seed, "split": r.split,
                      **{k: v for k, v in r.recipe.items()}} for r in design.runs], title="runs")
    if written is None:
        print("dry run: nothing written")
    elif written.new_runs == 0:
        print(f"unchanged: design {written.design_version} and its {s.runs} runs were already recorded")
    else:
        print(f"recorded {written.new_runs} pending runs ({written.existing_runs} already present) "
              f"in {args.registry or 'the config registry'}")
