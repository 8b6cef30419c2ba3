"""allocate's registry edge: one :class:`allocator.models.AllocationQuery` -> the stored fit, the config and the runs
-> the solver -> an :class:`allocator.models.AllocationReport`, stored back when asked.

:func:`plan_allocation` is what ``allocate``, ``verify``, ``fit report --sweep``, ``next`` and the MCP ``allocate``
tool call, with the query each builds at its boundary; everything past reading is pure
(:mod:`allocator.planning` builds the request and the surface, :func:`allocator.solver.solve` plans). The helpers
that read the registry (:func:`resolve_experiment`, :func:`load_fit`, :func:`config_for`, :func:`other_forms`,
:func:`benchmarks_with_fits`) live here too: ``fit``'s edge (:mod:`pipeline.fit`) and the MCP tools use them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from allocator.errors import AllocatorError, AllocatorUsageError
from allocator.models import AllocationQuery, AllocationReport, AllocationRequest, Budget, Plan
from allocator.planning import Target, build_request, make_surface, noise_floor, plan_target
from allocator.solver import Surface, solve
from fit.models import FitResult
from grid import Registry
from grid.models import RunRecord
from toolscale.config import ExperimentConfig, parse_config

__all__ = ["plan_allocation", "equal_spend_plan", "size_extrapolation", "AllocationInputs", "load_inputs", "named_experiment", "resolve_experiment",
           "load_fit", "config_for", "other_forms", "benchmarks_with_fits"]


def benchmarks_with_fits(reg: Registry, experiment: str | None = None) -> dict[str, list[str]]:
    """``{benchmark: [experiments with a fit]}``."""
    out: dict[str, list[str]] = {}
    for f in reg.fits(experiment):
        exps = out.setdefault(f.benchmark, [])
        if f.experiment not in exps:
            exps.append(f.experiment)
    return out


def resolve_experiment(reg: Registry, benchmark: str, experiment: str | None) -> str:
    """The experiment to plan from: the one given, or the only one with a fit for ``benchmark``."""
    fitted = benchmarks_with_fits(reg)
    if benchmark not in fitted:
        known = ", ".join(sorted(fitted)) or "none (run `toolscale fit` first)"
        raise AllocatorUsageError(f"no fit for benchmark {benchmark!r}; benchmarks with fits: {known}")
    if experiment is not None:
        if experiment not in fitted[benchmark]:
            raise AllocatorUsageError(f"experiment {experiment!r} has no fit for {benchmark!r}; experiments "
                                      f"with one: {', '.join(fitted[benchmark])}")
        return experiment
    if len(fitted[benchmark]) > 1:
        raise AllocatorUsageError(f"several experiments have fits for {benchmark!r} "
                                  f"({', '.join(fitted[benchmark])}); pass --experiment")
    return fitted[benchmark][0]


def load_fit(reg: Registry, experiment: str, benchmark: str, law: str | None = None,
             fit_id: str | None = None) -> tuple[str, FitResult]:
    """The stored fit ``fit_id``, else the newest (of ``law``): ``(fit_id, FitResult)``; refuses stale fits and
    fits that did not converge."""
    if fit_id is not None:
        row = reg.fit(fit_id)
        if row.experiment != experiment or row.benchmark != benchmark:
            raise AllocatorUsageError(f"fit {fit_id} is of {row.experiment}/{row.benchmark}, not of "
                                      f"{experiment}/{benchmark}")
        rows = [row]
    else:
        rows = [f for f in reg.fits(experiment, benchmark) if law is None or f.law == law]
    if not rows:
        raise AllocatorUsageError(f"no fit of law {law!r} for {experiment}/{benchmark}; laws fitted: "
                                  f"{', '.join(sorted({f.law for f in reg.fits(experiment, benchmark)}))}")
    row = rows[0]
    if row.stale_reason:
        raise AllocatorError(f"the newest {row.law} fit {row.fit_id} for {experiment}/{benchmark} is stale: "
                             f"{row.stale_reason}; refit (toolscale fit --experiment {experiment} --benchmark "
                             f"{benchmark}) before allocating")
    fit = FitResult.model_validate(row.payload)
    if not fit.converged:
        raise AllocatorError(f"the newest {fit.law} fit for {experiment}/{benchmark} did not converge "
                             f"({fit.message or 'no message'}); refit before allocating")
    return row.fit_id, fit


def config_for(reg: Registry, experiment: str, config: ExperimentConfig | None) -> ExperimentConfig:
    """The config given, else the one stored with the experiment by `grid design` / `simulate`."""
    if config is not None:
        return config
    stored = reg.experiment(experiment).config
    if not stored:
        raise AllocatorUsageError(f"experiment {experiment!r} has no stored config (imported runs?); "
                                  "pass --config CONFIG for its axes and cost model")
    return parse_config(stored, source=f"registry config of {experiment}")


def other_forms(reg: Registry, experiment: str, benchmark: str, fit: FitResult) -> list[FitResult]:
    """The newest converged fit of every other law form on the same points (same data hash and metric)."""
    seen, out = {fit.law}, []
    for row in reg.fits(experiment, benchmark):
        if (row.law in seen or row.stale_reason or not row.converged or row.data_hash != fit.data_hash
                or row.metric != fit.metric):
            continue
        seen.add(row.law)
        out.append(FitResult.model_validate(row.payload))
    return out


def _fitted_ranges(reg: Registry, experiment: str) -> dict[str, tuple[float, float]]:
    """``{axis: (lowest, highest)}`` level of the experiment's done fit runs (axes with one level left out)."""
    runs = reg.runs(experiment, status="done", split="fit")
    ranges: dict[str, tuple[float, float]] = {}
    for r in runs:
        for k, v in r.recipe.items():
            lo, hi = ranges.get(k, (math.inf, -math.inf))
            ranges[k] = (min(lo, v), max(hi, v))
    return {k: v for k, v in ranges.items() if v[1] > v[0]}


