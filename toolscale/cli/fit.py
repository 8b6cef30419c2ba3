"""Commands of fit/: ``fit`` (fit and store a law), ``report`` (Markdown + HTML + JSON), ``simulate``."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from toolscale.cli._common import (Formatter, add_registry_args, config_of, emit_json, open_fraction, print_table,
                                   registry_path, seed_int, writable_dir)
from toolscale.cli.allocate import add_target_args
from toolscale.config import ExperimentConfig, parse_config
from toolscale.errors import UsageError

__all__ = ["register", "fit_summary", "parse_at"]


MAX_BOOTSTRAP = 10_000
"""Most bootstrap refits one fit runs (the 90% interval's ends settle within a few hundred)."""
MAX_STARTS = 256
"""Most minimiser starts (each is a full minimisation; the default 8 finds the optimum on the benchmark truths)."""


def _add_fit_args(p: argparse.ArgumentParser, benchmark_required: bool = True) -> None:
    add_registry_args(p)
    p.add_argument("--benchmark", required=benchmark_required, help="benchmark whose metric is fitted")
    p.add_argument("--metric", help="metric of the benchmark (default: loss for loss laws, else score)")
    p.add_argument("--law", default="auto",
                   help="law name (see `toolscale fit --list-laws`), or auto: the hypothesis the interaction "
                        "test supports (default)")
    p.add_argument("--axes", help="comma-separated axes entering the law (default: every axis; none: N only)")
    p.add_argument("--holdout", default="top-flops:0.25", metavar="RULE",
                   help="top-flops:F (default top-flops:0.25; the stored split column when F is the design's), "
                        "rungs:K (fit the K smallest model sizes, predict the next, stepping up the ladder), "
                        "split (the stored column) or none")
    p.add_argument("--bootstrap", type=int, default=200, metavar="N", help="bootstrap refits (default 200; 0: none)")
    p.add_argument("--huber-delta", type=float, metavar="X", help="Huber threshold (default: the law's)")
    p.add_argument("--starts", type=int, default=8, metavar="K", help="minimiser runs from the best grid starts")
    p.add_argument("--method", choices=["trf", "lbfgsb"], default="trf", help="minimiser (default trf)")
    p.add_argument("--seed", type=seed_int, default=0, help="seed of the bootstrap and grid subsampling")
    p.add_argument("--jobs", type=int, metavar="N", help="bootstrap worker processes (default: every core)")
    p.add_argument("--no-interaction", action="store_true", help="skip the additive vs multiplicative test")
    p.add_argument("--floor", type=float, metavar="ACC",
                   help="two-step laws: accuracy floor held fixed (chance accuracy, e.g. 0.25), in [0, 1)")
    p.add_argument("--stage1-metric", default="loss", metavar="M",
                   help="two-step laws: the intermediate stage 1 predicts (a metric of the benchmark, or "
                        "other-benchmark/metric such as a task loss in bits per byte; default loss)")
    p.add_argument("--ceiling", type=float, metavar="ACC",
                   help="two-step laws: accuracy ceiling held fixed, in (0, 1] (a hard bound)")
    p.add_argument("--ideal-point", type=float, metavar="ACC",
                   help="two-step laws: add the point (loss 0, accuracy ACC) to stage 2's data, in (0, 1]; the "
                        "OLMo ladder's recipe uses 1.0 (the ceiling stays free)")
    p.add_argument("--smooth", type=int, default=1, metavar="K",
                   help="two-step laws: moving average over K checkpoints of each run (default 1: none)")
    p.add_argument("--skip-first", type=float, default=0.0, metavar="F",
                   help="two-step laws: leave each run's first F of checkpoints out of stage 2, in [0, 1)")
    p.add_argument("--repetition", action="store_true",
                   help="chinchilla: add the repetition term of runs with unique_tokens (effective data D' with "
                        "R*); without it --law chinchilla fits exactly E + A/N^alpha + B/D^beta")
    p.add_argument("--stages", metavar="S[,S]",
                   help="fit only runs trained with exactly these stages, e.g. sft or sft,grpo (SFT and RL laws "
                        "are fitted separately); default: every run")
    p.add_argument("--target", choices=["auto", "envelope", "final", "checkpoints"], default="auto",
                   help="what each run contributes: envelope (the checkpoint best on the validation benchmark, "
                        "scored on this one), final (the last model), checkpoints (every scored checkpoint past "
                        "the first 10%% of training); auto: envelope for a loss when runs have checkpoints")
    p.add_argument("--validation", metavar="B",
                   help="benchmark that chooses each run's envelope checkpoint (default: the experiment's "
                        "[eval] validation, valid-calls or code-valid)")


def register(sub: argparse._SubParsersAction) -> None:
    for add in (_register_fit, _register_predict, _register_report, _register_effect, _register_simulate):
        add(sub)


def _register_fit(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "fit", help="fit a joint scaling law to an experiment's runs and store it for the allocator",
        formatter_class=Formatter,
        epilog="examples:\n  toolscale fit --experiment E --benchmark heldout-calls --json\n"
               "  toolscale fit --experiment chinchilla --benchmark pile --law chinchilla --metric loss "
               "--holdout none\n  toolscale fit --list-laws\n"
               "  toolscale fit --experiments tools-exp,code-exp --benchmark indist-calls,code-indist --metric bpb "
               "--holdout split   # one law, shared exponents")
    p.add_argument("--experiment", help="experiment name (default: the --config file's)")
    p.add_argument("--experiments", metavar="A,B",
                   help="a cross-domain fit: one law form over these experiments with shared exponents and "
                        "per-experiment constants, against each experiment's own fit (BIC, held-out error); "
                        "--benchmark then takes one name, or one per experiment (BENCH or BENCH/METRIC), default "
                        "each config's first benchmark; the form is --law, or the first experiment's auto choice "
                        "(with its data axes, or none) for all; not stored")
    _add_fit_args(p, benchmark_required=False)  # --list-laws needs none; checked in _fit
    p.add_argument("--list-laws", action="store_true", help="list the registered laws and exit")
    p.add_argument("--no-store", action="store_true", help="do not store the fit in the registry")
    p.add_argument("--keep-unconverged", action="store_true",
                   help="store a fit that did not converge (flagged converged=false) instead of failing")
    p.add_argument("--json", action="store_true", help="parameters with intervals and held-out metrics as JSON")
    p.set_defaults(func=_fit)


def _register_predict(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "predict", help="predict a benchmark at new model sizes, token counts and data recipes from a stored fit",
        formatter_class=Formatter,
        epilog="examples:\n  toolscale predict --experiment E --benchmark B --at model_size=1.3e10,train_tokens=5e12\n"
               "  toolscale predict --experiment E --benchmark B --law effective \\\n"
               "      --at model_size=1.3e10,train_tokens=5e12,tool_diversity=64 --at model_size=7e10,"
               "train_tokens=2e13 --json\n"
               "inputs: model_size (or N, parameters), train_tokens (or D, tokens), unique_tokens, and each axis "
               "by name, in its config unit")
    add_registry_args(p)
    p.add_argument("--experiment", help="experiment of the fit (with --benchmark: its newest fit)")
    p.add_argument("--benchmark", help="benchmark of the fit")
    p.add_argument("--law", help="law of the fit (default: the newest fit's)")
    p.add_argument("--fit-id", help="the stored fit to use (toolscale fits list); default: the newest")
    p.add_argument("--at", action="append", required=True, metavar="K=V,...",
                   help="a point: comma-separated input=value pairs (repeat for more points)")
    p.add_argument("--level", type=float, default=0.90, help="interval level (default 0.90)")
    p.add_argument("--json", action="store_true", help="the Prediction model as JSON")
    p.set_defaults(func=_predict)


def _register_report(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report", help="write a Markdown + HTML report (plots) and a JSON file of every number for one benchmark",
        formatter_class=Formatter,
        epilog="examples:\n  toolscale report --benchmark heldout-calls --experiment E --out reports/\n"
               "  toolscale report --benchmark heldout-calls --experiment E --compare-stages sft "
               "--compare-stages sft,grpo\n"
               "  toolscale report --benchmark indist-calls --experiment E --metric bpb "
               "--compare-axes tool_diversity,repair_rate --compare-axes tool_diversity,measured_groundedness")
    p.add_argument("--experiment", help="experiment name (default: the only one in the registry)")
    _add_fit_args(p, benchmark_required=False)  # --fit-id names it; checked in _report
    p.add_argument("--compare-stages", action="append", metavar="S[,S]",
                   help="fit the runs of each stage set separately (repeat: sft, then sft,grpo) and write "
                        "stages.md / stages.json side by side instead of the full report")
    p.add_argument("--compare-axes", action="append", metavar="A[,A]",
                   help="fit the same runs with each axis set (repeat: the requested knobs, then with "
                        "measured_groundedness) and write axes.md / axes.json side by side")
    p.add_argument("--out", default="reports", metavar="DIR", help="output folder (default ./reports)")
    p.add_argument("--fit-id", help="render this stored fit (default: the newest of the experiment and benchmark)")
    p.add_argument("--refit", action="store_true",
                   help="fit anew with the fit options above instead of rendering a stored fit (not stored)")
    p.add_argument("--target-size", metavar="N", help="model size the extrapolation band reaches, e.g. 7e9 or 7B "
                                                      "(default: the config's target size, else the largest run)")
    p.add_argument("--sweep", metavar="MIN:MAX:STEPS",
                   help="plan allocations over these budgets for the allocation chart (default: the allocations "
                        "stored for the fit, at the newest one's model size and tokens)")
    add_target_args(p, "with --sweep: ")
    p.add_argument("--json", action="store_true", help="print the report's JSON summary on stdout")
    p.set_defaults(func=_report)


def _register_effect(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "effect", help="the seed-paired effect of each level of an axis against its lowest (e.g. a stage on/off) "
                       "per model size, with t confidence intervals (95%% unless --level)",
        formatter_class=Formatter,
        epilog="examples:\n  toolscale effect --experiment midtrain-cpu --axis midtrain_tokens "
               "--benchmark heldout-calls --metric token_prob --json\n"
               "  toolscale effect --experiment rl-cpu --axis grpo_steps --benchmark heldout-env --metric f1 "
               "--level 0.9")
    p.add_argument("--experiment", help="experiment name (default: the only one in the registry)")
    add_registry_args(p)
    p.add_argument("--axis", required=True, help="an axis with at least two levels among the done runs")
    p.add_argument("--benchmark", required=True, help="benchmark")
    p.add_argument("--metric", default="score", help="metric of the benchmark (default score)")
    p.add_argument("--level", type=open_fraction, default=0.95, help="confidence level of the intervals "
                                                                      "(default 0.95)")
    p.add_argument("--json", action="store_true", help="one object per size and cell")
    p.set_defaults(func=_effect)


def _register_simulate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "simulate", help="fill an experiment with results drawn from a known law over the config's real design",
        formatter_class=Formatter,
        epilog="examples:\n  toolscale simulate --config toolscale.toml --experiment sim --json\n"
               "  toolscale simulate --config toolscale.toml --experiment sim-add --truth truth.toml --noise 0.02\n"
               "  toolscale simulate --config toolscale.toml --experiment sim --hypothesis additive")
    add_registry_args(p, config_required=True)
    p.add_argument("--experiment", required=True, help="experiment to create (labelled simulated)")
    p.add_argument("--truth", metavar="TRUTH.toml", help="truth file: law, [params], noise_sd, benchmark "
                                                         "(default: the built-in truth, see fit/simulate.py)")
    p.add_argument("--hypothesis", choices=["multiplicative", "additive"], default="multiplicative",
                   help="built-in truth's law (default multiplicative)")
    p.add_argument("--noise", type=float, metavar="SD", help="noise SD in score points (default: the truth's)")
    p.add_argument("--benchmark", help="benchmark name to store the scores under (default: the truth's)")
    p.add_argument("--seed", type=seed_int, default=0, help="noise seed")
    p.add_argument("--replace", action="store_true",
                   help="overwrite an existing simulated experiment's results (old values kept in run_history; "
                        "its fits become stale); without it a simulation that changes stored scores is refused")
    p.add_argument("--json", action="store_true", help="machine-readable summary")
    p.set_defaults(func=_simulate)


