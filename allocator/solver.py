"""The equal-budget allocation: maximise the predicted score subject to total cost <= budget.

Pure: ``solve(request, surface) -> AllocationPlan``. ``surface`` is the fitted law as
callables (see :class:`Surface`); the cost model travels in the request.

Method: each axis' level is mapped from ``u`` in [0, 1] (log or linear between its
bounds); SLSQP maximises the score under the budget constraint from several starts
(the cheapest plan, an equal-spend plan, seeded random plans shrunk into the
budget, and any warm starts given), keeping the best feasible point. The KKT
conditions are then checked: at an optimum with a binding budget, every interior
axis returns the same score per unit of budget (``dS/dx_i / dC/dx_i = lambda``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import minimize

from allocator.errors import AllocatorError
from allocator.models import AllocationPlan, AllocationRequest, AxisBounds, Decision, Optimality, Plan

__all__ = ["Surface", "ScoreFn", "solve", "solve_levels", "round_integers", "make_plan", "check_optimality",
           "min_cost", "score_at", "decide", "equal_spend_levels", "percentile_interval", "with_effect_error",
           "predictive_scores", "versus_observed", "beats_observed"]

ScoreFn = Callable[[Mapping[str, np.ndarray], float], np.ndarray]
"""``score(levels, model_params) -> predicted scores``, vectorised: ``levels`` maps each axis to an
array of m levels and the result has shape (m,) (higher is better)."""


@dataclass(frozen=True)
class Surface:
    """A fitted law as callables: the point estimate and its draws (bootstrap, possibly over several law forms).

    ``labels[i]`` names the law form of ``draws[i]`` (empty: unnamed); ``own`` is how the
    law was chosen, for a baseline surface. ``effect_sd`` is the relative error of a predicted
    gain per decade of model size above ``max_compared_n`` (the fit's rung CV,
    :attr:`fit.models.FitResult.effect_sd`; 0: gain intervals carry the draws only), the largest fitted rung
    (:attr:`fit.models.FitResult.max_compared_n`; None: ``max_fitted_n``).

    The prediction error of one run, as ``predict`` adds it: ``noise_sd`` (the fit's residual SD; log units
    when ``noise_log``, multiplicative), ``extrapolation_sd`` per decade of N above ``max_fitted_n``, and
    ``axis_sd[a]`` per doubling of axis ``a`` past its tested maximum.
    """

    score: ScoreFn
    draws: Sequence[ScoreFn] = field(default_factory=tuple)
    labels: Sequence[str] = field(default_factory=tuple)
    own: str = ""
    effect_sd: float = 0.0
    max_fitted_n: float | None = None
    max_compared_n: float | None = None
    noise_sd: float = 0.0
    noise_log: bool = False
    extrapolation_sd: float = 0.0
    axis_sd: Mapping[str, float] = field(default_factory=dict)


def _to_level(b: AxisBounds, u: np.ndarray) -> np.ndarray:
    """Level(s) at position(s) ``u`` in [0, 1] of the axis' range (log or linear); not clipped."""
    if b.log and b.lower > 0:
        return np.exp(math.log(b.lower) + u * (math.log(b.upper) - math.log(b.lower)))
    return b.lower + u * (b.upper - b.lower)


def _to_u(b: AxisBounds, level: float) -> float:
    if b.upper == b.lower:
        return 0.0
    if b.log and b.lower > 0:
        return (math.log(level) - math.log(b.lower)) / (math.log(b.upper) - math.log(b.lower))
    return (level - b.lower) / (b.upper - b.lower)


def _levels(axes: Sequence[AxisBounds], U: np.ndarray, fixed: Mapping[str, float]) -> dict[str, np.ndarray]:
    """Levels of every axis for each row of ``U`` (m x free axes); fixed axes broadcast."""
    U = np.atleast_2d(U)
    free = [a for a in axes if a.name not in fixed]
    out = {a.name: _to_level(a, U[:, i]) for i, a in enumerate(free)}
    out.update({k: np.full(U.shape[0], float(v)) for k, v in fixed.items()})
    return out


def _point(levels: Mapping[str, np.ndarray]) -> dict[str, float]:
    return {k: float(np.asarray(v).ravel()[0]) for k, v in levels.items()}


def score_at(score: ScoreFn, levels: Mapping[str, float], model_params: float) -> float:
    """The score of one plan (scalar levels)."""
    return float(np.asarray(score({k: np.array([v]) for k, v in levels.items()}, model_params)).ravel()[0])


