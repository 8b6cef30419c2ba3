"""``toolscale report``'s parts: the stored fit it renders, the target size of its bands, the plans of its
allocation chart and its every-run diagnostics table."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from toolscale.cli._common import config_of, registry_path
from toolscale.config import ExperimentConfig
from toolscale.errors import UsageError

if TYPE_CHECKING:
    from fit.models import AllocationBasis

__all__ = ["stored_result", "report_config", "target_n", "report_allocations", "run_table"]

Loader = Callable[[argparse.Namespace, str | None], tuple[str, list, ExperimentConfig | None, bool]]
"""``toolscale.cli.fit``'s ``_load``, handed in (this module is below the command module, not beside it)."""


def stored_result(args: argparse.Namespace) -> tuple[Any, str]:
    """The stored fit (``--fit-id``, else the newest of the experiment and benchmark, of ``--law`` when named) as an
    :class:`fit.models.ExperimentFit` with its points rebuilt from the registry (the stored split)."""
    from fit.data import points_from_runs
    from fit.laws import law_of
    from fit.models import ExperimentFit, FitRequest
    from fit.targets import target_runs
    from grid.registry import Registry
    from toolscale.cli.fits import stored_fit

    experiment = args.experiment
    with Registry(registry_path(args, config_of(args)), read_only=True) as reg:
        if experiment is None and args.fit_id is None:
            names = [e.name for e in reg.experiments()]
            if len(names) == 1:
                experiment = names[0]
        fit_id, fit = stored_fit(reg, fit_id=args.fit_id, experiment=experiment, benchmark=args.benchmark,
                                 law=None if args.law == "auto" else args.law, allow_stale=True,
                                 metric=getattr(args, "metric", None))
    from pipeline.fit import load_runs, validation_of

    loaded = load_runs(registry_path(args, config_of(args)), fit.experiment)
    runs, _ = target_runs(loaded.runs, benchmark=fit.benchmark, metric=fit.metric, target=fit.point_target,
                          validation=validation_of(loaded.config, getattr(args, "validation", None)))
    law = law_of(fit)
    inter = ("L", str(fit.options.get("stage1_metric", "loss"))) if law.stages is not None else None
    names = law.stages[0].axes if law.stages is not None else law.axes
    points = points_from_runs(runs, benchmark=fit.benchmark, metric=fit.metric, inputs=names,
                              experiment=fit.experiment, simulated=fit.simulated or None, intermediate=inter)
    held = {p.run_id for p in (fit.heldout.points if fit.heldout else [])}
    points = points.model_copy(update={"split": ["heldout" if r in held else "fit" for r in points.run_ids]})
    request = FitRequest(experiment=fit.experiment, benchmark=fit.benchmark, metric=fit.metric, law=fit.law,
                         holdout=fit.holdout_rule if fit.holdout_rule else "split", n_bootstrap=len(fit.bootstrap))
    return ExperimentFit(request=request, fit=fit, interaction=fit.interaction, points=points), fit_id


def report_config(args: argparse.Namespace, experiment: str, load: Loader) -> ExperimentConfig | None:
    """``--config``, else the experiment's stored config (None for imported runs without one); ``load`` is
    ``toolscale.cli.fit``'s loader (registry path, done runs, stored config, simulated)."""
    cfg = config_of(args)
    if cfg is not None:
        return cfg
    _, _, stored, _ = load(args, experiment)
    return stored


def target_n(args: argparse.Namespace, config: ExperimentConfig | None) -> float | None:
    """The parameter count the report's bands reach out to: ``--target-size``, else the config's target size."""
    if args.target_size:
        from grid.importer import parse_count

        try:
            n = parse_count(args.target_size)
        except ValueError:
            n = math.nan
        if not (math.isfinite(n) and n > 0):
            raise UsageError(f"--target-size must be a parameter count (7e9, 7B), got {args.target_size!r}")
        return n
    if config is not None and config.ladder:
        return config.target_size.counted_params(config.design.param_count)
    return None


def report_allocations(args: argparse.Namespace, fit_id: str | None, fit: Any,
                        config: ExperimentConfig | None) -> tuple[list[dict[str, Any]], AllocationBasis | None]:
    """Plans for the allocation chart and the :class:`fit.models.AllocationBasis` they share (None: no plans):
    ``--sweep`` planned now at ``--model-size``/``--tokens`` (not stored), else the fit's stored allocations at
    the newest one's N, D and unit."""
    if args.sweep:
        return _swept(args, fit_id, fit, config)
    given = [f for f, v in (("--model-size", args.model_size), ("--tokens", args.tokens),
                            ("--tokens-per-param", args.tokens_per_param)) if v is not None]
    if given:
        raise UsageError(f"{given[0]} sets the model of --sweep's plans; add --sweep MIN:MAX:STEPS or drop {given[0]}")
    if fit_id is None:
        return [], None
    return _stored(args, fit_id, fit, config)