def _request(args: argparse.Namespace, experiment: str):
    from fit.models import FitRequest

    if not 0 <= args.bootstrap <= MAX_BOOTSTRAP:
        raise UsageError(f"--bootstrap must be in [0, {MAX_BOOTSTRAP}], got {args.bootstrap}")
    if not 1 <= args.starts <= MAX_STARTS:
        raise UsageError(f"--starts must be in [1, {MAX_STARTS}] (each start is a full minimisation), got "
                         f"{args.starts}")
    if args.huber_delta is not None and not 0 < args.huber_delta < float("inf"):
        raise UsageError(f"--huber-delta must be > 0 and finite, got {args.huber_delta}")
    if args.floor is not None and not 0.0 <= args.floor < 1.0:
        raise UsageError(f"--floor must be in [0, 1) (an accuracy floor such as chance, 0.25), got {args.floor:g}")
    if args.jobs is not None and args.jobs < 1:
        raise UsageError(f"--jobs must be >= 1, got {args.jobs}")
    if args.ceiling is not None and not 0.0 < args.ceiling <= 1.0:
        raise UsageError(f"--ceiling must be in (0, 1] (an accuracy ceiling such as 1.0), got {args.ceiling:g}")
    if args.ideal_point is not None and not 0.0 < args.ideal_point <= 1.0:
        raise UsageError(f"--ideal-point must be in (0, 1] (an accuracy at loss 0, such as 1.0), got "
                         f"{args.ideal_point:g}")
    if args.smooth < 1:
        raise UsageError(f"--smooth must be >= 1 checkpoints, got {args.smooth}")
    if not 0.0 <= args.skip_first < 1.0:
        raise UsageError(f"--skip-first must be in [0, 1), got {args.skip_first:g}")
    axes = None if not args.axes else [] if args.axes == "none" else [a.strip() for a in args.axes.split(",")
                                                                          if a.strip()]
    twice = sorted({a for a in axes or [] if axes.count(a) > 1})
    if twice:
        raise UsageError(f"--axes {args.axes!r} names {twice[0]!r} twice; name each axis once")
    from fit.holdout import parse_holdout
    from fit.laws import get_law

    parse_holdout(args.holdout)
    if args.law != "auto":
        get_law(args.law)
    return FitRequest(experiment=experiment, benchmark=args.benchmark, metric=args.metric, law=args.law, axes=axes,
                      holdout=args.holdout, n_bootstrap=args.bootstrap, huber_delta=args.huber_delta,
                      n_starts=args.starts, method=args.method, seed=args.seed, n_jobs=args.jobs,
                      interaction_test=not args.no_interaction, floor=args.floor, stage1_metric=args.stage1_metric,
                      train_stages=_stages(args.stages) if args.stages else None, ceiling=args.ceiling, ideal_point=args.ideal_point,
                      smooth=args.smooth, skip_first=args.skip_first, repetition=args.repetition,
                      target=getattr(args, "target", "auto"),
                      validation=getattr(args, "validation", None) or "valid-calls")