def _lowest(a: AxisBounds) -> float:
    """The smallest level a plan may take: the lower bound, rounded up for integer axes."""
    return float(math.ceil(a.lower - 1e-9)) if a.integer else a.lower


def min_cost(request: AllocationRequest, fixed: Mapping[str, float] | None = None) -> float:
    """Cost of the cheapest plan (every free axis at its lowest feasible level), in the budget unit."""
    fixed = dict(fixed or {})
    levels = {a.name: fixed.get(a.name, _lowest(a)) for a in request.axes}
    return request.cost.total(levels, request.model_params)


def _costs(request: AllocationRequest, U: np.ndarray, fixed: Mapping[str, float]) -> np.ndarray:
    spend = request.cost.spend(_levels(request.axes, U, fixed), request.model_params)
    return np.sum(np.vstack(list(spend.values())), axis=0)


def _shrink_into_budget(request: AllocationRequest, u: np.ndarray, fixed: Mapping[str, float]) -> np.ndarray:
    """Scale ``u`` toward 0 until the plan fits the budget (vectorised bisection on the scale)."""
    budget = request.budget.value
    if _costs(request, u, fixed)[0] <= budget:
        return u
    scales = np.linspace(0.0, 1.0, 257)
    ok = _costs(request, scales[:, None] * u[None, :], fixed) <= budget
    lo = scales[ok].max() if ok.any() else 0.0
    hi = min(lo + 1 / 256, 1.0)
    for _ in range(20):
        mid = (lo + hi) / 2
        if _costs(request, u * mid, fixed)[0] <= budget:
            lo = mid
        else:
            hi = mid
    return u * lo


_H = 1e-6  # forward-difference step in u (axis ranges are mapped to [0, 1])


def solve_levels(request: AllocationRequest, score: ScoreFn, *, fixed: Mapping[str, float] | None = None,
                 warm: Sequence[Mapping[str, float]] = (), starts: int | None = None) -> dict[str, float]:
    """Best feasible levels of the free axes (those not in ``fixed``) for ``score``.

    Value and gradient come from one vectorised call per SLSQP step (k + 1 points:
    the iterate and a forward step along each free axis).
    """
    fixed = dict(fixed or {})
    free = [a for a in request.axes if a.name not in fixed]
    budget, n_params = request.budget.value, request.model_params
    if min_cost(request, fixed) > budget * (1 + 1e-12):
        raise AllocatorError(f"budget {request.budget} is below the cheapest feasible plan "
                             f"({min_cost(request, fixed):,.2f} {request.budget.unit}: every axis at its lowest level)")
    if not free:
        return dict(fixed)
    k = len(free)
    steps = np.vstack([np.zeros(k), _H * np.eye(k)])

    def value_grad(u: np.ndarray) -> tuple[float, np.ndarray]:
        s = np.asarray(score(_levels(request.axes, u[None, :] + steps, fixed), n_params), dtype=float)
        return -s[0], -(s[1:] - s[0]) / _H

    def slack(u: np.ndarray) -> float:
        return (budget - _costs(request, u, fixed)[0]) / budget

    def slack_grad(u: np.ndarray) -> np.ndarray:
        c = _costs(request, u[None, :] + steps, fixed)
        return -(c[1:] - c[0]) / _H / budget

    rng = np.random.default_rng(request.seed)
    candidates = [np.clip([_to_u(a, w.get(a.name, a.lower)) for a in free], 0, 1) for w in warm]
    if starts is None or starts > 0:
        candidates += [np.zeros(k), np.ones(k)]
        candidates += [rng.uniform(0, 1, k) for _ in range(request.starts if starts is None else starts)]
    best_u, best_val = None, -math.inf
    for u0 in candidates:
        u0 = _shrink_into_budget(request, np.asarray(u0, dtype=float), fixed)
        res = minimize(value_grad, u0, jac=True, method="SLSQP", bounds=[(0.0, 1.0)] * k,
                       constraints=[{"type": "ineq", "fun": slack, "jac": slack_grad}],
                       options={"maxiter": 200, "ftol": 1e-12})
        for u in (u0, _shrink_into_budget(request, np.clip(res.x, 0, 1), fixed)):
            val = -value_grad(u)[0]
            if slack(u) >= -1e-12 and val > best_val:
                best_u, best_val = u, val
    return _point(_levels(request.axes, _snap(best_u, slack), fixed))


