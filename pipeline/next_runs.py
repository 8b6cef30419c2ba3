"""``toolscale next``'s registry edge: an :class:`allocator.models.AllocationQuery` (the allocation the decision is
about) -> the law's draws over candidate runs -> :class:`allocator.models.NextRuns`.

:func:`propose_next_runs` is what the CLI and the MCP ``next_runs`` tool call; the candidate space, cost book and
ensemble are :mod:`allocator.proposal`, the choice :func:`allocator.preposterior.select_runs`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from allocator.errors import AllocatorError, AllocatorUsageError
from allocator.models import AllocationQuery, NextRuns
from allocator.preposterior import select_runs
from allocator.proposal import candidate_space, cost_book, ensemble_of, next_runs_report, rival_plans
from grid import Registry
from pipeline.allocate import load_inputs, plan_allocation, resolve_experiment

__all__ = ["propose_next_runs", "check_fit_current", "MIN_DRAWS"]

MIN_DRAWS = 20
"""Law draws the criterion needs (a fit with fewer bootstrap draws is refused)."""


def _fit_command(experiment: str, benchmark: str) -> str:
    return f"toolscale fit --experiment {experiment} --benchmark {benchmark}"


def check_fit_current(reg: Registry, experiment: str | None, benchmark: str, fit_id: str | None = None) -> str:
    """The experiment to plan from, refusing one without a fit, whose newest fit (the stored fit ``fit_id``, when
    given) is stale, or that has fewer than :data:`MIN_DRAWS` bootstrap draws (naming the command to run).

    Stale: marked so by the registry (its data changed), or older than a run that finished after it
    (runs added since, e.g. by ``grid design --augment``, are not in it). ``fit_id`` names the experiment when
    ``experiment`` is None; an unknown id is :class:`grid.errors.UnknownNameError` (exit 2).
    """
    if fit_id is not None:
        row = reg.fit(fit_id)
        if row.benchmark != benchmark or experiment not in (None, row.experiment):
            raise AllocatorUsageError(f"fit {fit_id} is of {row.experiment}/{row.benchmark}, not of "
                                      f"{experiment or row.experiment}/{benchmark}")
        exp, which = row.experiment, "fit"
    else:
        if experiment is not None and not reg.fits(experiment, benchmark):
            known = {e.name for e in reg.experiments()}
            if experiment not in known:
                raise AllocatorUsageError(f"unknown experiment {experiment!r}; experiments: "
                                          f"{', '.join(sorted(known))}")
            raise AllocatorUsageError(f"experiment {experiment!r} has no fit for {benchmark!r}; run "
                                      f"`{_fit_command(experiment, benchmark)}` first")
        exp = resolve_experiment(reg, benchmark, experiment)
        row, which = reg.fits(exp, benchmark)[0], "newest fit"
    if row.stale_reason:
        raise AllocatorError(f"the {which} {row.fit_id} of {exp}/{benchmark} is stale ({row.stale_reason}); "
                             f"run `{_fit_command(exp, benchmark)}` first")
    newer = [r for r in reg.runs(exp, status="done") if r.finished_at is not None and row.created_at is not None
             and r.finished_at > row.created_at]
    if newer:
        raise AllocatorError(f"the {which} {row.fit_id} of {exp}/{benchmark} is stale: {len(newer)} run(s) "
                             f"finished after it; run `{_fit_command(exp, benchmark)}` first")
    draws = len(row.payload.get("bootstrap") or [])
    if draws < MIN_DRAWS:
        raise AllocatorError(f"the fit {row.fit_id} has {draws} draws; `toolscale next` re-weights the law's "
                             f"bootstrap draws and needs {MIN_DRAWS}; refit with `{_fit_command(exp, benchmark)} "
                             f"--bootstrap 200`")
    return exp


def _check_plans_differ(ens, report) -> None:
    """AllocatorUsageError when every draw scores every plan alike (a law without data axes, such as the form on
    N and D alone that ``--law auto`` may choose): no run can then narrow the gain or lower the regret."""
    if np.any(np.abs(ens.gains) > 1e-12) or not np.allclose(ens.scores, ens.scores[:, :1], rtol=0.0, atol=1e-12):
        return
    raise AllocatorUsageError(f"the fit {report.fit_id} ({report.law}) scores every plan alike in all its draws: the "
                              "law values no data axis, so no run can change this allocation under it; fit a law "
                              "with data axes (`toolscale fit --law LAW`, see `toolscale fit --list-laws`) first")


def propose_next_runs(query: AllocationQuery, *, runs: int, max_cost: float | None = None, sims: int = 128,
                      redraws: int = 30, seed: int = 0, progress: Callable[[str], None] | None = None) -> NextRuns:
    """Propose ``runs`` new runs that make the allocation of ``query`` surest per unit of cost (see
    :mod:`allocator.proposal`).

    The allocation is :func:`plan_allocation` of ``query`` at the experiment :func:`check_fit_current` accepts, not
    stored and without its own re-solved draws; ``redraws`` draws are re-solved here for the plans a refit could
    choose. Raises :class:`AllocatorUsageError` (exit 2, nothing stored) for ``runs < 1``, a ``max_cost`` that is
    not a positive number, or no candidate within it; :class:`AllocatorError` for a missing or stale fit (naming
    ``toolscale fit``), a budget below the cheapest plan, or a fit with fewer than :data:`MIN_DRAWS` draws.
    ``progress`` gets a line per stage and per run chosen.
    """
    if not isinstance(runs, int) or runs < 1:
        raise AllocatorUsageError(f"--runs must be a positive integer, got {runs}")
    if max_cost is not None and not (math.isfinite(max_cost) and max_cost > 0):
        raise AllocatorUsageError(f"--max-cost must be a positive number, got {max_cost:g}")
    say = progress or (lambda _msg: None)
    with Registry(query.registry, read_only=True) as reg:
        exp = check_fit_current(reg, query.experiment, query.benchmark, query.fit_id)
    query = query.model_copy(update={"experiment": exp, "redraws": 0})
    report = plan_allocation(query, save=False)
    with Registry(query.registry, read_only=True) as reg:
        ld = load_inputs(reg, query)
        all_runs = reg.runs(exp)
    plans = [report.plan.levels, report.baseline.levels]
    say(f"the allocation at {query.budget:g} now: gain {report.gain_over_baseline:+.4f}; re-solving "
        f"{min(redraws, len(ld.surface.draws))} draws for the plans a refit could choose")
    plans += rival_plans(ld.request, ld.surface, report.plan.levels, redraws)
    extra = [dict(r.recipe) for r in all_runs] + plans[:2]
    space = candidate_space(ld.config, ld.request.cost, extra)
    if space.size == 0:
        raise AllocatorUsageError("no candidate run: the design's constraints leave no recipe of the axes' levels")
    fitted_n = [r.model_params for r in all_runs
                if r.status == "done" and r.split == "fit" and r.model_params is not None]
    ens, point = ensemble_of(ld.surface, ld.fit, space, plans, ld.request.model_params, fitted_n)
    _check_plans_differ(ens, report)
    book = cost_book(space, all_runs)
    say(f"{space.size} candidate runs x {ens.n_draws} draws; choosing {runs}")
    try:
        sel = select_runs(ens, book, runs, max_cost=max_cost, sims=sims, seed=seed,
                          progress=lambda i: say(f"run {i} of {runs} chosen"))
    except ValueError as err:
        raise AllocatorUsageError(f"--max-cost {max_cost:g}: {err}; raise it or drop it") from None
    return next_runs_report(report, sel, space, ens, point, runs=runs, max_cost=max_cost, sims=sims,
                            compute_free=ld.config.cost.per_pflop <= 0)