def _stages(text: str) -> list[str]:
    """``--stages``: known stages in their running order, else a UsageError."""
    from toolscale.config import STAGES

    names = [t.strip() for t in text.split(",") if t.strip()]
    bad = [n for n in names if n not in STAGES]
    if bad or not names:
        raise UsageError(f"--stages: unknown stage {bad[0] if bad else text!r}; stages: {', '.join(STAGES)}")
    if names != [s for s in STAGES if s in names]:
        raise UsageError(f"--stages: stages run in the order {', '.join(STAGES)}; got {text!r}")
    return names


def _load(args: argparse.Namespace, experiment: str | None) -> tuple[str, list, ExperimentConfig | None, bool]:
    """``(experiment, done runs, its config parsed from the registry or None, simulated)``
    (:func:`pipeline.fit.load_runs`)."""
    from pipeline.fit import load_runs

    loaded = load_runs(registry_path(args, config_of(args)), experiment)
    return loaded.experiment, loaded.runs, loaded.config, loaded.simulated


def _validation(args: argparse.Namespace, config: ExperimentConfig | None) -> str:
    """``--validation``, else the experiment's split (:func:`pipeline.fit.validation_of`)."""
    from pipeline.fit import validation_of

    return validation_of(config, getattr(args, "validation", None))