_SNAP = 1e-9
"""Positions this close to an end of an axis' range are that end: SLSQP's 1.9e-18 of a coverage quota
is no quota (and a plan equal to another up to such dust gets the same recipe, dataset and seed)."""


def _snap(u: np.ndarray, slack: Callable[[np.ndarray], float]) -> np.ndarray:
    """``u`` with entries within :data:`_SNAP` of 0 set to 0, and of 1 set to 1 when that stays within budget."""
    out = np.where(u < _SNAP, 0.0, u)
    up = np.where(out > 1.0 - _SNAP, 1.0, out)
    return up if slack(up) >= -1e-12 else out


def make_plan(request: AllocationRequest, levels: Mapping[str, float], score: ScoreFn) -> Plan:
    """Levels, spend per axis, total cost and predicted score as a :class:`Plan`."""
    spend = request.cost.spend(levels, request.model_params)
    return Plan(levels=dict(levels), spend=spend, total_cost=float(sum(spend.values())),
                predicted_score=score_at(score, levels, request.model_params))


def _marginals(request: AllocationRequest, levels: Mapping[str, float], score: ScoreFn) -> dict[str, float]:
    """Score points per budget unit of a small spend increase on each axis (forward difference)."""
    out = {}
    base_s, base_c = score_at(score, levels, request.model_params), request.cost.total(levels, request.model_params)
    for a in request.axes:
        step = max(abs(levels[a.name]) * 1e-4, (a.upper - a.lower) * 1e-6, 1e-9)
        bumped = {**levels, a.name: levels[a.name] + step}
        dc = request.cost.total(bumped, request.model_params) - base_c
        ds = score_at(score, bumped, request.model_params) - base_s
        out[a.name] = ds / dc if dc > 0 else math.inf if ds > 0 else 0.0
    return out


def check_optimality(request: AllocationRequest, levels: Mapping[str, float], score: ScoreFn,
                     tol: float = 0.05) -> Optimality:
    """KKT check: interior axes share one marginal value; lower-bound axes are worth less, upper-bound more."""
    marg = _marginals(request, levels, score)
    interior, at_bound = [], {}
    for a in request.axes:
        u = _to_u(a, levels[a.name])
        if u <= 1e-4:
            at_bound[a.name] = "lower: the next unit is worth less than elsewhere"
        elif u >= 1 - 1e-4:
            at_bound[a.name] = "upper: capped by its allowed range"
        else:
            interior.append(a.name)
    binding = request.cost.total(levels, request.model_params) >= request.budget.value * (1 - 1e-3)
    vals = [marg[n] for n in interior if math.isfinite(marg[n])]
    gap = 0.0
    if len(vals) >= 2:
        scale = max(abs(float(np.mean(vals))), 1e-12)
        gap = (max(vals) - min(vals)) / scale
    lam = float(np.mean(vals)) if vals else None
    ok = gap <= tol
    if lam is not None and binding:
        for name, why in at_bound.items():
            if why.startswith("lower") and marg[name] > lam * (1 + tol) + 1e-12:
                ok = False
    return Optimality(marginal_per_cost=marg, interior=interior, at_bound=at_bound, max_relative_gap=gap,
                      budget_binding=binding, ok=ok)


def _extrapolation(request: AllocationRequest, levels: Mapping[str, float]) -> dict[str, float]:
    out = {}
    for a in request.axes:
        x = levels[a.name]
        if x > a.fitted_max * (1 + 1e-6):
            out[a.name] = x / a.fitted_max if a.fitted_max else math.inf
        elif x < a.fitted_min * (1 - 1e-6):
            out[a.name] = a.fitted_min / x if x else math.inf
    return out


def percentile_interval(values: Sequence[float]) -> tuple[float, float] | None:
    """5th-95th percentile of ``values`` (a 90% interval), or None when empty."""
    if not values:
        return None
    lo, hi = np.percentile(np.asarray(values, dtype=float), [5, 95])
    return float(lo), float(hi)


