"""``toolscale verify``: train the allocator's plan, the diversity-only plan and an equal-spend plan, and compare.

Phases: plan (allocate at the budget, round, make the three arms), store (a verification
group in the registry: an experiment of its own, a design record holding the plans and
predictions, one run per arm and seed), train (the grid's launch path: ``slurm.launcher``
and ``slurm.sync``, local or SLURM), report (:func:`allocator.verification.summarise`).
A rerun with the same arguments finds the same group and trains nothing that is done.
"""

from __future__ import annotations

import argparse
import sys

from toolscale.cli._common import (Formatter, add_registry_args, benchmark_of, config_of, emit_json, positive_float,
                                   positive_int, print_table, registry_path, writable_file, PLOT_SUFFIXES)
from toolscale.errors import UsageError

__all__ = ["register", "run_verification"]

EXAMPLES = """\
examples:
  toolscale verify --budget 20000 --benchmark heldout-calls --config my.toml
  toolscale verify --budget 20000 --benchmark heldout-calls --config my.toml --seeds 3 --model-size tiny-l --json
  toolscale verify --budget 20000 --benchmark heldout-calls --config my.toml --executor slurm --plot v.png
  toolscale verify --budget 20000 --fit-id f-1a2b3c4d5e6f --config my.toml   # a stored fit other than the newest
A rerun with the same arguments reuses the runs already done (nothing is retrained)."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("verify", help="train the allocator's plan against the diversity-only and equal-spend plans",
                       description="Turn the allocator's plan, the fair diversity-only plan and an equal-spend plan "
                                   "at one budget into recipes, synthesise, train K seeds of each at one ladder "
                                   "rung, score them, and report realised against predicted.",
                       formatter_class=Formatter, epilog=EXAMPLES)
    p.add_argument("--budget", type=positive_float, required=True, help="total budget, in the experiment's unit")
    p.add_argument("--benchmark", help="benchmark with a stored fit (it is also what runs are scored on; --fit-id "
                                       "names its own)")
    p.add_argument("--fit-id", help="plan from this stored fit (toolscale fits list; default: the newest)")
    p.add_argument("--seeds", type=positive_int, default=3, help="seeds per plan (default 3)")
    p.add_argument("--arms", default="allocator,diversity_only,equal_spend,best_observed", metavar="A[,A]",
                   help="plans to train (default all four; the allocator's is always trained): allocator, "
                        "diversity_only, equal_spend, best_observed (the best recipe observed at the largest "
                        "fitted rung)")
    p.add_argument("--model-size", help="ladder rung to train (default: the config's target size)")
    p.add_argument("--experiment", help="experiment whose fit makes the plans (default: the only one with a fit)")
    p.add_argument("--executor", choices=["slurm", "local", "debug"], help="where runs go (default: the config's)")
    p.add_argument("--max-parallel", type=positive_int, metavar="N", help="runs at once (default: the config's)")
    p.add_argument("--folder", help="root of launch folders and result files (default: executor.folder)")
    p.add_argument("--poll", type=float, default=5.0, metavar="S", help="seconds between syncs while waiting")
    p.add_argument("--plot", default="verification.png", help="where to write the predicted-vs-realised plot")
    p.add_argument("--json", action="store_true", help="machine-readable output (the VerificationReport)")
    add_registry_args(p)
    p.set_defaults(func=_verify)


def _rung(cfg, model_size: str | None) -> str:
    """The ladder rung to train: ``--model-size`` must name one (a bare parameter count cannot be trained)."""
    names = [m.name for m in cfg.ladder]
    if model_size is None:
        return cfg.target_size.name
    if model_size not in names:
        raise UsageError(f"--model-size {model_size!r}: the ladder cannot train it; verify trains a ladder rung "
                         f"({', '.join(names)})")
    return model_size


def _arm_names(text: str) -> list[str]:
    """``--arms``: known arm names (the allocator's always in), else a UsageError naming the bad one."""
    from allocator.models import ARMS

    names = [t.strip() for t in text.split(",") if t.strip()]
    bad = [n for n in names if n not in ARMS]
    if bad:
        raise UsageError(f"--arms: unknown arm {bad[0]!r}; arms: {', '.join(ARMS)}")
    return ["allocator", *[n for n in names if n != "allocator"]]


def _plans(reg_path: str, cfg, args, rung: str):
    """Allocate (stored), the equal-spend plan, and the three arms with their runs (nothing written but the plan)."""
    from allocator.models import AllocationQuery
    from allocator.verification import arms_of, group_name, training_template, verification_runs
    from grid.registry import Registry
    from pipeline.allocate import equal_spend_plan, plan_allocation

    query = AllocationQuery.of(registry=reg_path, budget=args.budget, benchmark=args.benchmark,
                               experiment=args.experiment, model_size=rung, config=cfg, fit_id=args.fit_id)
    equal, equal_iv = equal_spend_plan(query)  # read-only: fails before anything is stored
    # not stored as an allocation of the experiment: the group's design record holds it (the experiment's
    # newest allocation stays the one its user asked for)
    plan = plan_allocation(query, save=False)
    size = cfg.model_size(rung)
    with Registry(reg_path, read_only=True) as reg:
        template = training_template(reg.runs(plan.experiment), rung)
    n, d, training = (size.approx_params, size.planned_tokens, {}) if template is None else template
    arms = arms_of(plan, equal, equal_iv, seeds=list(range(args.seeds)), sign=plan.sign, names=_arm_names(args.arms))
    group = group_name(plan.experiment, args.benchmark, args.budget, rung, arms, training)
    arms, specs = verification_runs(arms, group=group, model_size=rung, model_params=n, train_tokens=d,
                                    verifies=plan.experiment, training=training)
    return plan, arms, group, specs


def _group_config(cfg, group: str, args):
    exp = cfg.experiment.model_copy(update={"name": group})
    ex = cfg.executor
    updates = {k: v for k, v in {"kind": args.executor, "max_parallel": args.max_parallel,
                                 "folder": args.folder}.items() if v is not None}
    return cfg.model_copy(update={"experiment": exp, "executor": ex.model_copy(update=updates)})


def _store(reg_path: str, gcfg, plan, arms, specs) -> None:
    from grid.registry import Registry

    summary = {"group": "verification", "verifies": plan.experiment, "allocation": plan.model_dump(mode="json"),
               "arms": [a.model_dump(mode="json") for a in arms]}
    with Registry(reg_path) as reg:
        reg.ensure_experiment(gcfg.experiment.name, config=gcfg.model_dump(mode="json"),
                              axes=[a.name for a in gcfg.axes])
        reg.add_design(gcfg.experiment.name, gcfg.experiment.name, summary)
        reg.add_runs(specs, source="verification")


def _train(reg_path: str, gcfg, args) -> None:
    from slurm.launcher import launch
    from toolscale.cli.launch import _wait

    kw = dict(executor=args.executor, max_parallel=args.max_parallel, folder=args.folder)
    report = launch(gcfg, reg_path, resume=True, **kw)
    if not args.json:
        print(f"verification group {gcfg.experiment.name}: submitted {len(report.submitted)} runs via "
              f"{report.executor}", file=sys.stderr)
    top_up = (lambda: launch(gcfg, reg_path, **kw)) if report.executor == "local" else None
    wait_args = argparse.Namespace(folder=args.folder, poll=args.poll)
    _wait(reg_path, gcfg, wait_args, top_up=top_up)


def _as_target(runs, benchmark: str, metric: str, validation: str | None = None):
    """Done runs as the fit reads them by default: the early-stopped envelope (chosen on ``validation``, the
    experiment's ``[eval] validation``) when they scored checkpoints (:mod:`fit.targets`), else their final
    value; runs not done pass through."""
    from fit.targets import target_runs

    done = [r for r in runs if r.status == "done" and r.checkpoints]
    if not done:
        return runs
    view, _ = target_runs(done, benchmark=benchmark, metric=metric, target="auto",
                          validation=validation or "valid-calls")
    by = {r.run_id: r for r in view}
    return [by.get(r.run_id, r) for r in runs]


def run_verification(args: argparse.Namespace):
    """The whole verification (plan, store, train, report); returns the :class:`VerificationReport`."""
    from grid.cost import cost_model_from_config
    from allocator.plots import verification_plot
    from allocator.verification import summarise
    from grid.registry import Registry
    from pipeline.allocate import config_for, named_experiment, resolve_experiment

    cfg = config_of(args)
    reg_path = registry_path(args, cfg)
    args.benchmark = benchmark_of(args, cfg, "verify")
    with Registry(reg_path, read_only=True) as reg:
        args.experiment = named_experiment(reg, args.experiment, args.fit_id)
        if cfg is None:
            cfg = config_for(reg, resolve_experiment(reg, args.benchmark, args.experiment), None)
    rung = _rung(cfg, args.model_size)
    plan, arms, group, specs = _plans(reg_path, cfg, args, rung)
    gcfg = _group_config(cfg, group, args)
    _store(reg_path, gcfg, plan, arms, specs)
    _train(reg_path, gcfg, args)
    with Registry(reg_path, read_only=True) as reg:
        runs = reg.runs(group)
    runs = _as_target(runs, args.benchmark, plan.metric, cfg.eval.validation)
    report = summarise(experiment=plan.experiment, group=group, benchmark=args.benchmark, metric=plan.metric,
                       plan=plan, arms=arms, runs=runs, cost=cost_model_from_config(cfg), model_size=rung,
                       law=plan.law, fit_id=plan.fit_id, simulated=plan.simulated, decision=plan.decision,
                       sign=plan.sign, noise_sd=abs(plan.replicate_sd) if plan.replicate_sd is not None else None)
    if args.plot:
        report = report.model_copy(update={"plot": str(verification_plot(report, args.plot))})
    return report


def _iv(iv) -> str:
    return f"{iv[0]:.4f}-{iv[1]:.4f}" if iv else ""


def _gain_line(other: str, gain, ci, predicted, piv: str, comp, inside) -> str:
    if gain is None:
        return f"realised gain over {other}: not available (runs not done); predicted {predicted:+.3g}{piv}"
    cis = f" (90% CI {ci[0]:+.3g} to {ci[1]:+.3g})" if ci else ""
    comps = f"; compared with [{comp[0]:+.3g}, {comp[1]:+.3g}]" if comp else ""
    where = {True: "inside", False: "OUTSIDE", None: "not counted as a check against"}[inside]
    return (f"realised gain over {other}: {gain:+.3g}{cis}; predicted {predicted:+.3g}{piv}{comps}: {where} the "
            "interval")


def _verify(args: argparse.Namespace) -> int:
    if args.plot:  # checked before hours of training, not after
        writable_file(args.plot, "--plot", suffixes=PLOT_SUFFIXES)
    report = run_verification(args)
    if args.json:
        emit_json(report.model_dump(mode="json"))
        return 0 if report.complete else 1
    unit = report.budget.unit
    print_table([{"plan": a.name, "predicted": a.predicted_score, "predicted 90%": _iv(a.predicted_interval),
                  "realised": a.realised_mean, "realised 90% CI": _iv(a.realised_ci),
                  "seeds done": sum(s is not None for s in a.realised_scores),
                  f"planned cost ({unit})": a.planned_cost, f"synthesis cost ({unit})": a.synthesis_cost}
                 for a in report.arms],
                title=f"verification of {report.budget} at {report.model_size} on {report.benchmark}/{report.metric}"
                      + (" (SIMULATED fit)" if report.simulated else ""))
    piv = f" [{report.predicted_gain_interval[0]:+.3g}, {report.predicted_gain_interval[1]:+.3g}]" \
        if report.predicted_gain_interval else ""
    print(_gain_line("diversity-only", report.realised_gain, report.realised_gain_ci, report.predicted_gain, piv,
                     report.comparison_interval, report.inside_interval))
    if report.predicted_gain_best_observed is not None:
        biv = report.predicted_gain_best_observed_interval
        bivs = f" [{biv[0]:+.3g}, {biv[1]:+.3g}]" if biv else ""
        print(_gain_line("the best observed recipe", report.realised_gain_best_observed, None,
                         report.predicted_gain_best_observed, bivs, report.comparison_interval_best_observed,
                         report.inside_interval_best_observed))
    if report.seed_sd is not None:
        print(f"seed SD of one run: {report.seed_sd:.3g} ({report.seed_sd_source}); the comparison intervals add the "
              f"realised gain's own noise, 2 s^2 / K")
    for note in report.notes:
        print(f"note: {note}")
    print(f"allocate said: {report.decision.reason}")
    print(f"group {report.group} in the registry; plot: {report.plot}")
    for p in report.problems:
        print(f"  {p}", file=sys.stderr)
    return 0 if report.complete else 1