@dataclass(frozen=True)
class AllocationInputs:
    """What an allocation reads from the registry: the fit, the config, the request and the surfaces."""

    experiment: str
    fit_id: str
    fit: FitResult
    config: ExperimentConfig
    request: AllocationRequest
    surface: Surface
    target: Target
    fitted_runs: list[RunRecord]
    max_extrapolation: float

    @property
    def tokens(self) -> float:
        """Training tokens D planned for."""
        return self.target.d


def named_experiment(reg: Registry, experiment: str | None, fit_id: str | None) -> str | None:
    """The experiment given, else the one the stored fit ``fit_id`` is of, else None (the only one with a fit)."""
    return experiment or (reg.fit(fit_id).experiment if fit_id else None)


def load_inputs(reg: Registry, query: AllocationQuery) -> AllocationInputs:
    """The fit, config, request and surface of ``query`` read from the open registry ``reg``."""
    exp = resolve_experiment(reg, query.benchmark, named_experiment(reg, query.experiment, query.fit_id))
    fit_id, fit = load_fit(reg, exp, query.benchmark, query.law, query.fit_id)
    cfg = config_for(reg, exp, query.config)
    ranges = _fitted_ranges(reg, exp)
    others = other_forms(reg, exp, query.benchmark, fit) if query.mix_forms and query.law is None else []
    target = plan_target(cfg, query.model_size, tokens=query.tokens, tokens_per_param=query.tokens_per_param,
                         imported=reg.experiment_kind(exp) == "imported")
    if not math.isfinite(target.d):
        raise AllocatorUsageError("give the training tokens the plan is for: --tokens D or --tokens-per-param R")
    b = Budget(value=query.budget, unit=query.unit or cfg.experiment.budget_unit)
    factor = cfg.allocate.max_extrapolation if query.extrapolate is None else query.extrapolate
    request = build_request(cfg, budget=b, benchmark=query.benchmark, model_params=target.n, fitted_ranges=ranges,
                            max_extrapolation=query.extrapolate)
    if query.draws is not None:
        fit = fit.model_copy(update={"bootstrap": fit.bootstrap[:query.draws]})
        others = [o.model_copy(update={"bootstrap": o.bootstrap[:query.draws]}) for o in others]
    return AllocationInputs(experiment=exp, fit_id=fit_id, fit=fit, config=cfg, request=request,
                            surface=make_surface(fit, tokens=target.d, others=others,
                                                 axis_sd=fit.axis_extrapolation_sd),
                            target=target, fitted_runs=reg.runs(exp, status="done", split="fit"),
                            max_extrapolation=factor)


