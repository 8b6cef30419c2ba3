"""The allocator's pure planning steps: a fit and a config -> the solver's request and surface.

:func:`build_request` bounds every axis and prices it (:data:`MAX_EXTRAPOLATION`), :func:`plan_target` picks the
model size N and tokens D a plan is for, :func:`make_surface` turns the fitted law and its draws into the score
callables the solver maximises (other law forms mixed in by :func:`form_weights`), :func:`noise_floor` is the SD
below which a gain is noise, and :func:`predict_from_fit` is ``predict``'s check-then-predict. Nothing here opens
the registry: that is :mod:`pipeline.allocate`, which calls these and :func:`allocator.solver.solve`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from allocator.errors import AllocatorUsageError
from allocator.models import AllocationRequest, AxisBounds, Budget
from allocator.solver import Surface
from fit.models import FitResult
from grid import cost_model_from_config, parse_count
from toolscale.config import ExperimentConfig, training_flops

__all__ = ["MAX_EXTRAPOLATION", "make_surface", "build_request", "form_weights", "Target", "plan_target",
           "predict_from_fit", "noise_floor", "MIN_REPLICATE_DOF"]

MAX_EXTRAPOLATION = 1.25
"""Default of ``[allocate] max_extrapolation``: no arm puts an axis above this multiple of its largest tested
level unless ``allocate --extrapolate`` allows more."""


def _score_fn(law: Any, params: dict[str, float], *, tokens: float, sign: float):
    def score(levels, n_params: float) -> np.ndarray:
        X = {k: np.atleast_1d(np.asarray(v, dtype=float)) for k, v in levels.items()}
        m = len(next(iter(X.values())))
        X.setdefault("N", np.full(m, float(n_params)))
        X.setdefault("D", np.full(m, float(tokens)))
        X.setdefault("C", training_flops(X["N"], X["D"]))
        return sign * np.asarray(law.predict(params, X), dtype=float).ravel()
    return score


def form_weights(fits: Sequence[FitResult]) -> dict[str, float]:
    """BIC weights of law forms fitted to the same points (:func:`fit.predict.bic_weights`)."""
    from fit import bic_weights

    return bic_weights({f.law: f.bic for f in fits})


def make_surface(fit: FitResult, *, tokens: float, others: Sequence[FitResult] = (),
                 axis_sd: dict[str, float] | None = None) -> Surface:
    """The fitted law and its draws as score callables, the other law forms' draws mixed in by weight.

    Inputs that are not data axes are filled from the plan's context: ``N`` is the
    planned model size, ``D`` the planned training tokens, ``C = 6 N D``. Loss laws
    are negated (the solver maximises). The forms mixed are the fit's own candidate
    forms (``fit.forms`` with their ``form_weight``, :func:`fit.predict.components`) or,
    for a fit stored without them, ``others``: fits of other law forms to the same points,
    weighted by :func:`form_weights`. Form ``k`` contributes ``round(w_k B)`` of its
    bootstrap draws (``B`` = the chosen fit's draw count; its point estimate, repeated, when
    it has none), so the intervals include law-form uncertainty as well as parameter uncertainty.
    The fit's ``effect_sd`` (rung CV) widens the gain intervals of plans above the fitted sizes
    (:func:`allocator.solver.with_effect_error`). The surface also carries one run's prediction error, as
    ``predict`` adds it: the fit's residual SD, its extrapolation SD per decade of N, and ``axis_sd`` per
    doubling past each axis's tested maximum (:func:`allocator.extrapolation.axis_extrapolation_sd`).
    """
    from fit import law_of
    from fit import components

    sign = -1.0 if fit.target == "loss" else 1.0
    law = law_of(fit)
    score = _score_fn(law, dict(fit.params), tokens=tokens, sign=sign)
    if fit.forms:
        comps = components(fit, law)
    else:
        forms = [fit] + [o for o in others if o.law != fit.law]
        weights = form_weights(forms)
        comps = [(f, law if f is fit else law_of(f), weights[f.law]) for f in forms]
    effect = {"effect_sd": fit.effect_sd or 0.0, "max_fitted_n": fit.max_fitted_n,
              "max_compared_n": fit.max_compared_n,
              "noise_sd": fit.residual_sd, "noise_log": fit.residual_scale == "log",
              "extrapolation_sd": fit.extrapolation_sd or 0.0, "axis_sd": dict(axis_sd or {})}
    if len(comps) <= 1 or not fit.bootstrap:
        return Surface(score=score, draws=[_score_fn(law, d, tokens=tokens, sign=sign) for d in fit.bootstrap],
                       labels=[fit.law] * len(fit.bootstrap), **effect)
    total = len(fit.bootstrap)
    draws, labels = [], []
    for f, flaw, w in comps:
        pool = f.draws()  # bootstrap draws, or the point estimate of a form fitted without them
        for i in range(int(round(w * total))):
            draws.append(_score_fn(flaw, pool[i % len(pool)], tokens=tokens, sign=sign))
            labels.append(f.law)
    return Surface(score=score, draws=draws, labels=labels, **effect)


def predict_from_fit(fit: FitResult, points: Sequence[dict[str, float]], *, fit_id: str | None = None,
                     units: dict[str, str] | None = None, level: float = 0.90) -> Any:
    """``predict``'s :class:`fit.models.Prediction` of ``points`` (inputs by law name), each checked against the
    law's inputs and their domains first (:func:`fit.predict.check_point`)."""
    from fit import check_point, predict_at

    for i, p in enumerate(points):
        check_point(fit, p, units=units, label=f"#{i + 1}")
    return predict_at(fit, points, level=level, max_fitted_flops=fit.max_fitted_flops, fit_id=fit_id)


