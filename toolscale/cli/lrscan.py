"""``toolscale lr-scan``: the learning-rate scan of the proxy protocol, before ``grid design``."""

from __future__ import annotations

import argparse
import sys

from toolscale.cli._common import Formatter, emit_json, print_table
from toolscale.config import load_config
from toolscale.errors import UsageError

__all__ = ["register", "center_levels"]

EPILOG = """\
examples:
  toolscale lr-scan docs/results/proxy.toml            # train the scan, print the rates per rung
  toolscale lr-scan docs/results/proxy.toml --json     # the stored result (lr_scan.json) as JSON

The config's [lr_scan] names the rungs (three widths), the rates and the tokens per parameter.
Each scanned rung trains at every rate on the design's center point and keeps [eval] checkpoints; each
is scored on the validation benchmark ([eval] validation), never on training loss; a diverging run
(NaN loss) is failed with its log tail and the best rate is chosen among the rest. The rule in [lr_scan].rule
carries the best rates to every rung; `grid design` then records each run's rate.
A rerun reuses finished scan trainings."""


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``lr-scan`` to the CLI."""
    p = sub.add_parser("lr-scan", help="scan learning rates at two widths and carry them to the ladder by a rule",
                       formatter_class=Formatter, epilog=EPILOG)
    p.add_argument("config", help="experiment config (TOML) with an [lr_scan] section")
    p.add_argument("--json", action="store_true", help="print the scan result as JSON")
    p.set_defaults(func=_scan)


def center_levels(config) -> dict[str, float]:
    """Axis levels of the design's first center point (the midpoint of every axis when it has none)."""
    from grid.design import build_design

    design = build_design(config)
    for r in design.runs:
        if r.metadata.get("center"):
            return dict(r.recipe)
    import numpy as np

    from grid.levels import coded_to_real

    return {a.name: float(coded_to_real(a, np.zeros(1))[0]) for a in config.axes}


def _scan(args: argparse.Namespace) -> int:
    from pipeline.lr_scan import run_lr_scan, scan_path

    config = load_config(args.config)
    if config.lr_scan is None:
        raise UsageError(f"{args.config} has no [lr_scan] section (rungs, learning_rates, tokens_per_param)")
    result = run_lr_scan(config, center_levels(config), progress=lambda m: print(m, file=sys.stderr, flush=True))
    if args.json:
        emit_json(result)
        return 0
    print_table([{"rung": r.rung, "width": r.width, "lr": r.learning_rate, "steps": r.steps, "status": r.status,
                  f"{result.validation} bpb": r.valid_bpb if r.valid_bpb is not None else "",
                  "at step": r.valid_step if r.valid_step is not None else "",
                  "training loss": r.loss if r.loss is not None else "", "error": (r.error or "")[:80]}
                 for r in result.runs], title="scan runs (chosen by validation bits per byte)")
    print(f"rule {result.rule}: lr(h) = {result.anchor_lr:.3g} x (h / {result.anchor_width})^-{result.exponent:.3f}")
    print_table([{"rung": k, "learning_rate": v} for k, v in result.learning_rates.items()], title="rates per rung")
    if result.at_grid_edge:
        print(f"warning: the best rate of {', '.join(result.at_grid_edge)} is at the edge of the scanned grid")
    print(f"wrote {scan_path(config)}; next: toolscale grid design {args.config}")
    return 0