def _check_validation(name: str, runs, experiment: str) -> None:
    """UsageError when no run of ``experiment`` has a value on benchmark ``name`` (``--validation``)."""
    prefix = f"{name}/"
    keys = {k for r in runs for k in (*r.metrics, *(k for v in (r.checkpoints or {}).values() for k in v))}
    if not any(k.startswith(prefix) for k in keys):
        known = sorted({k.split("/")[0] for k in keys})
        raise UsageError(f"--validation {name!r}: no run of {experiment!r} was scored on it; benchmarks: "
                         f"{', '.join(known) or 'none'}")


def _run(args: argparse.Namespace, experiment: str | None):
    from pipeline.fit import LoadedRuns, fit_loaded

    if args.stages:
        _stages(args.stages)  # a bad value fails before the registry is opened
    loaded = LoadedRuns(*_load(args, experiment))
    request = _request(args, loaded.experiment).model_copy(update={"validation": _validation(args, loaded.config)})
    if getattr(args, "validation", None):
        _check_validation(args.validation, loaded.runs, loaded.experiment)
    status = None
    if sys.stderr.isatty():
        from rich.console import Console

        status = Console(stderr=True).status(
            f"fitting {len(loaded.runs)} runs of {loaded.experiment} ({request.n_bootstrap} bootstrap refits)...")
    return fit_loaded(loaded, request, status)