def round_integers(request: AllocationRequest, levels: Mapping[str, float], score: ScoreFn, *,
                   fixed: Mapping[str, float] | None = None) -> dict[str, float]:
    """The best plan whose integer axes are integers, within the budget.

    Branch and bound in the small: integer axes are rounded one at a time, coarsest first
    (smallest level, where rounding moves the most budget); each gets its floor and its
    ceiling (clipped to its bounds), and after each choice every axis not yet fixed is
    re-solved (one SLSQP run warm-started from the previous solution), so the budget a
    rounding frees or takes moves to the other axes. Branches over budget are dropped, so
    rounding never overspends; the best-scoring leaf wins (at most ``2^k`` leaves for
    ``k`` integer axes). Without a feasible leaf the cheapest integer plan is returned.
    """
    fixed = dict(fixed or {})
    ints = sorted((a for a in request.axes if a.integer and a.name not in fixed), key=lambda a: levels[a.name])
    if not ints:
        return dict(levels)
    budget, n = request.budget.value, request.model_params

    def branch(lv: Mapping[str, float], fix: dict[str, float], i: int) -> tuple[float, dict[str, float] | None]:
        if i == len(ints):
            if request.cost.total(lv, n) > budget * (1 + 1e-9):
                return -math.inf, None
            return score_at(score, lv, n), dict(lv)
        a = ints[i]
        lo, hi = _lowest(a), float(math.floor(a.upper + 1e-9))
        x = lv[a.name]
        best: tuple[float, dict[str, float] | None] = (-math.inf, None)
        for v in sorted({min(max(float(c), lo), hi) for c in (math.floor(x + 1e-9), math.ceil(x - 1e-9))}):
            nfix = {**fix, a.name: v}
            if min_cost(request, nfix) > budget * (1 + 1e-12):
                continue
            nlv = solve_levels(request, score, fixed=nfix, warm=[lv], starts=0)
            got = branch(nlv, nfix, i + 1)
            if got[0] > best[0]:
                best = got
        return best

    _, out = branch(levels, fixed, 0)
    if out is None:
        fix = {**fixed, **{a.name: _lowest(a) for a in ints}}
        out = solve_levels(request, score, fixed=fix, warm=[levels], starts=0)
    return out


def equal_spend_levels(request: AllocationRequest) -> dict[str, float]:
    """The equal-spend plan: every axis with a cost gets the same share ``s`` of the budget.

    ``level_i = free_i + s / (per_unit_i * x_j)`` (``x_j`` the level of ``scales_with``, set
    first), clipped to the axis' bounds, integers rounded down; ``s`` is the largest share
    (bisection, 60 steps) whose plan fits the budget. Axes without a cost stay at their lowest level.
    """
    costs = {c.name: c for c in request.cost.axes}
    costed = sorted((a for a in request.axes if a.name in costs and costs[a.name].per_unit > 0),
                    key=lambda a: costs[a.name].scales_with is not None)
    budget, n = request.budget.value, request.model_params

    def levels_at(share: float) -> dict[str, float]:
        lv = {a.name: _lowest(a) for a in request.axes}
        for a in costed:
            c = costs[a.name]
            scale = lv[c.scales_with] if c.scales_with else 1.0
            x = c.free_level + share / (c.per_unit * max(scale, 1e-12))
            x = min(max(x, _lowest(a)), a.upper)
            lv[a.name] = max(float(math.floor(x + 1e-9)), _lowest(a)) if a.integer else x
        return lv

    if min_cost(request) > budget * (1 + 1e-12):
        raise AllocatorError(f"budget {request.budget} is below the cheapest feasible plan "
                             f"({min_cost(request):,.2f} {request.budget.unit}: every axis at its lowest level)")
    lo, hi = 0.0, budget
    for _ in range(60):
        mid = (lo + hi) / 2
        if request.cost.total(levels_at(mid), n) <= budget:
            lo = mid
        else:
            hi = mid
    return levels_at(lo)


def _differing_axes(request: AllocationRequest, a: Mapping[str, float], b: Mapping[str, float]) -> list[str]:
    """Axes whose levels differ by more than 1% of their allowed range."""
    out = []
    for ax in request.axes:
        span = max(ax.upper - ax.lower, 1e-12)
        if abs(a[ax.name] - b[ax.name]) > 0.01 * span:
            out.append(ax.name)
    return out


