"""``toolscale next``: the runs to add so that the allocation at a budget becomes sure, at the least cost."""

from __future__ import annotations

import argparse
import sys

from toolscale.errors import UsageError
from toolscale.cli._common import (Formatter, add_registry_args, benchmark_of, config_of, emit_json, positive_float,
                                   positive_int, print_table, registry_path, writable_file)

__all__ = ["register", "augment"]

EXAMPLES = """\
examples:
  toolscale next --experiment E --benchmark heldout-calls --budget 4000 --runs 12
  toolscale next --experiment E --benchmark heldout-calls --budget 4000 --runs 12 --max-cost 5000 --json > next.json
  toolscale next --experiment E --benchmark heldout-calls --budget 4000 --runs 6 --out next.json
  toolscale next --fit-id f-1a2b3c4d5e6f --budget 4000 --runs 12     # a stored fit other than the newest
then:
  toolscale grid design my.toml --augment next.json     # the runs as pending rows of their own group
  toolscale launch --config my.toml --wait && toolscale fit --experiment E --benchmark heldout-calls
  allocate --budget 4000 --benchmark heldout-calls --experiment E   # the new interval beside the old

Each run is chosen for the largest expected drop, per unit of its cost, of the gain interval's width and
of the expected regret at --budget: its results are simulated from the law's draws and the draws re-weighted
by their likelihood (a preposterior criterion). A run's cost is its new dataset's synthesis (none when a
dataset of that recipe and seed exists) plus its training compute at [cost].per_pflop."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("next", help="propose the runs that make the allocation at a budget surest per unit of cost",
                       description="Which runs to add (recipe x model size x tokens) so that the allocation "
                                   "decision at --budget becomes sure at the least training cost.",
                       formatter_class=Formatter, epilog=EXAMPLES)
    p.add_argument("--experiment", help="experiment whose fit to use (default: the only one with a fit)")
    p.add_argument("--benchmark", help="target benchmark (one with a stored fit; --fit-id names its own)")
    p.add_argument("--fit-id", help="plan from this stored fit (toolscale fits list; default: the newest)")
    p.add_argument("--budget", type=positive_float, required=True, help="the allocation budget the decision is about")
    p.add_argument("--runs", type=positive_int, required=True, help="runs to propose, >= 1")
    p.add_argument("--max-cost", type=positive_float, metavar="C",
                   help="most the proposed runs may cost together, in the budget unit (default: no cap)")
    p.add_argument("--unit", help="budget unit: usd or gpu_hours (default: the experiment's)")
    p.add_argument("--model-size", help="ladder rung or parameter count the allocation is for (default: target)")
    p.add_argument("--out", metavar="PATH", help="also write the proposal (the --json object) to this file")
    p.add_argument("--json", action="store_true", help="the NextRuns model as JSON (what grid design --augment reads)")
    add_registry_args(p)
    p.set_defaults(func=_next)


def _progress(message: str) -> None:
    print(f"next: {message}", file=sys.stderr, flush=True)


def _next(args: argparse.Namespace) -> int:
    from allocator.models import AllocationQuery
    from pipeline.next_runs import propose_next_runs

    cfg = config_of(args)
    args.benchmark = benchmark_of(args, cfg, "next")
    out = writable_file(args.out, "--out", suffixes=(".json",),
                        protect=(registry_path(args, cfg), getattr(args, "config", None))) if args.out is not None else None
    query = AllocationQuery.of(registry=registry_path(args, cfg), budget=args.budget, benchmark=args.benchmark,
                               unit=args.unit, experiment=args.experiment, model_size=args.model_size, config=cfg,
                               fit_id=args.fit_id)
    proposal = propose_next_runs(query, runs=args.runs, max_cost=args.max_cost, progress=_progress)
    data = proposal.model_dump(mode="json")
    if out is not None:
        from toolscale.files import atomic_write_json

        atomic_write_json(out, data, indent=2, sort_keys=False)
    if args.json:
        emit_json(data)
    else:
        _render(proposal, out)
    return 0


def _render(p, out) -> None:
    unit = p.budget.unit
    label = " (SIMULATED data)" if p.simulated else ""
    iv = (f"90% interval {p.gain_interval[0]:+.4f} to {p.gain_interval[1]:+.4f}, width {p.width_now:.4f}"
          if p.gain_interval else f"width {p.width_now:.4f}")
    print(f"Allocation of {p.budget} for {p.benchmark} — experiment {p.experiment}, law {p.law}{label}: "
          f"gain {p.gain_over_baseline:+.4f} over the diversity-only plan ({iv}); expected regret "
          f"{p.expected_regret_now:.4f}")
    print(("now: DECISION: " if p.decision.verdict == "recommend" else "now: ") + p.decision.reason)
    mults = {r.token_multiplier for r in p.runs}
    print_table([{"#": r.rank, "model": r.model_size, **({"x tokens": r.token_multiplier} if len(mults) > 1 else {}),
                  "seed": r.seed, "new data": "yes" if r.new_dataset else "reused", f"cost ({unit})": r.cost,
                  "cumulative": r.cumulative_cost, "predicted": f"{r.predicted:.4f} ± {r.predicted_sd:.4f}",
                  "exp. width after": r.expected_width_after, "exp. regret after": r.expected_regret_after,
                  "P(resolved) after": r.p_resolved_after} for r in p.runs], title=f"proposed runs ({len(p.runs)})")
    print_table([{"#": r.rank, **r.recipe} for r in p.runs], title="their recipes")
    ratio = p.expected_width_after / p.width_now if p.width_now > 0 else float("nan")
    print(f"after these {len(p.runs)} runs ({p.total_cost:,.2f} {unit}): expected gain-interval width "
          f"{p.expected_width_after:.4f} ({ratio:.2f}x now; no runs take it below {p.width_floor:.4f}, one run's "
          f"noise per arm and the error past tested maxima), expected regret {p.expected_regret_after:.4f}; "
          f"P(the gain's 90% interval lies above 0) = {p.p_resolved_after:.2f}")
    print(f"criterion: {p.criterion}; {p.candidates} candidates, {p.draws} draws, {p.simulations} simulated "
          f"outcomes; mean effective sample size after the runs {p.mean_ess:.1f} of {p.draws} draws before tempering"
          + (" (few: these runs would pin the law down beyond its draws' spread, and the refit's interval is "
             "likely wider than expected)" if p.mean_ess < 10 else ""))
    print(f"cost of a run: {p.cost_rule}")
    for note in p.notes:
        print(f"note: {note}")
    where = str(out) if out else "next.json"
    if out is None:
        print("to add them: rerun with --out next.json (or --json > next.json), then "
              "`toolscale grid design CONFIG --augment next.json`")
    else:
        print(f"written: {where}; add the runs with `toolscale grid design CONFIG --augment {where}`")


def augment(args: argparse.Namespace, config, rates) -> int:
    """``grid design --augment``: add a `toolscale next` proposal's runs (validated whole before anything is written)."""
    import json

    from allocator.models import NextRuns
    from grid.augment import augment_runs, record_augment
    from grid.models import AugmentReport

    try:
        proposal = NextRuns.model_validate(json.loads(open(args.augment, encoding="utf-8").read()))
    except OSError as err:
        raise UsageError(f"--augment {args.augment}: {err.strerror or err}") from None
    except ValueError as err:  # bad JSON or not a NextRuns object
        first = str(err).splitlines()
        raise UsageError(f"--augment {args.augment}: not a `toolscale next --json` proposal "
                         f"({'; '.join(first[:2])})") from None
    if proposal.experiment != config.experiment.name:
        raise UsageError(f"--augment {args.augment}: the proposal is for experiment {proposal.experiment!r}, "
                         f"the config for {config.experiment.name!r}")
    runs = augment_runs(config, proposal.rows(), learning_rates=rates)
    new_group, new_runs = False, 0
    if not args.dry_run:
        from grid.registry import Registry

        with Registry(args.registry or config.experiment.registry) as reg:
            new_group, new_runs = record_augment(reg, config, runs, proposal.model_dump(mode="json"))
    report = AugmentReport(experiment=config.experiment.name, group=runs[0].design_version, runs=runs,
                           new_group=new_group, new_runs=new_runs, dry_run=args.dry_run,
                           total_cost=proposal.total_cost, unit=proposal.budget.unit)
    if args.json:
        emit_json(report.model_dump(mode="json"))
        return 0
    print_table([{"run_id": r.run_id, "model": r.model_size, "seed": r.seed, **r.recipe} for r in runs],
                title=f"group {report.group}: {len(runs)} runs for {report.experiment} "
                      f"({report.total_cost:,.2f} {report.unit} by the proposal)")
    if args.dry_run:
        print("dry run: nothing written")
    elif new_runs == 0:
        print(f"unchanged: group {report.group} and its runs were already recorded")
    else:
        print(f"recorded {new_runs} pending runs in group {report.group}; run them with "
              f"`toolscale launch --config {args.config}`, then `toolscale fit` and `allocate`")
    return 0
