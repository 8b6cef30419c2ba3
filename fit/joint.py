"""One law over several domains: shared exponents, per-domain constants (``fit --experiments A,B``).

The research plan's cross-domain replication asks whether a second domain's quality axis (the code
agents' ``spec_dependency``) "enters the same law framework". This module fits one form ``F`` to the
runs of several experiments at once. Every domain keeps its own constants (``E``, ``A``, ``B``, ``U0``,
``R*``, its axes' multipliers) and its own normalisation of the inputs; the **exponents** that every
domain's law has (``alpha`` of N, ``beta`` of D, ``rho`` / ``gamma`` of an axis both domains have, by
name: ``tool_diversity``, ``task_count``) are **shared**. Each point knows its domain (the ``domain``
input), and the joint law evaluates that domain's law with the shared exponents.

Whether sharing costs fit quality is read two ways, on the same runs:

- **BIC** of the joint fit against the separate fits taken together, both from one Gaussian likelihood
  of the pooled residuals (``BIC = k ln n - 2 ll``); the likelihood-ratio statistic
  ``n log(RSS_joint / RSS_separate)`` with its asymptotic chi-square p-value is reported beside it;
- **held-out error** of each domain under its own fit and under the joint fit (MAE over the mean held-out
  value, the held-out runs being each experiment's stored split).

Separately, whether each shared exponent *agrees* across domains is whether the domains' own bootstrap
intervals overlap.

The joint fit starts from the separate optima (shared exponents from each domain's value and their
mean), so it is never worse-started than the separate fits; it uses the generic fitter
(:func:`fit.fitting.fit_law`) and its bootstrap.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from fit.errors import FitInputError
from fit.fitting import fit_law
from fit.holdout import seed_mean_error
from fit.laws import Law
from fit.models import DomainFit, FitResult, JointFit, LawInput, ParamInterval, Points, SharedExponent
from fit.optimize import residuals

__all__ = ["DomainRuns", "is_exponent", "joint_law", "joint_points", "fit_joint", "DOMAIN_INPUT"]

DOMAIN_INPUT = "domain"
"""Name of the input holding each point's domain index (0, 1, ... in the order given)."""


class DomainRuns:
    """One domain's data and its own fit: the experiment, its law (specialised to its axes) and points."""

    def __init__(self, experiment: str, benchmark: str, law: Law, points: Points, fit: FitResult, chosen: str):
        self.experiment, self.benchmark, self.law, self.points, self.fit, self.chosen = (
            experiment, benchmark, law, points, fit, chosen)


def is_exponent(name: str) -> bool:
    """Exponent parameters (shared across domains when every domain's law has them)."""
    return name in ("alpha", "beta", "gamma") or name.startswith(("alpha_", "beta_", "gamma_", "rho_", "delta_"))


def _neutral(inp: LawInput) -> float:
    """A value of ``inp`` that keeps another domain's law finite on points without that input."""
    if inp.kind == "quality":
        return inp.lo
    return inp.ref


def joint_points(domains: Sequence[DomainRuns]) -> Points:
    """The domains' points in one set, with the ``domain`` input; inputs a domain lacks get neutral values."""
    names: list[str] = []
    for d in domains:
        names += [i.name for i in d.law.inputs if i.name not in names]
    cols: dict[str, list[float]] = {n: [] for n in [*names, DOMAIN_INPUT]}
    y, split, run_ids, groups, flops = [], [], [], [], []
    for k, d in enumerate(domains):
        p = d.points
        own = {i.name: i for i in d.law.inputs}
        other = {i.name: i for dd in domains for i in dd.law.inputs}
        for n in names:
            cols[n] += list(p.inputs[n]) if n in own else [_neutral(other[n])] * p.n
        cols[DOMAIN_INPUT] += [float(k)] * p.n
        y += list(p.y)
        split += list(p.split_array())
        run_ids += [f"{d.experiment}:{r}" for r in (p.run_ids or [str(i) for i in range(p.n)])]
        groups += [f"{d.experiment}:{g}" for g in (p.groups or [""] * p.n)]
        flops += list(p.flops) if p.flops else [math.nan] * p.n
    return Points(inputs=cols, y=y, target=domains[0].points.target, run_ids=run_ids, split=split, groups=groups,
                  flops=flops if all(math.isfinite(f) for f in flops) else [],
                  experiment="+".join(d.experiment for d in domains), benchmark="+".join(d.benchmark for d in domains),
                  metric=domains[0].points.metric)


def _starts(values: Sequence[float], bounds: tuple[float, float]) -> tuple[float, ...]:
    lo, hi = bounds
    vals = [min(max(float(v), lo), hi) for v in values]
    vals.append(float(np.mean(vals)))
    return tuple(sorted(set(vals)))