def decide(gain: float, gain_interval: tuple[float, float] | None, replicate_sd: float | None,
           differing: Sequence[str], noise_label: str = "seed-to-seed SD") -> Decision:
    """``recommend`` when the gain is resolved, else ``no_decision`` naming why and the axes that tie.

    No decision when the gain's 90% interval contains 0, when the gain is below the
    seed-to-seed SD of a single run (``replicate_sd``), or when the plans do not differ.
    """
    reasons = []
    if not differing:
        reasons.append("the plan and the diversity-only plan are the same")
    if gain_interval is not None and gain_interval[0] <= 0.0:
        reasons.append(f"the gain's 90% interval [{gain_interval[0]:+.4f}, {gain_interval[1]:+.4f}] "
                       + ("contains 0" if gain_interval[1] >= 0 else "is below 0"))
    if replicate_sd is not None and gain < replicate_sd:
        reasons.append(f"the gain {gain:+.4f} is below the {noise_label} {replicate_sd:.4f}")
    if gain_interval is None and gain <= 0.0:
        reasons.append(f"the gain {gain:+.4f} is not positive")
    if reasons:
        return Decision(verdict="no_decision", reason="no decision at this budget: " + "; ".join(reasons),
                        tied_axes=list(differing))
    iv = f" (90% interval [{gain_interval[0]:+.4f}, {gain_interval[1]:+.4f}])" if gain_interval else ""
    sd = f", above the {noise_label} {replicate_sd:.4f}" if replicate_sd is not None else ""
    return Decision(verdict="recommend", reason=f"gain {gain:+.4f} over the diversity-only plan{iv}{sd}")


def versus_observed(request: AllocationRequest, surface: Surface, levels: Mapping[str, float],
                    observed: tuple[Mapping[str, float], str] | None) -> dict[str, Any]:
    """The plan against the best recipe observed at the largest fitted rung, both scored by the plan's law:
    the :class:`AllocationPlan` fields ``best_observed``, ``best_observed_source``, ``best_observed_interval``,
    ``gain_over_best_observed`` and ``best_observed_gain_interval`` (empty without such a recipe)."""
    if observed is None:
        return {}
    obs_levels, source = observed
    full = {a.name: float(obs_levels.get(a.name, a.baseline if a.kind == "quality" else a.lower))
            for a in request.axes}
    plan = make_plan(request, full, surface.score)
    n = request.model_params
    gain = score_at(surface.score, levels, n) - plan.predicted_score
    return {"best_observed": plan, "best_observed_source": source, "gain_over_best_observed": gain,
            "best_observed_interval": percentile_interval([score_at(d, full, n) for d in surface.draws]),
            "best_observed_gain_interval": percentile_interval(_gains(surface, levels, full, n))}


def beats_observed(decision: Decision, fields: Mapping[str, Any]) -> Decision:
    """``decision``, turned into ``no_decision`` when the plan does not beat the best observed recipe: its gain
    over it is not positive, or its 90% interval reaches 0 (the law cannot tell them apart)."""
    if not fields:
        return decision
    gain, iv = fields["gain_over_best_observed"], fields["best_observed_gain_interval"]
    if gain > 0 and (iv is None or iv[0] > 0):
        return decision
    ivs = f", 90% interval [{iv[0]:+.4f}, {iv[1]:+.4f}]" if iv else ""
    why = (f"the plan does not beat {fields['best_observed_source']} (gain {gain:+.4f}{ivs})")
    if decision.verdict == "no_decision":
        return decision.model_copy(update={"reason": decision.reason + "; " + why})
    return Decision(verdict="no_decision", reason="no decision at this budget: " + why)


def _gains(surface: Surface, a: Mapping[str, float], b: Mapping[str, float], n: float) -> list[float]:
    return with_effect_error([score_at(d, a, n) - score_at(d, b, n) for d in surface.draws], surface, n)


def with_effect_error(gains: Sequence[float], surface: Surface, n: float, *, seed: int = 0) -> list[float]:
    """Gain draws scaled by ``1 + effect_sd x decades x z``, ``z`` standard normal (fixed seed).

    ``decades = max(0, log10(n / max_compared_n))``: a plan for a fitted rung keeps its draws; one for a
    size above them carries the error the rung CV measured in the law's differences between runs. A lone run
    at a larger size does not remove it: it fits one recipe's level there, not the differences.
    """
    top = surface.max_compared_n or surface.max_fitted_n
    if not gains or not surface.effect_sd or not top:
        return list(gains)
    decades = max(0.0, math.log10(n / top))
    z = np.random.default_rng(seed).standard_normal(len(gains))
    return [float(g) for g in np.asarray(gains, dtype=float) * (1.0 + surface.effect_sd * decades * z)]