def build_request(config: ExperimentConfig, *, budget: Budget, benchmark: str, model_params: float,
                  fitted_ranges: dict[str, tuple[float, float]] | None = None, starts: int = 12,
                  max_extrapolation: float | None = None) -> AllocationRequest:
    """Bounds per axis and the cost model.

    An axis may go from its tested minimum to ``max_extrapolation`` (default: the config's
    ``[allocate] max_extrapolation``, 1.25) times its tested maximum, and no further than 1 for a fraction;
    each bound says why (``AxisBounds.cap``). Every config axis is in the request; axes the law does not use
    add cost and no score, so the solver leaves them at their lower bound.
    """
    if budget.unit != config.experiment.budget_unit:
        raise AllocatorUsageError(f"--unit {budget.unit} does not match the experiment's cost unit "
                                  f"{config.experiment.budget_unit}; costs are not converted")
    factor = config.allocate.max_extrapolation if max_extrapolation is None else max_extrapolation
    flag = ("allocate --extrapolate" if max_extrapolation is not None else
            "[allocate] max_extrapolation; allocate --extrapolate X allows more")
    bounds = []
    for a in config.axes:
        tested = (fitted_ranges or {}).get(a.name)
        lo, hi = tested or (a.min, a.max)
        upper, cap = hi * factor, (f"{factor:g} x its largest tested level {hi:g} ({flag})" if tested else
                                   f"{factor:g} x the config's max {hi:g} (no tested levels)")
        if a.unit == "fraction" and upper > 1.0:
            upper, cap = 1.0, "a fraction: at most 1"
        bounds.append(AxisBounds(name=a.name, kind=a.kind, unit=a.unit, lower=lo, upper=max(upper, hi),
                                 fitted_min=lo, fitted_max=hi, log=a.spacing == "log" and lo > 0,
                                 baseline=min(max(a.baseline_level, lo), hi), integer=a.integer, cap=cap))
    return AllocationRequest(budget=budget, benchmark=benchmark, model_params=model_params, axes=bounds,
                             cost=cost_model_from_config(config), starts=starts)


@dataclass(frozen=True)
class Target:
    """The model size and token count a plan is for, and where each came from (printed with every plan)."""

    n: float
    d: float
    n_source: str
    d_source: str


def _rung_target(config: ExperimentConfig, size, why: str) -> Target:
    """N per ``design.param_count``; D at the design's largest tokens-per-parameter multiple, else the rung's
    planned tokens (steps x batch x sequence length)."""
    n = size.counted_params(config.design.param_count)
    tpp = config.design.tokens_per_param
    if tpp:
        return Target(n, max(tpp) * n, f"{why} (rung {size.name!r}, {config.design.param_count} parameters)",
                      f"the design's largest tokens per parameter ({max(tpp):g} x N)")
    return Target(n, size.planned_tokens, f"{why} (rung {size.name!r})",
                  f"the planned tokens of rung {size.name!r} ({size.max_steps} steps x batch {size.batch_size} x "
                  f"{size.max_seq_len} tokens)")


