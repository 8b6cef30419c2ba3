"""``toolscale fit --experiments A,B``: the cross-domain fit (:mod:`fit.joint`), printed or as JSON."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from toolscale.cli._common import emit_json, print_table
from toolscale.errors import UsageError

__all__ = ["fit_joint_command", "benchmarks_of"]


def benchmarks_of(args: argparse.Namespace, names: list[str], configs: list[Any]) -> list[tuple[str, str]]:
    """``(benchmark, metric)`` per experiment from ``--benchmark`` (one, or one per experiment; ``B/M`` sets the
    metric), else each config's first benchmark; the metric defaults to ``--metric``, else ``bpb``."""
    given = [b.strip() for b in (args.benchmark or "").split(",") if b.strip()]
    if not given:
        missing = [n for n, c in zip(names, configs) if c is None]
        if missing:
            raise UsageError(f"experiment {missing[0]!r} has no config to take its benchmark from: pass --benchmark")
        given = [c.eval.benchmarks[0] for c in configs]
    if len(given) == 1:
        given = given * len(names)
    if len(given) != len(names):
        raise UsageError(f"--benchmark names {len(given)} benchmarks for {len(names)} experiments; give one, or one "
                         "per experiment in order")
    out = []
    for g in given:
        bench, _, metric = g.partition("/")
        out.append((bench, metric or args.metric or "bpb"))
    return out


def fit_joint_command(args: argparse.Namespace, load: Callable[..., Any]) -> int:
    """Fit every experiment with one form (``--law``, or the first experiment's ``auto`` choice), then jointly. Each
    experiment's checkpoints are chosen on its own validation split (``--validation``, else its ``[eval] validation``)."""
    from fit.experiment import fit_experiment, has_data_axes
    from fit.laws import law_of
    from fit.joint import DomainRuns, fit_joint
    from fit.models import FitRequest
    from pipeline.fit import validation_of

    names = [x.strip() for x in args.experiments.split(",") if x.strip()]
    if len(names) < 2 or len(set(names)) < len(names):
        raise UsageError(f"--experiments needs two or more different experiments, got {args.experiments!r}")
    if args.bootstrap < 0:
        raise UsageError(f"--bootstrap must be >= 0, got {args.bootstrap}")
    loaded = [load(args, n) for n in names]
    pairs = benchmarks_of(args, names, [c for _, _, c, _ in loaded])
    axes = None if not args.axes else [] if args.axes == "none" else [a.strip() for a in args.axes.split(",")
                                                                       if a.strip()]  # as a single fit reads it
    form = None if args.law == "auto" else args.law
    domains = []
    for (name, runs, config, _), (bench, metric) in zip(loaded, pairs):
        def request(law: str) -> FitRequest:
            return FitRequest(experiment=name, benchmark=bench, metric=metric, law=law, axes=axes,
                              holdout=args.holdout, n_bootstrap=args.bootstrap, n_starts=args.starts,
                              method=args.method, seed=args.seed, n_jobs=args.jobs, interaction_test=False,
                              validation=validation_of(config, getattr(args, "validation", None)))

        own = fit_experiment(runs, request(form or "auto"), config=config)
        chosen, law = own.fit.law, law_of(own.fit)
        if form is None:  # the first experiment's choice is the common form, with or without data axes
            form = chosen
            if axes is None and not has_data_axes(law):
                axes = []  # --law auto chose the form on N and D alone (chinchilla_ND): so for every experiment
        elif chosen != form or (axes == [] and has_data_axes(law)):
            own = fit_experiment(runs, request(form), config=config)  # its own choice differs: the common form too
            law = law_of(own.fit)
        domains.append(DomainRuns(name, f"{bench}/{metric}", law, own.points, own.fit, chosen))
    result = fit_joint(domains, n_bootstrap=args.bootstrap, n_starts=args.starts, seed=args.seed, n_jobs=args.jobs)
    if args.json:
        emit_json(result.model_dump(mode="json"))
        return 0
    print(f"{result.law} over {', '.join(result.experiments)}: {result.n_points} fitted runs; shared "
          f"{', '.join(result.shared)}; per experiment {', '.join(result.domain_params)} (not stored)")
    print_table([{"experiment": d.experiment, "fitted": d.benchmark, "own choice": d.chosen_law, "runs": d.n_fit,
                  "held out": d.n_heldout, "residual SD alone": d.residual_sd_separate,
                  "residual SD shared": d.residual_sd_joint, "held-out error alone": d.heldout_relative_mae_separate,
                  "held-out error shared": d.heldout_relative_mae_joint,
                  "extrapolation": d.extrapolation_factor} for d in result.domains], title="per experiment")
    rows = []
    for e in result.exponents:
        row: dict[str, Any] = {"exponent": e.name}
        for exp, iv in e.separate.items():
            row[exp] = f"{iv.estimate:.3g} [{iv.lo:.3g}, {iv.hi:.3g}]"
        row["shared"] = f"{e.joint.estimate:.3g} [{e.joint.lo:.3g}, {e.joint.hi:.3g}]"
        row["agree"] = "n/a" if e.agree is None else ("yes" if e.agree else "no")
        rows.append(row)
    print_table(rows, title="shared exponents (95% bootstrap intervals)")
    lr_p = f"{result.lr_p:.3g}" if result.lr_p is not None else "n/a"
    print(f"BIC alone {result.bic_separate:.1f} (k={result.k_separate}), shared {result.bic_joint:.1f} "
          f"(k={result.k_joint}); LR {result.lr_stat:.2f}, p={lr_p}")
    print(result.verdict)
    return 0
