"""``toolscale probe DIR``: groundedness, coverage and probe cost of a synthesised dataset."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from toolscale.cli._common import Formatter, add_registry_args, config_of, emit_json, positive_float, positive_int, \
    print_table, registry_path
from toolscale.errors import UsageError

__all__ = ["register", "target_flops_from_config"]

EPILOG = """\
examples:
  toolscale probe data/d-0001 --json
  toolscale probe data/d-0001 --config experiment.toml --model-size tiny-m
  toolscale probe data/d-0001 --target-flops 3e15 --no-registry
  toolscale probe data/d-0001 --export-annotation ann/d-0001 --n 200   # writes ann/d-0001.jsonl and .csv
  toolscale probe data/d-0001 --import-annotation ann/d-0001.csv       # agreement with the human labels

The probe kind is [probe].kind in the config: copy (training-free, default), lm or hf:MODEL_DIR.
Without --config or --target-flops the cost share is against the default preset's target rung."""


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
    p.add_argument("--export-annotation", metavar="FILE",
                   help="also write a stratified sample of actions to label, FILE.jsonl and FILE.csv")
    p.add_argument("--n", type=positive_int, default=200, metavar="N", help="actions in the exported sample")
    p.add_argument("--import-annotation", metavar="FILE",
                   help="read human labels (grounded / not grounded / unsure) and report agreement with them")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_probe)

    p = sub.add_parser("probe-shared", help="train one cross-fitted lm probe for an experiment's datasets, "
                                            "score each with a probe that never saw it",
                       formatter_class=Formatter,
                       epilog="examples:\n  toolscale probe-shared runs/E/datasets/* --out runs/E/probe "
                              "--experiment-flops 4.9e12 --config E.toml\n\n"
                              "The lm settings are [probe] of --config (kind is taken as lm). Training is paid "
                              "once: its share and each dataset's scoring share are against --experiment-flops "
                              "(the experiment's total training FLOPs).")
    p.add_argument("dirs", metavar="DIR", nargs="+", help="dataset folders (at least 2, to cross-fit)")
    p.add_argument("--out", required=True, metavar="DIR", help="folder for the saved probes and shared_probe.json")
    p.add_argument("--experiment-flops", required=True, type=positive_float, metavar="FLOPS",
                   help="the experiment's total training FLOPs (the cost shares' denominator)")
    p.add_argument("--config", help="experiment config whose [probe] settings train the probe")
    p.add_argument("--json", action="store_true", help="machine-readable output (SharedProbeReport)")
    p.set_defaults(func=_probe_shared)


def _probe_shared(args: argparse.Namespace) -> int:
    from probes.models import SharedProbeReport
    from probes.shared import probe_with_shared, train_shared
    from toolscale.config import ProbeSpec

    config = config_of(args)
    spec = (config.probe if config is not None else ProbeSpec()).model_copy(update={"kind": "lm"})
    missing = [d for d in args.dirs if not (Path(d) / "train.jsonl").is_file()]
    if missing:
        raise UsageError(f"not a dataset folder (no train.jsonl): {missing[0]}")
    shared = train_shared(args.dirs, spec, args.out)
    summaries = {d: probe_with_shared(d, shared, spec, experiment_train_flops=args.experiment_flops)
                 for d in sorted(shared.models)}
    report = SharedProbeReport(shared=shared, summaries=summaries, experiment_train_flops=args.experiment_flops,
                               train_share=shared.train_flops / args.experiment_flops)
    if args.json:
        emit_json(report.model_dump(mode="json"))
        return 0
    rows = []
    for d, s in report.summaries.items():
        cal = s.calibration
        rows.append({"dataset": d, "probe": shared.models[d], "agreement": s.agreement,
                     "balanced accuracy": None if cal is None else cal.balanced_accuracy,
                     "measured_groundedness": s.measured_groundedness, "scoring share": s.probe_cost_share})
    print_table(rows, title=f"shared lm probe: {len(shared.trained_on)} folds over {len(shared.models)} datasets")
    print(f"training paid once: {shared.train_flops:.3g} FLOPs, {report.train_share:.4f} of the experiment's "
          f"{args.experiment_flops:.3g}")
    return 0


def target_flops_from_config(config: Any, model_size: str | None) -> float | None:
    """Planned training FLOPs ``6 N D`` of rung ``model_size``, else of the config's target rung
    (:attr:`toolscale.config.ExperimentConfig.target_size`: the configured one, else the largest)."""
    if config is None:
        return None
    size = config.model_size(model_size) if model_size else config.target_size
    return size.planned_flops