def with_decisions(summary: Any, fit: Any, args: argparse.Namespace) -> Any:
    """``summary`` with the small-to-large decision accuracies of ``fit`` (:func:`pipeline.fit.with_decisions`,
    what the MCP ``fit_summary`` tool returns too)."""
    from pipeline.fit import with_decisions as add_decisions

    _, runs, config, _ = _load(args, fit.experiment)
    return add_decisions(summary, fit, runs, config, validation=getattr(args, "validation", None))


def fit_summary(result: Any, fit_id: str | None = None):
    """The ``fit --json`` object: :class:`fit.models.FitSummary` of the result's fit (its verdict included)."""
    from pipeline.fit import summary_of

    return summary_of(result.fit, fit_id)


def _fit(args: argparse.Namespace) -> int:
    from fit.errors import FitError
    from fit.laws import get_law, known_laws

    if args.list_laws:
        rows = [{"law": n, "target": get_law(n).target, "formula": get_law(n).formula} for n in known_laws()]
        if args.json:
            emit_json(rows)
        else:
            print_table(rows, title="laws")
        return 0
    if args.experiments:
        if args.experiment:
            raise UsageError("use --experiment (one fit) or --experiments (a cross-domain fit), not both")
        from toolscale.cli.fit_joint import fit_joint_command

        return fit_joint_command(args, _load)
    cfg = config_of(args)
    experiment = args.experiment or (cfg.experiment.name if cfg else None)  # --config alone names its experiment
    if not experiment or not args.benchmark:
        raise UsageError("toolscale fit needs --experiment NAME (or --config CONFIG) and --benchmark NAME "
                         "(or --list-laws)")
    result = _run(args, experiment)
    f = result.fit
    if not f.converged and not args.keep_unconverged:
        raise FitError(f"fit of law {f.law!r} did not converge, not stored: {f.message}; parameters at bounds: "
                       f"{', '.join(f.at_bounds) or 'none'} (try --starts 32, another --law, or --keep-unconverged)")
    fit_id = None
    if not args.no_store:
        from pipeline.fit import store_fit

        fit_id = store_fit(registry_path(args, config_of(args)), f)
    summary = fit_summary(result, fit_id)
    summary = with_decisions(summary, result.fit, args)
    if args.json:
        emit_json(summary.model_dump(mode="json"))
        return 0
    from toolscale.cli.fits import render_fit

    render_fit(f, summary, fit_id)
    return 0


_ALIASES = {"model_size": "N", "model_params": "N", "params": "N", "train_tokens": "D", "tokens": "D"}


def parse_at(text: str) -> dict[str, float]:
    """``"model_size=1.3e10,train_tokens=5e12,tool_diversity=64"`` -> ``{"N": 1.3e10, "D": 5e12, ...}`` (counts
    may carry a size suffix: ``model_size=1.4B``)."""
    import math

    from grid.importer import parse_count

    out: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(f"--at {text!r}: each input is NAME=VALUE, got {part!r}")
        try:
            v = parse_count(value)
        except ValueError:
            raise UsageError(f"--at {text!r}: {key} must be a number (1.3e10, 70M, 2.8B), got {value.strip()!r}") \
                from None
        if not math.isfinite(v):
            raise UsageError(f"--at {text!r}: {key} must be finite, got {value.strip()!r}")
        if _ALIASES.get(key, key) in out:
            raise UsageError(f"--at {text!r}: {key} is given twice (as {_ALIASES.get(key, key)}); give each input once")
        out[_ALIASES.get(key, key)] = v
    if not out:
        raise UsageError(f"--at {text!r} names no input (e.g. --at model_size=1.3e10,train_tokens=5e12)")
    return out