def _count(text: str, flag: str) -> float:
    """A count such as ``1.4e9``, ``70M``, ``1.4B`` or ``300B``; AllocatorUsageError naming ``flag`` otherwise."""
    try:
        x = parse_count(text)
    except ValueError:
        x = math.nan
    if not math.isfinite(x) or x <= 0:
        raise AllocatorUsageError(f"{flag} must be a positive count (1.4e9, 70M, 300B), got {text!r}")
    return x


def plan_target(config: ExperimentConfig, model_size: str | None, *, tokens: str | float | None = None,
                tokens_per_param: float | None = None, imported: bool = False) -> Target:
    """The N and D to plan at: ``--model-size`` (a ladder rung or a count such as ``1.4e9`` or ``1.4B``), else
    the config's target rung; ``--tokens`` or ``--tokens-per-param`` override D. With imported runs and no
    ladder both are required: nothing in the runs says which model the plan is for."""
    if tokens is not None and tokens_per_param is not None:
        raise AllocatorUsageError("give --tokens or --tokens-per-param, not both")
    if tokens_per_param is not None and not (math.isfinite(tokens_per_param) and tokens_per_param > 0):
        raise AllocatorUsageError(f"--tokens-per-param must be a positive number, got {tokens_per_param}")
    if imported and not config.ladder and (model_size is None or (tokens is None and tokens_per_param is None)):
        raise AllocatorUsageError("the experiment holds imported runs and the config has no [[ladder]]: pass "
                                  "--model-size N (e.g. 1.4B) and --tokens D (e.g. 300B) or --tokens-per-param R "
                                  "for the model the plan is for")
    if model_size is None:
        target = _rung_target(config, config.target_size, "the config's target size")
    elif model_size in {m.name for m in config.ladder}:
        target = _rung_target(config, config.model_size(model_size), "--model-size")
    else:
        if config.ladder and not (model_size[:1].isdigit() or model_size[:1] == "."):
            config.model_size(model_size)  # an unknown rung: ConfigError naming the known ones
        n = _count(model_size, "--model-size")
        if tokens is None and tokens_per_param is None:
            if not config.ladder:
                raise AllocatorUsageError(f"--model-size {model_size}: give the training tokens too (--tokens D or "
                                          "--tokens-per-param R); the config has no [[ladder]] to take them from")
            rung = _rung_target(config, config.target_size, "")
            target = Target(n, rung.d, "--model-size", rung.d_source.replace("x N", "x the target rung's N"))
        else:
            target = Target(n, math.nan, "--model-size", "")
    if tokens is not None:
        target = Target(target.n, _count(str(tokens), "--tokens"), target.n_source, "--tokens")
    elif tokens_per_param is not None:
        target = Target(target.n, tokens_per_param * target.n, target.n_source,
                        f"--tokens-per-param ({tokens_per_param:g} x N)")
    return target


MIN_REPLICATE_DOF = 10
"""Degrees of freedom a replicate SD needs before it is the noise floor of a decision (below: the residual SD)."""


def noise_floor(fit: FitResult) -> tuple[float | None, str]:
    """``(sd, label)``: the SD of one run's score below which a gain is noise, in the fit's residual units.

    The pooled SD between replicated seeds when it rests on at least :data:`MIN_REPLICATE_DOF`
    degrees of freedom; else the fit's residual SD (it includes any lack of fit, so it is the
    more cautious floor), and the label says which.
    """
    dof = fit.lack_of_fit.df_pure if fit.lack_of_fit is not None else 0
    if fit.replicate_sd is not None and dof >= MIN_REPLICATE_DOF:
        return fit.replicate_sd, "seed-to-seed SD"
    why = f"{dof} replicate degrees of freedom" if fit.replicate_sd is not None else "no replicated seeds"
    return fit.residual_sd, f"residual SD ({why})"
