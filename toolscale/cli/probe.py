"""``toolscale probe DIR``: groundedness, coverage and probe cost of a synthesised dataset."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from toolscale.cli._common import Formatter, add_registry_args, config_of, emit_json, positive_float, print_table, \
    registry_path
from toolscale.errors import UsageError

__all__ = ["register", "target_flops_from_config"]

EPILOG = """\
examples:
  toolscale probe data/d-0001 --json
  toolscale probe data/d-0001 --config experiment.toml --model-size tiny-m
  toolscale probe data/d-0001 --target-flops 3e15 --no-registry"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("probe", help="measure groundedness (masking probe), coverage and probe cost of a dataset",
                       formatter_class=Formatter, epilog=EPILOG)
    p.add_argument("dir", metavar="DIR", help="dataset folder written by `toolscale synth` (train.jsonl)")
    add_registry_args(p)
    p.add_argument("--model-size", metavar="NAME",
                   help="ladder rung whose training FLOPs the cost share uses (default: the config's target, "
                        "else the largest)")
    p.add_argument("--target-flops", type=positive_float, metavar="FLOPS",
                   help="training FLOPs of the target run (overrides --model-size)")
    p.add_argument("--no-registry", action="store_true", help="only update DIR/manifest.json")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_probe)


def target_flops_from_config(config: Any, model_size: str | None) -> float | None:
    """Planned training FLOPs ``6 N D`` of rung ``model_size``, else of the config's target rung
    (:attr:`toolscale.config.ExperimentConfig.target_size`: the configured one, else the largest)."""
    if config is None:
        return None
    size = config.model_size(model_size) if model_size else config.target_size
    return size.planned_flops


def _probe(args: argparse.Namespace) -> int:
    from probes.pipeline import probe_dataset
    from toolscale.config import ProbeSpec

    config = config_of(args)
    if args.model_size and config is None:
        raise UsageError("--model-size needs --config (the ladder is defined there)")
    spec = config.probe if config is not None else ProbeSpec()
    target = args.target_flops or target_flops_from_config(config, args.model_size)
    if target is None:
        from probes.pipeline import read_dataset

        _, manifest = read_dataset(args.dir)
        t = manifest.get("target_train_flops")
        target = float(t) if isinstance(t, int | float) and t > 0 else None
    bar = _progress_bar()
    try:
        summary = probe_dataset(args.dir, spec=spec, target_train_flops=target,
                                progress=None if bar is None else _callback(bar))
    finally:
        if bar is not None:
            bar.stop()
    if not args.no_registry:
        _save(args, config, summary)
    if args.json:
        emit_json({"measured_groundedness": summary.measured_groundedness, "coverage": summary.coverage,
                   "agreement": summary.agreement, "probe_cost_share": summary.probe_cost_share,
                   **summary.model_dump(mode="json", exclude={"measured_groundedness", "coverage", "agreement",
                                                              "probe_cost_share"})})
        return 0
    cal = summary.calibration
    figures = {
        "trajectories": summary.n_trajectories, "actions": summary.n_actions, "scored actions": summary.n_scored,
        "measured_groundedness": summary.measured_groundedness,
        "symbolic_groundedness": summary.symbolic_groundedness, "coverage": summary.coverage,
        "agreement": summary.agreement, "threshold": None if cal is None else cal.threshold,
        "probe_cost_share": summary.probe_cost_share}
    print_table([{"measure": k, "value": v} for k, v in figures.items()], title=f"probe {args.dir}")
    if cal is not None:
        cm = cal.confusion
        print(f"calibrated against {cal.reference} labels on {cal.n_calibration} actions, evaluated on "
              f"{cal.n_evaluation}: TP {cm.tp}  FP {cm.fp}  TN {cm.tn}  FN {cm.fn}  "
              f"(balanced accuracy {_f(cal.balanced_accuracy)}, AUC {_f(cal.auc)})")
    if summary.probe_reliable is False:
        print("warning: the probe does not beat a constant verdict on the evaluation split here; "
              "use symbolic_groundedness")
    if summary.problems:
        print(f"{len(summary.problems)} data problems, first: {summary.problems[0]}")
    print(f"per-action scores: {summary.scores_path}")
    return 0


def _f(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def _save(args: argparse.Namespace, config: Any, summary: Any) -> None:
    import json

    from grid.registry import Registry
    from probes.pipeline import SCORES_FILE, read_dataset

    d = Path(args.dir)
    _, manifest = read_dataset(d)
    scores = [json.loads(line) for line in (d / SCORES_FILE).read_text(encoding="utf-8").splitlines() if line]
    keep = ("trajectory", "call_id", "tool", "groundedness", "grounded", "derivable", "injected", "depth", "error")
    payload = {**manifest, "probe_actions": [{k: s.get(k) for k in keep} for s in scores]}
    dataset_id = str(manifest.get("dataset_id") or d.resolve().name)
    with Registry(registry_path(args, config)) as reg:
        stored = reg.dataset(dataset_id)
        experiment = manifest.get("experiment") or (stored.experiment if stored else None) or (
            config.experiment.name if config is not None else None)
        recipe = manifest.get("recipe") or (stored.recipe if stored else None) or {}
        seed = manifest.get("seed", recipe.get("seed", stored.seed if stored else 0))
        reg.save_dataset(dataset_id, experiment=experiment, recipe=recipe,
                         seed=int(seed) if isinstance(seed, int) else 0, path=str(d.resolve()), manifest=payload)


def _progress_bar():
    """A transient rich progress bar when stderr is a TTY, else None."""
    if not sys.stderr.isatty():
        return None
    from rich.console import Console
    from rich.progress import Progress

    bar = Progress(transient=True, console=Console(file=sys.stderr))
    bar.start()
    return bar


def _callback(bar):
    tasks: dict[str, int] = {}

    def cb(stage: str, done: int, total: int) -> None:
        if stage not in tasks:
            tasks[stage] = bar.add_task(stage, total=total)
        bar.update(tasks[stage], completed=done, total=total)

    return cb