def _predict(args: argparse.Namespace) -> int:
    from fit.predict import check_point, predict_at, required_inputs
    from grid.registry import Registry
    from toolscale.cli.fits import stored_fit

    if not 0.0 < args.level < 1.0:
        raise UsageError(f"--level must be in (0, 1), got {args.level}")
    points = [parse_at(a) for a in args.at]
    with Registry(registry_path(args, config_of(args)), read_only=True) as reg:
        fit_id, fit = stored_fit(reg, fit_id=args.fit_id, experiment=args.experiment, benchmark=args.benchmark,
                                 law=args.law)
        stored = reg.experiment(fit.experiment).config
    cfg = config_of(args) or (parse_config(stored, source=f"registry config of {fit.experiment}") if stored else None)
    units = {a.name: a.unit for a in cfg.axes} if cfg else {}
    need = required_inputs(fit)
    for i, p in enumerate(points):
        check_point(fit, p, units=units, label=f"#{i + 1} ({args.at[i]})")
        absent = [a for a in need if a not in p]
        if absent:
            shown = {"N": "model_size", "D": "train_tokens"}.get(absent[0], absent[0])
            raise UsageError(f"--at #{i + 1} ({args.at[i]}) lacks input {shown!r}; law {fit.law!r} needs "
                             f"{', '.join({'N': 'model_size', 'D': 'train_tokens'}.get(a, a) for a in need)}")
    pred = predict_at(fit, points, level=args.level, max_fitted_flops=fit.max_fitted_flops, fit_id=fit_id,
                      units=units)
    if args.json:
        emit_json(pred.model_dump(mode="json"))
        return 0
    tag = " [SIMULATED DATA]" if fit.simulated else ""
    print(f"{fit.law} fit {fit_id} of {fit.experiment} / {fit.benchmark}/{fit.metric}{tag}")
    rows_out = []
    for p in pred.points:
        beyond = f"{p.extrapolation_factor:.1f}x" if p.extrapolation_factor else "n/a"
        shown = {"N": "model_size", "D": "train_tokens"}
        outside = ", ".join(f"{shown.get(k, k)} x{v:.3g}" for k, v in p.beyond_inputs.items())
        rows_out.append({"inputs": ", ".join(f"{k}={v:g}" for k, v in p.inputs.items()), "predicted": p.predicted,
                         f"{args.level:.0%} lo": p.lo, f"{args.level:.0%} hi": p.hi,
                         "FLOPs / max fitted": beyond, "outside the fitted range": outside or "no"})
    print_table(rows_out, title="predictions")
    if any(p.beyond_range for p in pred.points):
        print("WARNING: some points lie outside the fitted range (x: value / fitted max, or fitted min / value); "
              "their intervals include the law's extrapolation error only where the fit measured one")
    if not fit.fitted_ranges:
        print("note: this fit stores no fitted ranges (made before they were stored); only FLOPs are checked")
    return 0


def _compare_stages(args: argparse.Namespace) -> int:
    from fit.compare import StageComparison

    sets = [_stages(s) for s in args.compare_stages]
    if len(sets) < 2:
        raise UsageError("--compare-stages needs at least two stage sets, e.g. --compare-stages sft "
                         "--compare-stages sft,grpo")
    if args.axes is None:  # stage axes are what separates the sets (each set holds them constant): leave them out
        _, _, config, _ = _load(args, args.experiment)
        kept = [a.name for a in config.axes if a.kind != "stage"] if config is not None else []
        args.axes = ",".join(kept) or "none"
    fits = {}
    for stages in sets:
        args.stages = ",".join(stages)
        result = _run(args, args.experiment)
        fits["+".join(stages)] = fit_summary(result)
    cmp = StageComparison(experiment=result.fit.experiment, benchmark=result.fit.benchmark, fits=fits)
    return _write_comparison(cmp, args, "stages")


def _compare_axes(args: argparse.Namespace) -> int:
    from fit.compare import StageComparison

    sets = [a.strip() for a in args.compare_axes]
    if len(sets) < 2 or len(set(sets)) < len(sets):
        raise UsageError("--compare-axes needs at least two different axis sets, e.g. --compare-axes "
                         "tool_diversity,repair_rate --compare-axes tool_diversity,measured_groundedness")
    fits = {}
    for axes in sets:
        args.axes = axes
        result = _run(args, args.experiment)
        fits[axes] = fit_summary(result)
    cmp = StageComparison(experiment=result.fit.experiment, benchmark=result.fit.benchmark, fits=fits, by="axes")
    return _write_comparison(cmp, args, "axes")


