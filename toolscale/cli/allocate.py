"""``allocate`` (also ``toolscale allocate``) and ``toolscale serve-mcp``."""

from __future__ import annotations

import argparse
import math

from toolscale.cli._common import (Formatter, add_registry_args, benchmark_of, config_of, emit_json, positive_float,
                                   positive_int, print_table, registry_path, writable_file, PLOT_SUFFIXES, amount)
from toolscale.errors import UsageError

__all__ = ["register", "add_target_args"]

EXAMPLES = """\
examples:
  allocate --budget 50000 --benchmark heldout-calls
  allocate --budget 50000 --benchmark bfcl --experiment E --model-size tiny-l --json
  allocate --budget 1000 --benchmark heldout-calls --sweep 1000:100000:12 --plot sweep.png
  allocate --budget 50000 --benchmark pile --experiment imported --config my.toml"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("allocate", help="spend a budget across tools, tasks, databases and supervision quality",
                       description="Maximise the fitted law's predicted score under a budget; compare with the "
                                   "diversity-only allocation at the same budget.",
                       formatter_class=Formatter, epilog=EXAMPLES)
    p.add_argument("--budget", type=positive_float, required=True, help="total budget, in --unit")
    p.add_argument("--benchmark", help="target benchmark (one with a stored fit; --fit-id names its own)")
    p.add_argument("--unit", help="budget unit: usd or gpu_hours (default: the experiment's)")
    p.add_argument("--experiment", help="experiment whose fit to use (default: the only one with a fit)")
    add_target_args(p)
    p.add_argument("--extrapolate", type=positive_float, metavar="X",
                   help="let plans put an axis up to X times its largest tested level (default: the config's "
                        "[allocate] max_extrapolation, 1.25); how far each arm goes is printed and widens its "
                        "interval")
    p.add_argument("--law", help="use the newest fit of this law (default: the newest fit)")
    p.add_argument("--fit-id", help="use this stored fit (toolscale fits list)")
    p.add_argument("--draws", type=positive_int, help="bootstrap draws to use, >= 1 (default: all stored)")
    p.add_argument("--sweep", metavar="MIN:MAX:STEPS", help="plans over a budget range (log-spaced); writes a plot")
    p.add_argument("--plot", help="where --sweep writes its plot (.png, .pdf, .svg, .jpg; default "
                                  "allocation_sweep.png)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    add_registry_args(p)
    p.set_defaults(func=_allocate)

    p = sub.add_parser("serve-mcp", help="serve allocate, next_runs, list_benchmarks and fit_summary as MCP tools over stdio",
                       formatter_class=Formatter,
                       epilog="example:\n  toolscale serve-mcp --registry toolscale.duckdb   "
                              "# then connect any MCP client over stdio")
    add_registry_args(p)
    p.set_defaults(func=_serve)


def add_target_args(p: argparse.ArgumentParser, what: str = "") -> None:
    """``--model-size``, ``--tokens`` and ``--tokens-per-param``: the N and D plans are made at (``allocate`` and
    ``report --sweep``), parsed and checked by :func:`allocator.planning.plan_target` (1.4B, 300B, a rung name);
    ``what`` prefixes each help."""
    p.add_argument("--model-size", help=f"{what}ladder rung name or parameter count such as 1.4e9 or 1.4B "
                                        "(default: the config's target size; imported runs without a ladder need it)")
    p.add_argument("--tokens", metavar="D", help=f"{what}training tokens of the planned model, e.g. 300B (default: "
                                                  "the rung's; imported runs without a ladder need it or "
                                                  "--tokens-per-param)")
    p.add_argument("--tokens-per-param", type=positive_float, metavar="R", help=f"{what}training tokens as R x N")


def _next_dollar_line(open_axes: dict[str, float], unit: str, metric: str) -> str:
    """Where the next budget unit goes; axes within 1% of the best marginal value are named together
    (at an interior optimum every axis that gets spend buys the same: the KKT condition)."""
    best = max(open_axes.values())
    if best <= 0:  # a law without data axes (chinchilla over N and D): no axis moves the prediction
        return (f"the next {unit} buys nothing on {', '.join(sorted(open_axes))}: the law's prediction of {metric} "
                "does not improve with any of them")
    tied = sorted(k for k, v in open_axes.items() if v >= best - 0.01 * abs(best))
    rate = f"{best:.3g} points of {metric} per {unit}"
    if len(tied) == 1:
        return f"the next {unit} buys the most on: {tied[0]} ({rate})"
    return f"the next {unit} buys the same on {', '.join(tied)} ({rate} each: the plan is balanced)"


def _unspent_reason(capped: set[str], open_axes: dict[str, float]) -> str:
    """Why a plan leaves budget unspent: axes at their caps, or (a law without data axes) no axis that buys
    anything."""
    if capped or any(v > 0 for v in open_axes.values()):
        return "every axis the law values is at its cap"
    return "no axis improves the law's prediction: more of any buys nothing"


MAX_SWEEP_STEPS = 200
"""Most budgets one --sweep plans (each is a solve and a stored allocation row)."""


def _sweep_budgets(text: str) -> list[float]:
    import numpy as np

    try:
        lo, hi, steps = text.split(":")
        lo_f, hi_f, n = float(lo), float(hi), int(steps)
    except ValueError:
        raise UsageError(f"--sweep must be MIN:MAX:STEPS, got {text!r}") from None
    if not (0 < lo_f < hi_f < float("inf") and 2 <= n <= MAX_SWEEP_STEPS):
        raise UsageError(f"--sweep needs 0 < MIN < MAX (finite) and 2 <= STEPS <= {MAX_SWEEP_STEPS}, "
                         f"got {text[:80]!r}")
    return [float(x) for x in np.geomspace(lo_f, hi_f, n)]


def _query(args: argparse.Namespace, cfg, budget: float, **extra):
    """The :class:`AllocationQuery` of the command line at ``budget`` (AllocatorUsageError, exit 2, if invalid)."""
    from allocator.models import AllocationQuery

    return AllocationQuery.of(registry=registry_path(args, cfg), budget=budget, benchmark=args.benchmark,
                              unit=args.unit, experiment=args.experiment, model_size=args.model_size, config=cfg,
                              law=args.law, draws=args.draws, tokens=args.tokens,
                              tokens_per_param=args.tokens_per_param, fit_id=args.fit_id,
                              extrapolate=args.extrapolate, **extra)


def _allocate(args: argparse.Namespace) -> int:
    from pipeline.allocate import plan_allocation

    cfg = config_of(args)
    args.benchmark = benchmark_of(args, cfg, "allocate")
    if args.sweep:
        return _sweep(args, cfg)
    if args.plot:
        raise UsageError(f"--plot {args.plot} draws the plans of --sweep MIN:MAX:STEPS; add --sweep or drop --plot")
    report = plan_allocation(_query(args, cfg, args.budget))
    if args.json:
        emit_json(report.model_dump(mode="json"))
    else:
        _render(report)
    return 0


def _sweep(args: argparse.Namespace, cfg) -> int:
    from allocator.plots import sweep_plot
    from pipeline.allocate import plan_allocation

    budgets = _sweep_budgets(args.sweep)
    args.plot = str(writable_file(args.plot or "allocation_sweep.png", "--plot", suffixes=PLOT_SUFFIXES))
    plans, warm = [], []
    for budget in budgets:
        report = plan_allocation(_query(args, cfg, budget, redraws=0), warm=warm)
        warm = [report.plan.levels]
        plans.append(report)
    sweep_plot(plans, args.plot, metric=plans[0].metric)
    if args.json:
        emit_json({"plans": [p.model_dump(mode="json") for p in plans], "plot": args.plot})
    else:
        print_table([{"budget": p.budget.value, "score": p.plan.predicted_score, "baseline": p.baseline.predicted_score,
                      **{f"{k} spend": v for k, v in p.plan.spend.items()}} for p in plans],
                    title=f"allocation sweep ({plans[0].budget.unit})")
        print(f"plot: {args.plot}")
    return 0


def _render(plan) -> None:
    unit, metric = plan.budget.unit, plan.metric
    label = " (SIMULATED data)" if plan.simulated else ""
    print(f"Allocation of {plan.budget} for {plan.benchmark} — experiment {plan.experiment}, law {plan.law} "
          f"(fit {plan.fit_id}){label}")
    d = f"{plan.tokens:.3g} training tokens ({plan.tokens_source})" if plan.tokens else "tokens not recorded"
    print(f"planned for a model of N = {plan.model_params:.3g} parameters ({plan.model_source}) and {d}")
    if plan.size_extrapolation:
        outside = ", ".join(f"{'model size' if k == 'N' else 'training tokens'} x{v:.3g}"
                            for k, v in plan.size_extrapolation.items())
        print(f"WARNING: the plan's model lies outside the fitted runs ({outside}: value / largest fitted, or "
              "smallest fitted / value); every prediction below extrapolates the law there")
    capped = {k for k, why in plan.optimality.at_bound.items() if why.startswith("upper")}
    rows = []
    for name, level in plan.plan.levels.items():
        spread = plan.spend_spread.get(name)
        buys = "at its maximum" if name in capped else f"{plan.marginal_value.get(name, 0.0):.3g}"
        rows.append({"axis": name, "level": level, f"spend ({unit})": plan.plan.spend.get(name, 0.0),
                     "spend 90% range": f"{spread[0]:.4g}-{spread[1]:.4g}" if spread else "",
                     "baseline level": plan.baseline.levels.get(name), f"next {unit} buys (points)": buys})
    if "compute" in plan.plan.spend:
        rows.append({"axis": "compute", "level": None, f"spend ({unit})": plan.plan.spend["compute"],
                     "spend 90% range": "", "baseline level": None, f"next {unit} buys (points)": ""})
    print_table(rows)
    miv = plan.metric_interval(plan.interval)
    iv = f" (90% interval {miv[0]:.4f}-{miv[1]:.4f})" if miv else ""
    lower = " (lower is better; gains below are reductions)" if plan.target == "loss" else ""
    print(f"predicted {metric}: {plan.metric_value(plan.plan.predicted_score):.4f}{iv}{lower} (predictive: a run's "
          "noise, law forms, and extrapolation error included); "
          f"total cost {amount(plan.plan.total_cost)} {unit}")
    giv = (f" (90% interval {plan.gain_interval[0]:+.4f} to {plan.gain_interval[1]:+.4f} for one run of each; "
           f"{plan.expected_gain_interval[0]:+.4f} to {plan.expected_gain_interval[1]:+.4f} for the expected gain)"
           if plan.gain_interval and plan.expected_gain_interval else "")
    pb = f"; P(beats baseline) = {plan.p_beats_baseline:.2f}" if plan.p_beats_baseline is not None else ""
    print(f"diversity-only baseline: {plan.metric_value(plan.baseline.predicted_score):.4f}; "
          f"gain {plan.gain_over_baseline:+.4f}{giv}{pb}")
    print(f"  baseline: {plan.baseline_method}")
    if plan.pinned is not None and plan.gain_over_pinned is not None:
        piv = (f" (90% interval {plan.pinned_gain_interval[0]:+.4f} to {plan.pinned_gain_interval[1]:+.4f})"
               if plan.pinned_gain_interval else "")
        print(f"same law, quality pinned at baseline: {plan.metric_value(plan.pinned.predicted_score):.4f}; "
              f"gain {plan.gain_over_pinned:+.4f}{piv} (>= 0 by construction)")
    if plan.regret_interval is not None and plan.expected_regret is not None:
        share = (f" ({plan.regret_interval[1] / abs(plan.gain_over_baseline):.0%} of the gain)"
                 if abs(plan.gain_over_baseline) > 0 else "")
        print(f"what the plan may leave on the table, against the law's own draws: mean {plan.expected_regret:.4f}, "
              f"{plan.regret_bound_percentile}th-percentile bound {plan.regret_interval[1]:.4f}{share} (parameter "
              "uncertainty only)")
    if plan.best_observed is not None and plan.gain_over_best_observed is not None:
        biv = plan.best_observed_gain_interval
        bivs = f" (90% interval {biv[0]:+.4f} to {biv[1]:+.4f})" if biv else ""
        print(f"best recipe observed: {plan.metric_value(plan.best_observed.predicted_score):.4f} by the law; plan's "
              f"gain over it {plan.gain_over_best_observed:+.4f}{bivs}")
        print(f"  {plan.best_observed_source}")
    if len(plan.law_weights) > 1:
        print("intervals mix law forms: " + ", ".join(f"{k} {v:.0%}" for k, v in plan.law_weights.items()))
    if plan.earlier is not None:
        _render_earlier(plan)
    tied = f" (axes that tie: {', '.join(plan.decision.tied_axes)})" if plan.decision.tied_axes else ""
    print(("DECISION: " if plan.decision.verdict == "recommend" else "") + plan.decision.reason + tied)
    open_axes = {k: v for k, v in plan.marginal_value.items() if k not in capped and math.isfinite(v)}
    if open_axes:
        print(_next_dollar_line(open_axes, unit, metric))
    print(f"spent {amount(plan.plan.total_cost)} of {amount(plan.budget.value)} {unit}; unspent {amount(plan.unspent)} {unit}"
          + (f" ({_unspent_reason(capped, open_axes)})" if plan.unspent > 0.01 * plan.budget.value else ""))
    for name, why in sorted(plan.caps.items()):
        print(f"cap: {name} at {why}")
    for arm, detail in (("plan", plan.extrapolation_detail), ("diversity-only baseline", plan.baseline_extrapolation),
                        ("quality-pinned comparison", plan.pinned_extrapolation)):
        if detail:
            sd = {k: plan.axis_extrapolation_sd.get(k) for k in detail}
            parts = ", ".join(f"{k} x{v:.2f}" + (f" (+{sd[k]:.3g} error per doubling in its interval)"
                                                  if sd.get(k) else " (no measured error past it)")
                              for k, v in detail.items())
            print(f"WARNING: the {arm} leaves the tested range: {parts}; allowed up to x{plan.max_extrapolation:g}")
    if not plan.optimality.ok:
        print(f"note: optimality check not met (relative gap {plan.optimality.max_relative_gap:.3f})")


def _render_earlier(plan) -> None:
    """The interval before the runs `toolscale next` proposed, beside the one after the refit that includes them."""
    e = plan.earlier
    old = (f"{e.gain_interval[0]:+.4f} to {e.gain_interval[1]:+.4f} (width {e.gain_interval[1] - e.gain_interval[0]:.4f})"
           if e.gain_interval else "none")
    new = (f"{plan.gain_interval[0]:+.4f} to {plan.gain_interval[1]:+.4f} "
           f"(width {plan.gain_interval[1] - plan.gain_interval[0]:.4f})" if plan.gain_interval else "none")
    print(f"before the {e.runs} runs of `toolscale next` group {e.group} (fit {e.fit_id}, {e.runs_done} done now): "
          f"gain {e.gain_over_baseline:+.4f}, 90% interval {old}, {e.decision.replace('_', ' ')}; the proposal "
          f"expected width {e.expected_width_after:.4f}")
    print(f"now: gain {plan.gain_over_baseline:+.4f}, 90% interval {new}")


def _serve(args: argparse.Namespace) -> int:
    from toolscale.cli.mcp_server import build_server

    build_server(registry_path(args), config=config_of(args)).run("stdio")
    return 0