def _probe(args: argparse.Namespace) -> int:
    from probes.measure import probe_dataset
    from toolscale.config import ProbeSpec

    config = config_of(args)
    if args.model_size and config is None:
        raise UsageError("--model-size needs --config (the ladder is defined there)")
    spec = config.probe if config is not None else ProbeSpec()
    if args.import_annotation:
        return _import(args, spec)
    target, target_name = _target(args, config)
    bar = _progress_bar()
    try:
        summary = probe_dataset(args.dir, spec=spec, target_train_flops=target, target_name=target_name,
                                progress=None if bar is None else _callback(bar))
    finally:
        if bar is not None:
            bar.stop()
    exported = _export(args, spec) if args.export_annotation else None
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
        "probe kind": summary.kind, "trajectories": summary.n_trajectories, "actions": summary.n_actions,
        "scored actions": summary.n_scored, "measured_groundedness": summary.measured_groundedness,
        "symbolic_groundedness": summary.symbolic_groundedness, "coverage": summary.coverage,
        "agreement": summary.agreement, "threshold": None if cal is None else cal.threshold,
        "probe_cost_share": summary.probe_cost_share}
    print_table([{"measure": k, "value": v} for k, v in figures.items()], title=f"probe {args.dir}")
    if cal is not None:
        cm, iv = cal.confusion, cal.intervals
        print(f"against {cal.reference} labels (threshold from {cal.n_calibration} actions, figures on the other "
              f"{cal.n_evaluation}): TP {cm.tp}  FP {cm.fp}  TN {cm.tn}  FN {cm.fn}")
        print(f"  agreement {_f(cal.agreement)}{_ci(iv and iv.agreement)} (always-grounded baseline "
              f"{_f(cal.baseline_agreement)}), balanced accuracy {_f(cal.balanced_accuracy)}"
              f"{_ci(iv and iv.balanced_accuracy)}, kappa {_f(cal.kappa)}{_ci(iv and iv.kappa)}, "
              f"AUC {_f(cal.auc)}{_ci(iv and iv.auc)}")
        if summary.exact_match_balanced_accuracy is not None:
            print(f"  provenance on the same split: exact match balanced accuracy "
                  f"{_f(summary.exact_match_balanced_accuracy)}, with normalised matches "
                  f"{_f(summary.provenance_balanced_accuracy)}")
    print(f"cost share against {summary.cost.target or 'the given target'}: {_f(summary.probe_cost_share, 4)}")
    if exported is not None:
        print(f"annotation sample: {exported[0]} and {exported[1]} (fill the label column: grounded, "
              "not grounded or unsure)")
    if summary.probe_reliable is False:
        print("warning: the probe does not beat a constant verdict on the evaluation split here; "
              "use symbolic_groundedness")
    if summary.problems:
        print(f"{len(summary.problems)} data problems, first: {summary.problems[0]}")
    print(f"per-action scores: {summary.scores_path}")
    return 0


def _f(x: float | None, digits: int = 3) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def _ci(iv: Any) -> str:
    return f" [{iv.low:.3f}, {iv.high:.3f}]" if iv else ""


def _target(args: argparse.Namespace, config: Any) -> tuple[float, str]:
    """Target FLOPs and what they are: --target-flops, the config's rung, the manifest's, else the default
    preset's target rung (so the cost share is always a number)."""
    from probes.measure import read_dataset

    if args.target_flops:
        return args.target_flops, "--target-flops"
    if config is not None:
        name = args.model_size or config.target_size.name
        return target_flops_from_config(config, args.model_size), f"rung {name} of {args.config}"
    _, manifest = read_dataset(args.dir)
    t = manifest.get("target_train_flops")
    if isinstance(t, int | float) and not isinstance(t, bool) and t > 0:
        return float(t), "target_train_flops of the manifest"
    from importlib import resources

    from toolscale.config import load_config

    preset = load_config(resources.files("toolscale.presets").joinpath("default.toml"))
    return target_flops_from_config(preset, None), f"rung {preset.target_size.name} of the default preset"


def _scores(args: argparse.Namespace, spec: Any) -> list[dict[str, Any]]:
    import json

    from probes.measure import SCORES_FILE

    f = Path(args.dir) / SCORES_FILE
    return [json.loads(line) for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]


def _export(args: argparse.Namespace, spec: Any) -> tuple[Path, Path]:
    from probes.annotation import annotation_sample, write_annotation
    from probes.measure import read_dataset

    rows, _ = read_dataset(args.dir)
    return write_annotation(annotation_sample(rows, _scores(args, spec), args.n, seed=spec.seed),
                            args.export_annotation)


def _import(args: argparse.Namespace, spec: Any) -> int:
    """Agreement with human labels; reads DIR/probe_scores.jsonl (probing first when it is missing)."""
    import json

    from probes.annotation import human_agreement, read_labels
    from probes.measure import SCORES_FILE, probe_dataset, read_dataset
    from toolscale.files import atomic_write_text

    d = Path(args.dir)
    _, manifest = read_dataset(d)
    if not (d / SCORES_FILE).is_file():
        target, name = _target(args, config_of(args))
        probe_dataset(d, spec=spec, target_train_flops=target, target_name=name)
        _, manifest = read_dataset(d)
    scores = _scores(args, spec)
    labels = read_labels(args.import_annotation, {f"{s['trajectory']}:{s['call_id']}" for s in scores})
    rep = human_agreement(labels, scores, file=str(args.import_annotation), seed=spec.seed)
    atomic_write_text(d / "manifest.json", json.dumps({**manifest, "probe_human": rep.model_dump(mode="json")},
                                                  indent=2) + "\n")
    if args.json:
        emit_json(rep.model_dump(mode="json"))
        return 0
    cm = rep.confusion
    print(f"against human labels ({rep.file}): {rep.n_labelled} labelled, {rep.n_unsure} unsure")
    print(f"  probe agreement {_f(rep.agreement)}{_ci(rep.agreement_ci)}, weighted to the dataset "
          f"{_f(rep.weighted_agreement)}, balanced accuracy {_f(rep.balanced_accuracy)}, kappa {_f(rep.kappa)}; "
          f"TP {cm.tp}  FP {cm.fp}  TN {cm.tn}  FN {cm.fn}")
    if rep.injected_agreement is not None:
        print(f"  synth's injected labels agree with the human labels on {_f(rep.injected_agreement)}")
    return 0


def _save(args: argparse.Namespace, config: Any, summary: Any) -> None:
    import json

    from grid.registry import Registry
    from probes.measure import SCORES_FILE, read_dataset

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