def _write_comparison(cmp: Any, args: argparse.Namespace, stem: str) -> int:
    from fit.compare import comparison_markdown
    from toolscale.files import atomic_write_text

    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        atomic_write_text(out / f"{stem}.md", comparison_markdown(cmp))
        atomic_write_text(out / f"{stem}.json", cmp.model_dump_json(indent=1) + "\n")
    except OSError as err:
        raise UsageError(f"cannot write to --out {str(out)!r}: {err.strerror or err}") from None
    if args.json:
        emit_json(cmp.model_dump(mode="json"))
    else:
        print(f"wrote {out / f'{stem}.md'} and {out / f'{stem}.json'}")
    return 0


def _report(args: argparse.Namespace) -> int:
    from fit.report import write_report

    if args.compare_stages and args.compare_axes:
        raise UsageError("use --compare-stages or --compare-axes, not both")
    if not args.benchmark and (args.fit_id is None or args.refit or args.compare_stages or args.compare_axes):
        raise UsageError("toolscale report needs --benchmark NAME (a stored fit's --fit-id ID names its own)")
    writable_dir(args.out)
    if args.compare_stages:
        return _compare_stages(args)
    if args.compare_axes:
        return _compare_axes(args)
    from toolscale.cli.fit_report import report_allocations, report_config, run_table, stored_result, target_n

    if args.refit:
        result, fit_id = _run(args, args.experiment), None
    else:
        result, fit_id = stored_result(args)
    config = report_config(args, result.fit.experiment, _load)
    allocations, basis = report_allocations(args, fit_id, result.fit, config)
    paths = write_report(result, Path(args.out), run_table=run_table(args, result.fit, _load), fit_id=fit_id,
                         target_n=target_n(args, config), allocations=allocations, basis=basis)
    if args.json:
        from fit.models import ReportSummary

        summary = fit_summary(result, fit_id)
        emit_json(ReportSummary(**dict(summary), files={k: str(v) for k, v in paths.items()},
                                allocation=basis).model_dump(mode="json"))
    else:
        what = f"fit {fit_id}" if fit_id else "a new fit (not stored)"
        print(f"wrote {paths['markdown']}, {paths['html']} and {paths['json']} ({what})")
    return 0


def _effect(args: argparse.Namespace) -> int:
    from fit.effects import EffectReport, paired_effects

    experiment, runs, _, _ = _load(args, args.experiment)
    metric = f"{args.benchmark}/{args.metric}"
    effects = paired_effects(runs, args.axis, metric, level=args.level)
    if args.json:
        emit_json(EffectReport(experiment=experiment, axis=args.axis, metric=metric, effects=effects)
                  .model_dump(mode="json"))
        return 0
    rows = [{"model": e.model_size, **{k: f"{v:g}" for k, v in e.others.items()}, "pairs": e.n_pairs,
             "levels": f"{e.low:g} -> {e.high:g}", "mean at low": f"{e.mean_low:.4g}",
             "mean at high": f"{e.mean_high:.4g}", "effect": f"{e.effect:+.4g}",
             f"{args.level:.0%} CI": "—" if e.lo is None else f"[{e.lo:+.4g}, {e.hi:+.4g}]"} for e in effects]
    print_table(rows, title=f"{experiment}: {args.axis} on {args.benchmark}/{args.metric}, paired by seed")
    return 0


def _simulate(args: argparse.Namespace) -> int:
    from fit.simulate import simulate_experiment

    config = config_of(args)
    if args.noise is not None and not 0 <= args.noise < float("inf"):
        raise UsageError(f"--noise must be >= 0 and finite, got {args.noise}")
    if args.benchmark is not None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", args.benchmark):
        raise UsageError(f"--benchmark {args.benchmark!r}: a benchmark name is letters, digits, '_', '.' and '-' "
                         "(a '/' separates benchmark and metric elsewhere)")
    from grid.registry import Registry

    with Registry(registry_path(args, config)) as reg:
        out = simulate_experiment(reg, config, args.experiment, truth_path=args.truth, hypothesis=args.hypothesis,
                                  noise_sd=args.noise, benchmark=args.benchmark, seed=args.seed, replace=args.replace)
    if args.json:
        emit_json(out)
    else:
        print(f"simulated {out['runs']} runs into {args.experiment!r} ({out['heldout']} held out) from the "
              f"{out['truth']['law']} truth, noise SD {out['truth']['noise_sd']:g}; benchmark "
              f"{out['truth']['benchmark']!r} [SIMULATED]", file=sys.stdout)
    return 0