def joint_law(domains: Sequence[DomainRuns], shared: Sequence[str]) -> Law:
    """The law over every domain's points: domain ``k``'s law, with the ``shared`` exponents in common and
    ``param@experiment`` for the rest; started from each domain's own optimum."""
    shared = list(shared)
    names: list[str] = list(shared)
    bounds: dict[str, tuple[float, float]] = {}
    grid: dict[str, tuple[float, ...]] = {}
    logs: set[str] = set()
    first = domains[0].law
    for p in shared:
        bounds[p] = first.bounds[p]
        grid[p] = _starts([d.fit.params[p] for d in domains], first.bounds[p])
        if p in first.log_params:
            logs.add(p)
    own: list[list[tuple[str, str]]] = []
    for d in domains:
        pairs = [(p, f"{p}@{d.experiment}") for p in d.law.param_names if p not in shared]
        own.append(pairs)
        for p, q in pairs:
            names.append(q)
            bounds[q] = d.law.bounds[p]
            grid[q] = _starts([d.fit.params[p]], d.law.bounds[p])[:1]
            if p in d.law.log_params:
                logs.add(q)
    inputs: list[LawInput] = []
    for d in domains:
        inputs += [i for i in d.law.inputs if i.name not in {x.name for x in inputs}]
    inputs.append(LawInput(name=DOMAIN_INPUT, kind="metric"))
    laws = [d.law for d in domains]

    def fn(p: Mapping[str, Any], X: Mapping[str, np.ndarray]) -> np.ndarray:
        dom = X[DOMAIN_INPUT]
        out: Any = 0.0
        with np.errstate(all="ignore"):  # each law also sees the other domains' points (not selected)
            for k, law in enumerate(laws):
                params = {q: p[q] for q in shared} | {a: p[b] for a, b in own[k]}
                out = np.where(dom == k, law.fn(params, X), out)
        return out

    formula = (f"{first.formula}; per domain (experiment): its own " +
               ", ".join(sorted({p for pairs in own for p, _ in pairs})) + "; shared: " + ", ".join(shared))
    return Law(name=f"joint:{first.name}", target=first.target, inputs=tuple(inputs), param_names=tuple(names),
               bounds=bounds, start_grid=grid, fn=fn, log_params=frozenset(logs), formula=formula,
               huber_delta=first.huber_delta, residual_scale=first.residual_scale, residual_unit=first.residual_unit)


def _rel_mae(law: Law, params: Mapping[str, float], pts: Points) -> float | None:
    """Held-out error as a single fit states it (``heldout_relative_mae``): the absolute relative error on seed
    means (:func:`fit.holdout.seed_mean_error`), per run when the runs carry no recipe groups."""
    if pts.n == 0:
        return None
    pred = law.predict(params, pts.X())
    are, _ = seed_mean_error(pts.y_array(), pred, pts.groups or [str(i) for i in range(pts.n)])
    return are


def _rss(law: Law, params: Mapping[str, float], pts: Points) -> float:
    r = residuals(law, pts.y_array(), law.predict(params, pts.X())) * law.residual_unit
    return float((r * r).sum())


def _bic(rss: float, n: int, k: int) -> float:
    ll = -0.5 * n * (math.log(2 * math.pi * max(rss / n, 1e-300)) + 1.0)
    return k * math.log(n) - 2 * ll


def _interval(fit: FitResult, name: str) -> ParamInterval:
    got = fit.intervals.get(name)
    return got if got is not None else ParamInterval(estimate=float(fit.params[name]), lo=float(fit.params[name]),
                                                     hi=float(fit.params[name]), se=0.0, level=0.95)


