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

from toolscale.cli._common import (Formatter, add_registry_args, config_of, emit_json, positive_float, positive_int,
                                   print_table, registry_path)
from toolscale.errors import UsageError

__all__ = ["register", "run_verification"]

EXAMPLES = """\
examples:
  toolscale verify --budget 20000 --benchmark heldout-calls --config my.toml
  toolscale verify --budget 20000 --benchmark heldout-calls --config my.toml --seeds 3 --model-size tiny-l --json
  toolscale verify --budget 20000 --benchmark heldout-calls --config my.toml --executor slurm --plot v.png
A rerun with the same arguments reuses the runs already done (nothing is retrained)."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("verify", help="train the allocator's plan against the diversity-only and equal-spend plans",
                       description="Turn the allocator's plan, the fair diversity-only plan and an equal-spend plan "
                                   "at one budget into recipes, synthesise, train K seeds of each at one ladder "
                                   "rung, score them, and report realised against predicted.",
                       formatter_class=Formatter, epilog=EXAMPLES)
    p.add_argument("--budget", type=positive_float, required=True, help="total budget, in the experiment's unit")
    p.add_argument("--benchmark", required=True, help="benchmark with a stored fit (it is also what runs are scored on)")
    p.add_argument("--seeds", type=positive_int, default=3, help="seeds per plan (default 3)")
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


def _plans(reg_path: str, cfg, args, rung: str):
    """Allocate (stored), the equal-spend plan, and the three arms with their runs (nothing written but the plan)."""
    from allocator.service import equal_spend_plan, plan_allocation
    from allocator.verification import arms_of, group_name, training_template, verification_runs
    from grid.registry import Registry

    common = dict(budget=args.budget, benchmark=args.benchmark, experiment=args.experiment, model_size=rung,
                  config=cfg)
    equal, equal_iv = equal_spend_plan(reg_path, **common)  # read-only: fails before anything is stored
    # not stored as an allocation of the experiment: the group's design record holds it (the experiment's
    # newest allocation stays the one its user asked for)
    plan = plan_allocation(reg_path, save=False, **common)
    size = cfg.model_size(rung)
    with Registry(reg_path, read_only=True) as reg:
        template = training_template(reg.runs(plan.experiment), rung)
    n, d, training = (size.approx_params, size.planned_tokens, {}) if template is None else template
    arms = arms_of(plan, equal, equal_iv, seeds=list(range(args.seeds)), sign=plan.sign)
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


def run_verification(args: argparse.Namespace):
    """The whole verification (plan, store, train, report); returns the :class:`VerificationReport`."""
    from allocator.cost import cost_model_from_config
    from allocator.plots import verification_plot
    from allocator.verification import summarise
    from grid.registry import Registry

    cfg = config_of(args)
    reg_path = registry_path(args, cfg)
    if cfg is None:
        from allocator.service import config_for, resolve_experiment

        with Registry(reg_path, read_only=True) as reg:
            cfg = config_for(reg, resolve_experiment(reg, args.benchmark, args.experiment), None)
    rung = _rung(cfg, args.model_size)
    plan, arms, group, specs = _plans(reg_path, cfg, args, rung)
    gcfg = _group_config(cfg, group, args)
    _store(reg_path, gcfg, plan, arms, specs)
    _train(reg_path, gcfg, args)
    with Registry(reg_path, read_only=True) as reg:
        runs = reg.runs(group)
    report = summarise(experiment=plan.experiment, group=group, benchmark=args.benchmark, metric=plan.metric,
                       plan=plan, arms=arms, runs=runs, cost=cost_model_from_config(cfg), model_size=rung,
                       law=plan.law, fit_id=plan.fit_id, simulated=plan.simulated, decision=plan.decision,
                       sign=plan.sign)
    if args.plot:
        report = report.model_copy(update={"plot": str(verification_plot(report, args.plot))})
    return report


def _iv(iv) -> str:
    return f"{iv[0]:.4f}-{iv[1]:.4f}" if iv else ""


def _verify(args: argparse.Namespace) -> int:
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
    if report.realised_gain is None:
        print(f"realised gain: not available (runs not done); predicted gain {report.predicted_gain:+.3g}{piv}")
    else:
        ci = f" (90% CI {report.realised_gain_ci[0]:+.3g} to {report.realised_gain_ci[1]:+.3g})" \
            if report.realised_gain_ci else " (one seed: no CI)"
        where = {True: "inside", False: "OUTSIDE", None: "not comparable with"}[report.inside_interval]
        print(f"realised gain over diversity-only: {report.realised_gain:+.3g}{ci}; predicted "
              f"{report.predicted_gain:+.3g}{piv}: {where} the predicted interval")
    print(f"allocate said: {report.decision.reason}")
    print(f"group {report.group} in the registry; plot: {report.plot}")
    for p in report.problems:
        print(f"  {p}", file=sys.stderr)
    return 0 if report.complete else 1
