"""``toolscale fits list|show|diff``: stored fits as first-class objects, and how a command picks one."""

from __future__ import annotations

import argparse
from typing import Any

from toolscale.cli._common import Formatter, add_registry_args, config_of, emit_json, print_table, registry_path
from toolscale.errors import UsageError

__all__ = ["register", "stored_fit", "summary_of", "render_fit"]

EXAMPLES = """\
examples:
  toolscale fits list --experiment E
  toolscale fits show f-1a2b3c4d5e6f --json
  toolscale fits diff f-1a2b3c4d5e6f f-6f5e4d3c2b1a"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("fits", help="list, show and compare the fits stored in the registry",
                       formatter_class=Formatter, epilog=EXAMPLES)
    fsub = p.add_subparsers(dest="fits_command", metavar="ACTION", required=True)
    q = fsub.add_parser("list", help="stored fits, newest first", formatter_class=Formatter, epilog=EXAMPLES)
    add_registry_args(q)
    q.add_argument("--experiment", help="only this experiment")
    q.add_argument("--benchmark", help="only this benchmark")
    q.add_argument("--json", action="store_true", help="the FitList model as JSON")
    q.set_defaults(func=_list)
    q = fsub.add_parser("show", help="one fit: formula, parameters, held-out check, warnings",
                        formatter_class=Formatter, epilog=EXAMPLES)
    q.add_argument("fit_id", help="fit id (toolscale fits list)")
    add_registry_args(q)
    q.add_argument("--json", action="store_true", help="the FitSummary model as JSON (as fit --json)")
    q.set_defaults(func=_show)
    q = fsub.add_parser("diff", help="two fits side by side: what differs, and every parameter",
                        formatter_class=Formatter, epilog=EXAMPLES)
    q.add_argument("fit_a", help="first fit id")
    q.add_argument("fit_b", help="second fit id")
    add_registry_args(q)
    q.add_argument("--json", action="store_true", help="the FitDiff model as JSON")
    q.set_defaults(func=_diff)


def stored_fit(reg: Any, *, fit_id: str | None, experiment: str | None, benchmark: str | None,
               law: str | None = None, allow_stale: bool = False, metric: str | None = None) -> tuple[str, Any]:
    """``(fit_id, FitResult)``: the fit ``fit_id``, else the newest fit of ``experiment``/``benchmark`` (of
    ``law`` and ``metric`` when given); UsageError for none, and for a stale one unless ``allow_stale``."""
    from fit.models import FitResult

    if fit_id is not None:
        row = reg.fit(fit_id)
        if experiment is not None and row.experiment != experiment or benchmark is not None and \
                row.benchmark != benchmark:
            raise UsageError(f"fit {fit_id} is of {row.experiment}/{row.benchmark}, not of "
                             f"{experiment or row.experiment}/{benchmark or row.benchmark}")
        for what, want, got in (("law", None if law == "auto" else law, row.law), ("metric", metric, row.metric)):
            if want is not None and got != want:
                raise UsageError(f"fit {fit_id} is of {what} {got!r}, not {want!r}; drop --{what} or name a fit of "
                                 f"that {what}")
    else:
        if experiment is None or benchmark is None:
            raise UsageError("name the fit: --fit-id ID, or --experiment NAME and --benchmark NAME (its newest)")
        rows = [r for r in reg.fits(experiment, benchmark) if (law is None or r.law == law)
                and (metric is None or r.metric == metric)]
        if not rows:
            fitted = sorted({f"{r.law} ({r.metric})" for r in reg.fits(experiment, benchmark)})
            what = "".join(f" of {k} {v!r}" for k, v in (("law", law), ("metric", metric)) if v)
            raise UsageError(f"no fit{what} for {experiment}/{benchmark}; laws fitted: "
                             f"{', '.join(fitted) or 'none (run toolscale fit)'}")
        row = rows[0]
    if row.stale_reason and not allow_stale:
        raise UsageError(f"fit {row.fit_id} of {row.experiment}/{row.benchmark} is stale: {row.stale_reason}; refit "
                         "with toolscale fit")
    return row.fit_id, FitResult.model_validate(row.payload)


def summary_of(fit: Any, fit_id: str | None) -> Any:
    """The :class:`fit.models.FitSummary` of a stored fit (formula included)."""
    from fit.laws import law_of
    from fit.models import FitSummary

    return FitSummary.of(fit, fit_id, formula=law_of(fit).formula)


def _decision_line(d: Any) -> str:
    """One line: accuracy over all pairs and over the close ones, each with its Wilson interval."""
    ci = f"{d.level:.0%} CI {d.lo:.0%}-{d.hi:.0%}" if d.lo is not None else "no CI"
    close = "no seed SD at the fitted size: close pairs not defined (run 2+ seeds there)"
    if d.seed_sd is not None:
        close = (f"close pairs (within {d.close_sds:g} seed SDs = {d.close_sds * d.seed_sd:.3g}): none"
                 if not d.close_pairs else
                 f"close pairs (within {d.close_sds:g} seed SDs = {d.close_sds * d.seed_sd:.3g}): "
                 f"{d.close_accuracy:.0%} of {d.close_pairs} ({d.level:.0%} CI {d.close_lo:.0%}-{d.close_hi:.0%})")
    return (f"decision accuracy ({d.source}: {d.small_scale}): {d.accuracy:.0%} of {d.pairs} recipe pairs ({ci}); "
            + close)


def _decisions(summary: Any) -> None:
    """Decision accuracies (observed and law) and the observed one against compute."""
    for d in (summary.decision_accuracy, summary.decision_accuracy_law):
        if d is not None and d.accuracy is not None:
            print(_decision_line(d))
    dec = summary.decision_accuracy
    if dec is not None and dec.curve:
        print_table([{"rung": p.model_size, "cell": p.cell, "FLOPs": f"{p.flops:.3g}", "accuracy": p.accuracy,
                      "90% lo": p.lo, "90% hi": p.hi, "pairs": p.pairs, "close accuracy": p.close_accuracy,
                      "close pairs": p.close_pairs} for p in dec.curve], title="decision accuracy against compute")


def _stuck(f: Any) -> str:
    """`` (N at a bound)`` beside ``converged=``: a fit whose free parameters sit at a bound converged to an edge,
    not to an estimate (held parameters do not count)."""
    stuck = [p for p in f.at_bounds if p not in (f.fixed or {})]
    return f" ({len(stuck)} at a bound: {', '.join(stuck)})" if stuck else ""


def render_fit(f: Any, summary: Any, fit_id: str | None) -> None:
    """The text of a fit (``fit`` and ``fits show``): formula, parameters, held-out check, verdicts, warnings."""
    tag = " [SIMULATED DATA]" if f.simulated else ""
    what = {"envelope": " (early-stopped envelope)", "checkpoints": " (checkpoints)"}.get(f.point_target, "")
    print(f"{f.law} on {f.n_points} runs{what} of {f.experiment} / {f.benchmark}/{f.metric}{tag}; "
          f"converged={f.converged}{_stuck(f)}; "
          f"stored as {fit_id or '(not stored)'}")
    print(f"formula: {summary.formula}" + (" (weighted by the runs' standard errors)" if f.weighted else ""))
    if f.n_skipped:
        print(f"skipped {f.n_skipped} done runs without {f.benchmark}/{f.metric}")
    print(f"residuals: {f.residual_scale} (Huber delta {f.huber_delta:.3g} in those units)")
    rows = [{"param": k, "estimate": v.estimate, "95% lo": v.lo, "95% hi": v.hi,
             "note": "held fixed" if k in f.fixed else "at a bound" if k in f.at_bounds else ""}
            for k, v in summary.params.items()]
    print_table(rows, title="parameters")
    if f.heldout:
        h = f.heldout
        cov = f"{h.interval_coverage:.0%}" if h.interval_coverage is not None else "n/a"
        ext = f"{h.extrapolation_factor:.1f}x" if h.extrapolation_factor else "n/a"
        print(f"held out ({f.holdout_source}): {h.n} runs, MAE {h.mae:.4f}, max error {h.max_error:.4f}, "
              f"90% interval coverage {cov}, extrapolation {ext}")
    _decisions(summary)
    if f.rolling:
        print_table([{"fitted sizes": ", ".join(f"{n:.3g}" for n in s.fit_sizes), "predicted": f"{s.predicted_size:.3g}",
                      "runs": s.n, "MAE": s.mae, "relative MAE": s.relative_mae, "max error": s.max_error,
                      "90% coverage": s.interval_coverage} for s in f.rolling], title="rolling validation")
    if f.interaction is not None:
        i = f.interaction
        ci = f" [{i.gain_ratio_lo:.2f}, {i.gain_ratio_hi:.2f}]" if i.gain_ratio_lo is not None else ""
        print(f"interaction test: {i.verdict} -> {i.supported} ({i.strength}; delta BIC {i.delta_bic:.1f}, "
              f"LR p={i.lr_p:.3g} by {i.lr_p_method}); diversity gain at top quality / at bottom = "
              f"{i.gain_ratio:.2f}{ci}")
    for w in summary.warnings:
        print(f"WARNING: {w}")


def _list(args: argparse.Namespace) -> int:
    from fit.models import FitList, FitResult, FitRow, fit_warnings
    from grid.registry import Registry

    with Registry(registry_path(args, config_of(args)), read_only=True) as reg:
        if args.experiment:
            reg.experiment(args.experiment)
        records = reg.fits(args.experiment, args.benchmark)
    rows = []
    for r in records:
        f = FitResult.model_validate(r.payload)
        h = f.heldout
        rows.append(FitRow(fit_id=r.fit_id, experiment=r.experiment, benchmark=r.benchmark, metric=r.metric,
                           law=r.law, n_points=r.n_points, converged=r.converged,
                           created_at=r.created_at.strftime("%Y-%m-%d %H:%M:%S"), stale_reason=r.stale_reason,
                           heldout_mae=h.mae if h else None, interval_coverage=h.interval_coverage if h else None,
                           warnings=len(fit_warnings(f))))
    out = FitList(fits=rows)
    if args.json:
        emit_json(out.model_dump(mode="json"))
        return 0
    print_table([{"fit": r.fit_id, "experiment": r.experiment, "benchmark": f"{r.benchmark}/{r.metric}",
                  "law": r.law, "runs": r.n_points, "held-out MAE": r.heldout_mae,
                  "90% coverage": f"{r.interval_coverage:.0%}" if r.interval_coverage is not None else "",
                  "warnings": r.warnings, "stored (UTC)": r.created_at,
                  "state": "stale" if r.stale_reason else "current"} for r in rows], title="fits")
    return 0


def _show(args: argparse.Namespace) -> int:
    from grid.registry import Registry

    with Registry(registry_path(args, config_of(args)), read_only=True) as reg:
        row = reg.fit(args.fit_id)
        fit_id, fit = stored_fit(reg, fit_id=args.fit_id, experiment=None, benchmark=None, allow_stale=True)
    summary = summary_of(fit, fit_id)
    if args.json:
        emit_json(summary.model_dump(mode="json"))
        return 0
    render_fit(fit, summary, fit_id)
    if row.stale_reason:
        print(f"STALE: {row.stale_reason} (allocate and predict refuse it; refit with toolscale fit)")
    return 0


def _diff(args: argparse.Namespace) -> int:
    from fit.models import FitDiff, ParamDiff
    from grid.registry import Registry

    with Registry(registry_path(args, config_of(args)), read_only=True) as reg:
        ids = []
        for fid in (args.fit_a, args.fit_b):
            ids.append(stored_fit(reg, fit_id=fid, experiment=None, benchmark=None, allow_stale=True))
    (ia, fa), (ib, fb) = ids
    sa, sb = summary_of(fa, ia), summary_of(fb, ib)
    keys = ("experiment", "benchmark", "metric", "law", "formula", "n_points", "n_params", "data_hash",
            "holdout_rule", "heldout_n", "heldout_mae", "heldout_relative_mae", "interval_coverage", "bic",
            "residual_sd", "weighted")
    fields: dict[str, tuple] = {k: (getattr(sa, k), getattr(sb, k)) for k in keys if getattr(sa, k) != getattr(sb, k)}
    if fa.options != fb.options:
        fields["options"] = (str(fa.options), str(fb.options))
    params = {}
    for name in dict.fromkeys([*sa.params, *sb.params]):
        pa, pb = sa.params.get(name), sb.params.get(name)
        ca = (pa.lo, pa.hi) if pa is not None and pa.lo is not None else None
        cb = (pb.lo, pb.hi) if pb is not None and pb.lo is not None else None
        overlap = None if ca is None or cb is None else bool(ca[0] <= cb[1] and cb[0] <= ca[1])
        params[name] = ParamDiff(a=pa.estimate if pa else None, b=pb.estimate if pb else None, a_ci=ca, b_ci=cb,
                                 overlap=overlap)
    diff = FitDiff(a=ia, b=ib, fields=fields, params=params)
    if args.json:
        emit_json(diff.model_dump(mode="json"))
        return 0
    print_table([{"field": k, ia: v[0], ib: v[1]} for k, v in fields.items()], title="differences")
    print_table([{"param": k, ia: p.a, f"{ia} 95%": _ci(p.a_ci), ib: p.b, f"{ib} 95%": _ci(p.b_ci),
                  "intervals overlap": "" if p.overlap is None else ("yes" if p.overlap else "NO")}
                 for k, p in params.items()], title="parameters")
    return 0


def _ci(ci: tuple[float, float] | None) -> str:
    return "" if ci is None else f"{ci[0]:.4g} to {ci[1]:.4g}"