def _row(p: dict[str, Any], budget: float, fit: Any) -> dict[str, Any]:
    """One budget of the chart from a plan's JSON (a loss is planned as its negation: turned back here)."""
    sign = -1.0 if fit.target == "loss" else 1.0
    iv = p.get("interval")
    return {"budget": budget, "spend": p["plan"]["spend"], "score": sign * p["plan"]["predicted_score"],
            "interval": sorted(sign * x for x in iv) if iv else None,
            "baseline": sign * p["baseline"]["predicted_score"], "unspent": p.get("unspent", 0.0)}


def _swept(args: argparse.Namespace, fit_id: str | None, fit: Any,
           config: ExperimentConfig | None) -> tuple[list[dict[str, Any]], AllocationBasis | None]:
    """``--sweep``'s plans (:func:`toolscale.cli.allocate._sweep_budgets`), at ``--model-size`` and ``--tokens``
    or ``--tokens-per-param`` (AllocatorUsageError, exit 2, naming a bad value), none stored."""
    from allocator.models import AllocationQuery
    from fit.models import AllocationBasis
    from pipeline.allocate import plan_allocation
    from toolscale.cli.allocate import _sweep_budgets

    out, warm, rep = [], [], None
    for budget in _sweep_budgets(args.sweep):
        query = AllocationQuery.of(registry=registry_path(args, config), budget=budget, benchmark=fit.benchmark,
                                   experiment=fit.experiment, config=config, fit_id=fit_id, redraws=0,
                                   model_size=args.model_size, tokens=args.tokens,
                                   tokens_per_param=args.tokens_per_param)
        rep = plan_allocation(query, save=False, warm=warm)
        warm = [rep.plan.levels]
        out.append(_row(rep.model_dump(mode="json"), budget, fit))
    assert rep is not None  # _sweep_budgets gives >= 2 budgets
    return out, AllocationBasis(swept=True, model_params=rep.model_params, tokens=rep.tokens,
                                model_source=rep.model_source, tokens_source=rep.tokens_source,
                                unit=rep.budget.unit, plans=len(out), size_extrapolation=rep.size_extrapolation)


def _model_of(a: dict[str, Any]) -> tuple[float, float | None, str]:
    """The N, D and unit of a stored allocation (D None: stored before allocations kept it)."""
    return float(a["payload"]["model_params"]), a["payload"].get("tokens"), a["unit"]


def _same_model(a: tuple[float, float | None, str], b: tuple[float, float | None, str]) -> bool:
    """Whether two allocations plan for the same N, D and unit (counts equal to 1e-9 relative)."""
    close = lambda x, y: (x is None) == (y is None) and (x is None or math.isclose(x, y, rel_tol=1e-9))  # noqa: E731
    return close(a[0], b[0]) and close(a[1], b[1]) and a[2] == b[2]


def _stored(args: argparse.Namespace, fit_id: str, fit: Any,
            config: ExperimentConfig | None) -> tuple[list[dict[str, Any]], AllocationBasis | None]:
    """The fit's stored allocations at the newest one's N, D and unit, newest per budget; the others are counted
    as left out (a line across budgets compares plans for one model)."""
    from fit.models import AllocationBasis
    from grid.registry import Registry
    from pipeline.allocate import size_extrapolation

    with Registry(registry_path(args, config), read_only=True) as reg:
        stored = [a for a in reg.allocations(fit.experiment) if a["fit_id"] == fit_id]  # newest first
    if not stored:
        return [], None
    head = stored[0]
    same = [a for a in stored if _same_model(_model_of(a), _model_of(head))]
    newest: dict[float, dict[str, Any]] = {}
    for a in same:  # keep the newest plan per budget
        newest.setdefault(float(a["budget"]), a)
    n, d, unit = _model_of(head)
    basis = AllocationBasis(swept=False, model_params=n, tokens=d, unit=unit, plans=len(newest),
                            model_source=head["payload"].get("model_source", ""),
                            tokens_source=head["payload"].get("tokens_source", ""), left_out=len(stored) - len(same),
                            size_extrapolation=size_extrapolation(fit, n, d))
    return [_row(a["payload"], b, fit) for b, a in newest.items()], basis


def run_table(args: argparse.Namespace, fit: Any, load: Loader) -> list[str]:
    """The report's every-run diagnostics section (:func:`fit.run_table.diagnostics_lines`), or none."""
    from fit.run_table import diagnostics_lines
    from fit.targets import target_values

    _, runs, config, _ = load(args, fit.experiment)
    values = None
    if fit.point_target != "final":  # --validation, else the experiment's [eval] validation, else valid-calls
        from pipeline.fit import validation_of

        values = target_values(runs, benchmark=fit.benchmark, metric=fit.metric, target=fit.point_target,
                               validation=validation_of(config, getattr(args, "validation", None)))
    return diagnostics_lines(runs, fit.benchmark, fit.metric, values)