def _arm_error(surface: Surface, request: AllocationRequest, levels: Mapping[str, float], values: np.ndarray,
               rng: np.random.Generator, *, with_n: bool, with_noise: bool = True) -> np.ndarray:
    """One run's prediction error at ``levels`` for each draw's ``values`` (score units): a run's noise (unless
    ``with_noise`` is False: the error of the expected score), the extrapolation error past each axis's tested
    maximum and, with ``with_n``, above the fitted model sizes. Log-scale errors (a loss, a small positive
    score) are multiplicative."""
    var = surface.noise_sd ** 2 if with_noise else 0.0
    for a in request.axes:
        sd = surface.axis_sd.get(a.name)
        x = levels.get(a.name, 0.0)
        if sd and a.fitted_max > 0 and x > a.fitted_max:
            var += (sd * math.log2(x / a.fitted_max)) ** 2
    if with_n and surface.extrapolation_sd and surface.max_fitted_n:
        var += (surface.extrapolation_sd * max(0.0, math.log10(request.model_params / surface.max_fitted_n))) ** 2
    eps = rng.normal(0.0, math.sqrt(var), size=values.shape) if var > 0 else np.zeros_like(values)
    return values * np.expm1(eps) if surface.noise_log else eps


def predictive_scores(surface: Surface, request: AllocationRequest, levels: Mapping[str, float],
                values: Sequence[float], rng: np.random.Generator) -> list[float]:
    """``values`` (one score per draw at ``levels``) plus one run's prediction error each (:func:`_arm_error`)."""
    v = np.asarray(values, dtype=float)
    return list(v + _arm_error(surface, request, levels, v, rng, with_n=True)) if v.size else []


def _predictive_gains(surface: Surface, request: AllocationRequest, a: Mapping[str, float],
                      b: Mapping[str, float], rng: np.random.Generator) -> tuple[list[float], list[float]]:
    """``(predictive, expected)`` gains of ``a`` over ``b`` per draw: each draw's gain (scaled by the rung CV's
    error of differences) plus each arm's own error at its own levels: its extrapolation past an axis's tested
    maximum (both), and a run's noise (the predictive gains: one run of each plan). The error above the fitted
    sizes is common to both arms at one N and cancels."""
    n = request.model_params
    pa = np.array([score_at(d, a, n) for d in surface.draws])
    pb = np.array([score_at(d, b, n) for d in surface.draws])
    if not pa.size:
        return [], []
    g = np.asarray(with_effect_error(list(pa - pb), surface, n), dtype=float)
    ext = (_arm_error(surface, request, a, pa, rng, with_n=False, with_noise=False)
           - _arm_error(surface, request, b, pb, rng, with_n=False, with_noise=False))
    noise = (_arm_error(surface, request, {}, pa, rng, with_n=False)
             - _arm_error(surface, request, {}, pb, rng, with_n=False))  # no levels: the noise alone
    return [float(x) for x in g + ext + noise], [float(x) for x in g + ext]


def _caps(request: AllocationRequest, levels: Mapping[str, float]) -> dict[str, str]:
    """Axes at their upper limit, with the limit and why."""
    out = {}
    for a in request.axes:
        top = math.floor(a.upper + 1e-9) if a.integer else a.upper
        if a.upper > a.lower and levels[a.name] >= top - 1e-6 * max(abs(top), 1.0):
            out[a.name] = f"{a.upper:g} {a.unit}" + (f" ({a.cap})" if a.cap else "")
    return out