def _observed(ld: AllocationInputs, benchmark: str) -> tuple[dict[str, float], str] | None:
    """The best recipe observed at the largest fitted rung within the budget (:func:`allocator.baseline.best_observed`),
    valued by the fit's own target (the early-stopped envelope when the fit used it)."""
    from allocator.baseline import best_observed
    from fit import target_values
    from toolscale.errors import UsageError

    values = None
    if ld.fit.point_target != "final":
        try:
            values = target_values(ld.fitted_runs, benchmark=benchmark, metric=ld.fit.metric,
                                   target=ld.fit.point_target, validation=ld.config.eval.validation or "valid-calls")
        except UsageError:  # runs without checkpoints: their stored values
            values = None
    return best_observed(ld.fitted_runs, ld.config, key=f"{benchmark}/{ld.fit.metric}",
                         lower_is_better=ld.fit.target == "loss", cost=ld.request.cost,
                         budget=ld.request.budget.value, model_params=ld.request.model_params, values=values)


def plan_allocation(query: AllocationQuery, *, save: bool = True, warm: Sequence[dict] = ()) -> AllocationReport:
    """Load the fit, solve, store the plan (``save``; the registry is opened read-only otherwise); the
    :class:`AllocationReport` (plan, experiment, fit id, law, metric).

    The baseline is the fair diversity-only plan (:mod:`allocator.baseline`); with ``query.mix_forms`` the
    intervals mix in the other law forms stored for the same points. ``warm``: levels to start the solver from
    (a sweep's previous plan).
    """
    from allocator.baseline import diversity_only_law
    from allocator.next_history import earlier_proposal

    benchmark, budget = query.benchmark, query.budget
    with Registry(query.registry, read_only=not save) as reg:
        ld = load_inputs(reg, query)
        base_surface, base_method = diversity_only_law(ld.fitted_runs, ld.config, benchmark=benchmark,
                                                       metric=ld.fit.metric, tokens=ld.tokens,
                                                       target=ld.fit.target, law_name=ld.fit.law)
        noise, label = noise_floor(ld.fit)
        plan = solve(ld.request, ld.surface, baseline_surface=base_surface, replicate_sd=noise,
                     replicate_log=ld.fit.residual_scale == "log", noise_label=label, redraws=query.redraws,
                     warm=warm, observed=_observed(ld, benchmark))
        if base_surface is None:
            plan = plan.model_copy(update={"baseline_method": base_method})
        earlier = earlier_proposal(reg, ld.experiment, benchmark, budget, ld.fit_id)  # `toolscale next`'s runs
        allocation_id = None
        if save:  # the plan, and the N and D it is for (the report draws one model's plans as a line)
            allocation_id = reg.save_allocation(
                experiment=ld.experiment, benchmark=benchmark, budget=budget, unit=ld.request.budget.unit,
                fit_id=ld.fit_id, payload={**plan.model_dump(mode="json"), "tokens": ld.target.d,
                                           "model_source": ld.target.n_source, "tokens_source": ld.target.d_source})
    return AllocationReport(**{**dict(plan), "max_extrapolation": ld.max_extrapolation}, experiment=ld.experiment,
                            law=ld.fit.law, fit_id=ld.fit_id, metric=ld.fit.metric, target=ld.fit.target,
                            simulated=ld.fit.simulated, allocation_id=allocation_id, tokens=ld.target.d,
                            model_source=ld.target.n_source, tokens_source=ld.target.d_source, earlier=earlier,
                            size_extrapolation=size_extrapolation(ld.fit, ld.request.model_params, ld.target.d))


def size_extrapolation(fit: FitResult, n: float, d: float | None) -> dict[str, float]:
    """``N`` and ``D`` of a plan outside the fitted runs' range (:func:`fit.beyond_fitted`): a plan for a model
    far smaller or larger than any fitted one is an extrapolation the reader must see."""
    from fit import beyond_fitted

    return beyond_fitted(fit, {"N": n, **({"D": d} if d else {})})


def equal_spend_plan(query: AllocationQuery) -> tuple[Plan, tuple[float, float] | None]:
    """The equal-spend plan at ``query.budget`` (:func:`allocator.solver.equal_spend_levels`), scored by the
    same law as :func:`plan_allocation` of the same query, with its 90% interval over the draws (read-only)."""
    from allocator.solver import equal_spend_levels, make_plan, percentile_interval, predictive_scores, score_at

    with Registry(query.registry, read_only=True) as reg:
        ld = load_inputs(reg, query)
    levels = equal_spend_levels(ld.request)
    plan = make_plan(ld.request, levels, ld.surface.score)
    draws = [score_at(d, levels, ld.request.model_params) for d in ld.surface.draws]
    rng = np.random.default_rng(ld.request.seed + 1)
    return plan, percentile_interval(predictive_scores(ld.surface, ld.request, levels, draws, rng))