def fit_joint(domains: Sequence[DomainRuns], *, n_bootstrap: int = 0, n_starts: int = 8, seed: int = 0,
              n_jobs: int | None = None) -> JointFit:
    """Fit the joint law to ``domains`` (each already fitted on its own with the same form) and compare.

    Raises :class:`~fit.errors.FitInputError` when fewer than two domains are given, when their forms or
    targets differ, or when no exponent is common to all.
    """
    if len(domains) < 2:
        raise FitInputError("a cross-domain fit needs at least two experiments")
    forms = {d.fit.law for d in domains}
    if len(forms) > 1:
        raise FitInputError(f"every domain must be fitted with one form; got {', '.join(sorted(forms))}")
    if len({d.points.target for d in domains}) > 1:
        raise FitInputError("the experiments' metrics differ in kind (a loss and a score); fit one kind")
    shared = [p for p in domains[0].law.param_names
              if is_exponent(p) and all(p in d.law.param_names for d in domains[1:])]
    if not shared:
        raise FitInputError(f"law {domains[0].fit.law!r} has no exponent every experiment's law shares")
    # each domain's own residual scale (a loss: log) is the joint one's
    laws = [replace(d.law, residual_scale=d.fit.residual_scale, residual_unit=d.fit.residual_unit) for d in domains]
    domains = [DomainRuns(d.experiment, d.benchmark, law, d.points, d.fit, d.chosen) for d, law in zip(domains, laws)]
    law = joint_law(domains, shared)
    pts = joint_points(domains)
    jfit = fit_law(pts, law, n_bootstrap=n_bootstrap, n_starts=n_starts, seed=seed, n_jobs=n_jobs,
                   holdout_rule="split", holdout_source="each experiment's stored split")
    fitted = [d.points.subset(d.points.split_array() == "fit") for d in domains]
    held = [d.points.subset(d.points.split_array() == "heldout") for d in domains]
    n = sum(f.n for f in fitted)
    rss_sep = sum(_rss(d.law, d.fit.params, f) for d, f in zip(domains, fitted))
    k_sep = sum(d.fit.n_params for d in domains)
    k_joint = jfit.n_params
    rss_joint = _rss(law, jfit.params, pts.subset(pts.split_array() == "fit"))
    bic_sep, bic_joint = _bic(rss_sep, n, k_sep), _bic(rss_joint, n, k_joint)
    lr = n * math.log(max(rss_joint, 1e-300) / max(rss_sep, 1e-300))
    from scipy.stats import chi2

    dof = k_sep - k_joint
    lr_p = float(chi2.sf(max(lr, 0.0), dof)) if dof > 0 else None
    out_domains = []
    for k, (d, f, h) in enumerate(zip(domains, fitted, held)):
        params_k = _domain_params(jfit.params, shared, d)
        rss_k = _rss(d.law, params_k, f)
        k_eff = (len(d.law.param_names) - len(shared)) + len(shared) * f.n / n
        ext = None
        if h.n and f.flops and h.flops:
            ext = max(h.flops) / max(f.flops)
        out_domains.append(DomainFit(
            experiment=d.experiment, benchmark=d.benchmark, chosen_law=d.chosen, n_fit=f.n, n_heldout=h.n,
            n_params_separate=d.fit.n_params, residual_sd_separate=d.fit.residual_sd,
            residual_sd_joint=math.sqrt(rss_k / max(f.n - k_eff, 1.0)),
            heldout_relative_mae_separate=_rel_mae(d.law, d.fit.params, h),
            heldout_relative_mae_joint=_rel_mae(d.law, params_k, h), extrapolation_factor=ext,
            params_separate=dict(d.fit.params)))
    exps = []
    for p in shared:
        sep = {d.experiment: _interval(d.fit, p) for d in domains}
        has = all(p in d.fit.intervals for d in domains)
        agree = (max(i.lo for i in sep.values()) <= min(i.hi for i in sep.values())) if has else None
        exps.append(SharedExponent(name=p, separate=sep, joint=_interval(jfit, p), agree=agree))
    own = sorted({q.split("@")[0] for q in law.param_names if "@" in q})
    return JointFit(experiments=[d.experiment for d in domains], law=domains[0].fit.law,
                    metric=", ".join(f"{d.experiment}: {d.benchmark}" for d in domains), shared=shared,
                    domain_params=own, n_points=n, k_separate=k_sep, k_joint=k_joint, bic_separate=bic_sep,
                    bic_joint=bic_joint, delta_bic=bic_joint - bic_sep, lr_stat=lr, lr_p=lr_p,
                    domains=out_domains, exponents=exps, verdict=_verdict(bic_joint - bic_sep, out_domains),
                    joint_params=dict(jfit.params), converged=jfit.converged)


def _domain_params(params: Mapping[str, float], shared: Sequence[str], d: DomainRuns) -> dict[str, float]:
    return {p: params[p] if p in shared else params[f"{p}@{d.experiment}"] for p in d.law.param_names}


def _verdict(delta_bic: float, domains: Sequence[DomainFit]) -> str:
    bic = ("sharing the exponents is preferred by BIC" if delta_bic < 0 else
           "sharing the exponents costs fit quality by BIC")
    parts = []
    for d in domains:
        a, b = d.heldout_relative_mae_separate, d.heldout_relative_mae_joint
        if a is not None and b is not None:
            parts.append(f"{d.experiment} held-out error {a:.1%} alone, {b:.1%} shared")
    return f"{bic} (delta BIC {delta_bic:+.1f})" + (f"; {'; '.join(parts)}" if parts else "")