def solve(request: AllocationRequest, surface: Surface, *, baseline_surface: Surface | None = None,
          replicate_sd: float | None = None, replicate_log: bool = False,
          noise_label: str = "seed-to-seed SD", redraws: int = 30,
          warm: Sequence[Mapping[str, float]] = (),
          observed: tuple[Mapping[str, float], str] | None = None) -> AllocationPlan:
    """The recommended plan, the diversity-only baseline, the quality-pinned comparison, their uncertainty.

    Parameters
    ----------
    surface : the plan's law (point estimate and draws); it scores every plan.
    baseline_surface : a law over the diversity axes alone; the baseline is its optimum at the same
        budget with quality at baseline (None: the baseline is the quality-pinned plan).
    replicate_sd : seed-to-seed SD of one run's score, the noise floor of a decision.
    noise_label : what ``replicate_sd`` is, in the decision's words.
    replicate_log : ``replicate_sd`` is in log units (a fit on log residuals); it is converted to score
        points at the baseline's predicted score (delta method: ``sd_y = y sd_log``).
    redraws : draws re-solved (warm-started from the point solution) for the spread of spend per axis and
        the plan's regret: per draw, its own continuous optimum's score minus its score of the plan.
    observed : ``(levels, source)`` of the best recipe observed at the largest fitted rung
        (:func:`allocator.baseline.best_observed`); the plan must beat it, else no decision.

    Integer axes are rounded to feasible integers within the budget (:func:`round_integers`);
    the optimality check is of the continuous optimum.
    """
    n = request.model_params
    continuous = solve_levels(request, surface.score, warm=warm)
    levels = round_integers(request, continuous, surface.score)
    plan = make_plan(request, levels, surface.score)
    fixed = {a.name: a.baseline for a in request.axes if a.kind == "quality"}
    pinned_levels = round_integers(request, solve_levels(request, surface.score, fixed=fixed), surface.score,
                                   fixed=fixed)
    pinned = make_plan(request, pinned_levels, surface.score)
    if baseline_surface is not None:
        own = solve_levels(request, baseline_surface.score, fixed=fixed)
        base_levels = round_integers(request, own, baseline_surface.score, fixed=fixed)
        baseline = make_plan(request, base_levels, surface.score)
        own_pred = score_at(baseline_surface.score, base_levels, n)
        method = baseline_surface.own or "a law over the diversity axes alone"
    else:
        base_levels, baseline, own_pred = pinned_levels, pinned, None
        method = "same law, quality pinned at baseline"
    rng = np.random.default_rng(request.seed + 1)
    plan_draws = [score_at(d, levels, n) for d in surface.draws]
    base_draws = [score_at(d, base_levels, n) for d in surface.draws]
    gains, mean_gains = _predictive_gains(surface, request, levels, base_levels, rng)
    pinned_gains, _ = _predictive_gains(surface, request, levels, pinned_levels, rng)
    spreads: dict[str, list[float]] = {}
    regrets: list[float] = []
    for d in list(surface.draws)[:redraws]:
        lv = solve_levels(request, d, warm=[continuous], starts=0)
        for k, v in request.cost.spend(lv, n).items():
            spreads.setdefault(k, []).append(float(v))
        regrets.append(max(0.0, score_at(d, lv, n) - score_at(d, levels, n)))
    extra = _extrapolation(request, levels)
    vs_obs = versus_observed(request, surface, levels, observed)
    gain = plan.predicted_score - baseline.predicted_score
    gain_iv = percentile_interval(gains)
    mean_iv = percentile_interval(mean_gains)
    if replicate_sd is not None and replicate_log:
        replicate_sd = replicate_sd * abs(baseline.predicted_score)
    labels = list(surface.labels)
    weights = ({k: labels.count(k) / len(labels) for k in sorted(set(labels))} if labels and surface.draws
               else {})
    return AllocationPlan(
        budget=request.budget, benchmark=request.benchmark, model_params=n, plan=plan,
        interval=percentile_interval(predictive_scores(surface, request, levels, plan_draws, rng)),
        spend_spread={k: percentile_interval(v) for k, v in spreads.items()},
        regret_interval=percentile_interval(regrets), expected_regret=float(np.mean(regrets)) if regrets else None,
        baseline=baseline, baseline_method=method, baseline_own_prediction=own_pred,
        baseline_interval=percentile_interval(predictive_scores(surface, request, base_levels, base_draws, rng)),
        gain_over_baseline=gain, gain_interval=gain_iv, expected_gain_interval=mean_iv,
        p_beats_baseline=float(np.mean([g > 0 for g in gains])) if gains else None,
        pinned=pinned, gain_over_pinned=plan.predicted_score - pinned.predicted_score,
        pinned_gain_interval=percentile_interval(pinned_gains),
        decision=beats_observed(decide(gain, mean_iv, replicate_sd, _differing_axes(request, levels, base_levels),
                                       noise_label), vs_obs), **vs_obs,
        replicate_sd=replicate_sd, marginal_value=_marginals(request, levels, surface.score),
        optimality=check_optimality(request, continuous, surface.score), extrapolation=bool(extra),
        extrapolation_detail=extra, draws_used=len(surface.draws), law_weights=weights,
        unspent=max(0.0, request.budget.value - plan.total_cost), caps=_caps(request, levels),
        baseline_extrapolation=_extrapolation(request, base_levels),
        pinned_extrapolation=_extrapolation(request, pinned_levels),
        axis_extrapolation_sd={k: float(v) for k, v in surface.axis_sd.items() if v is not None})
