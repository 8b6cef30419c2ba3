"""The preposterior criterion of ``toolscale next``: which runs make the allocation decision surest per unit of cost.

Pure (numpy in, numpy out). The law's uncertainty arrives as its draws (:class:`Ensemble`: the
bootstrap draws, other law forms mixed in by weight, exactly those behind ``allocate``'s intervals).

Criterion
---------
A batch ``S`` of new runs is judged by what the allocation's uncertainty is expected to be once their
results are in::

    U(S) = E[W | S] / W_0 + E[R | S] / R_0

``W`` is the width of the 90% interval of the gain (plan minus the fair baseline) and ``R`` the expected
regret of the plan one would then choose; ``W_0`` and ``R_0`` are their values now, so ``U = 2`` before
any run (the regret term is left out when ``R_0`` is 0). The expectation is *preposterior*: simulation
``s`` takes draw ``t_s`` as the truth and draws the runs' results ``y_sc = f_{t_s}(x_c) + sqrt(v_c) e_sc``
(``v_c``: the fit's residual variance, plus its extrapolation error above the fitted sizes); every
draw ``b`` is then weighted by the likelihood of those results::

    w_b ∝ prod_{c in S} exp(-(y_sc - f_b(x_c))^2 / (2 v_c)),      w_{t_s} = 0   (the truth is left out)

``W`` is then the width the gain's 90% interval would have (below).
The regret after the results is ``sum_b w_b best_b - max_p sum_b w_b V_bp``: the plan ``p`` chosen is
the one best on average over the re-weighted draws, ``V_bp`` is draw ``b``'s score of plan ``p`` (the
plan, the baseline and the optima of re-solved draws) and ``best_b = max_p V_bp``. The noise ``e`` is
drawn once (common random numbers), so two batches are compared on the same simulated outcomes.

Few draws, tempered weights. A handful of runs can put nearly all the weight on a few of the ``B``
draws, and any average over a few draws looks sure: a weighted percentile of 4 draws is narrow, and
the regret of 1 draw is 0, whatever the runs told about the gain. Such an expectation rewards runs
that are informative about anything. So the weights are tempered, ``w_b ∝ L_b^tau`` with the largest
``tau <= 1`` that keeps the effective sample size ``1 / sum w^2`` at least ``min(30, B / 4)``, and the
width is not read from the weights at all: it is the linear-Gaussian (ensemble Kalman) posterior
width of the gain, ``2 x 1.645 x sqrt(var(g | S) + effect_sd^2 x decades^2 x E[g^2])``, whose
``var(g | S)`` does not depend on the results. A plan above the fitted sizes has its gains scaled by
``1 + effect_sd x decades x z_b`` as ``allocate`` does (:func:`allocator.solver.with_effect_error`),
with ``decades`` counted from the largest fitted rung (a size with 3+ fitted runs), or a size where the
batch's runs make one: three runs at the plan's own size remove that term, a lone run does not. The benchmark (``benchmarks/next_runs.py``) measured the untempered
weighted percentile 4.1x narrower than the refit's interval (median of 7 truths, K = 12).

Selection
---------
Greedy: one run at a time, the candidate with the largest drop of ``U`` per unit of its cost (a
cost floor of 1e-3 of the median cost keeps free runs first). The preposterior is evaluated on a
screened shortlist: the candidates that a linear-Gaussian (ensemble Kalman) approximation of the same
two terms ranks highest per unit of cost, plus the best few of every cell (rung x token multiple).
The approximation only screens; each choice is made by the preposterior criterion. The ensemble is
updated after each choice (serial ensemble square-root filter, Whitaker & Hamill 2002), so the
screen sees what the runs already chosen will tell.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Ensemble", "CostBook", "Step", "Selection", "select_runs", "weighted_measures", "effect_gains",
           "tempered", "gaussian_width"]


@dataclass(frozen=True)
class Ensemble:
    """The law's draws as arrays (``B`` draws, ``P`` plans, ``C`` candidate runs).

    ``gains`` (B,): each draw's gain of the plan over the baseline, score points, before the effect error.
    ``scores`` (B, P): each draw's score of each plan; column 0 is the plan, the best column per row is ``best_b``.
    ``preds`` (B, C): each draw's prediction of each candidate run, on the fit's residual scale.
    ``noise_var`` (C,): variance of one run's result around a draw's prediction (same scale).
    ``cand_n`` (C,): model size N of each candidate. ``target_n``: N the allocation plans for.
    ``effect_sd``, ``max_fitted_n``, ``z`` (B,): the effect error (``allocate``'s; ``z`` its normals), counted in
    decades above the largest fitted rung ``max_compared_n`` (None: ``max_fitted_n``). A candidate's size becomes
    a rung once ``rung_runs`` runs are fitted there: ``sparse_runs`` (N -> runs) are those the fit already has at
    sizes that are not rungs yet, and the batch adds its own.
    """

    gains: np.ndarray
    scores: np.ndarray
    preds: np.ndarray
    noise_var: np.ndarray
    cand_n: np.ndarray
    target_n: float
    effect_sd: float = 0.0
    max_fitted_n: float | None = None
    z: np.ndarray | None = None
    max_compared_n: float | None = None
    sparse_runs: dict[float, int] = field(default_factory=dict)
    rung_runs: int = 1

    @property
    def n_draws(self) -> int:
        """B."""
        return int(self.gains.shape[0])


def _decades(ens: Ensemble, max_n: np.ndarray) -> np.ndarray:
    """Decades of the effect error's extrapolation for largest fitted sizes ``max_n`` (0 where there is none)."""
    top = ens.max_compared_n or ens.max_fitted_n
    if not ens.effect_sd or not top or ens.z is None:
        return np.zeros_like(max_n, dtype=float)
    return np.maximum(0.0, np.log10(ens.target_n / np.maximum(max_n, top)))


def effect_gains(ens: Ensemble, max_n: np.ndarray | float) -> np.ndarray:
    """Gains with the effect error for a largest fitted size ``max_n`` (shape ``(L,)`` -> ``(L, B)``)."""
    m = np.atleast_1d(np.asarray(max_n, dtype=float))
    g = np.broadcast_to(ens.gains, (m.size, ens.n_draws))
    if ens.z is None:
        return np.array(g)
    return g * (1.0 + ens.effect_sd * _decades(ens, m)[:, None] * ens.z[None, :])


def gaussian_width(ens: Ensemble, var_g: np.ndarray, max_n: np.ndarray | float) -> np.ndarray:
    """The 90% gain-interval width of a Gaussian gain with variance ``var_g`` (shape (L,)), plus the effect error
    for largest sizes ``max_n``: ``2 x 1.645 x sqrt(var_g + effect_sd^2 x decades^2 x E[g^2])``, ``E[g^2]``
    over the draws (score points)."""
    dec = _decades(ens, np.atleast_1d(np.asarray(max_n, dtype=float)))
    g2 = float(np.mean(ens.gains * ens.gains))
    return 2 * 1.645 * np.sqrt(np.maximum(var_g, 0.0) + (ens.effect_sd * dec) ** 2 * g2)


def _ess(logw: np.ndarray) -> np.ndarray:
    """Effective sample size ``1 / sum w^2`` of log weights (last axis)."""
    w = np.exp(logw - logw.max(axis=-1, keepdims=True))
    w /= w.sum(axis=-1, keepdims=True)
    return 1.0 / (w * w).sum(axis=-1)


def tempered(logw: np.ndarray, ess_min: float, iters: int = 20) -> np.ndarray:
    """``tau x logw`` with, per row of the last axis, the largest ``tau`` in (0, 1] whose weights keep an effective
    sample size of at least ``ess_min`` (bisection; rows already above it are returned as they are). ``-inf``
    entries (draws left out) stay left out."""
    finite = np.where(np.isfinite(logw), logw, 0.0)
    out = np.array(logw, dtype=float)
    low = _ess(logw) < ess_min
    if not low.any():
        return out
    lo = np.zeros(low.sum())
    hi = np.ones(low.sum())
    base, keep = finite[low], np.isfinite(logw[low])
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        ok = _ess(np.where(keep, mid[:, None] * base, -np.inf)) >= ess_min
        lo, hi = np.where(ok, mid, lo), np.where(ok, hi, mid)
    out[low] = np.where(keep, lo[:, None] * base, -np.inf)
    return out


def weighted_measures(logw: np.ndarray, gains: np.ndarray, scores: np.ndarray, best: np.ndarray
                      ) -> dict[str, np.ndarray]:
    """Regret, resolved share and effective sample size of re-weighted draws (the width is not read from the
    weights: :func:`gaussian_width`).

    ``logw`` (L, M, B): log weights per batch ``l`` and simulation ``m``; ``gains`` (L, B); ``scores``
    (B, P); ``best`` (B,). Returns arrays of shape (L,) averaged over simulations: ``regret``
    (``sum w best - max_p sum w V_p``), ``p_resolved`` (share of simulations whose weighted 5th percentile of
    the gains is above 0) and ``ess`` (``1 / sum w^2``).
    """
    w = np.exp(logw - logw.max(axis=-1, keepdims=True))
    w /= w.sum(axis=-1, keepdims=True)
    order = np.argsort(gains, axis=-1)
    gs = np.take_along_axis(gains, order, axis=-1)
    cw = np.cumsum(np.take_along_axis(w, order[:, None, :], axis=-1), axis=-1)
    last = gains.shape[-1] - 1
    lo = np.take_along_axis(gs, np.minimum((cw < 0.05).sum(axis=-1), last), axis=-1)
    ev = w @ scores
    regret = np.maximum(w @ best - ev.max(axis=-1), 0.0)
    return {"regret": regret.mean(axis=-1),
            "p_resolved": (lo > 0).mean(axis=-1), "ess": (1.0 / (w * w).sum(axis=-1)).mean(axis=-1)}


class CostBook:
    """What each candidate run costs now, given the datasets that exist or are already proposed.

    A candidate is a (recipe, cell) pair. Its run reuses a dataset (same recipe, a seed with data) when
    one exists that has no run at its cell yet, and then costs its compute only; otherwise it needs a
    new dataset (a new seed) and costs ``data_cost[recipe] + compute``. Taking a run updates the
    book: a new dataset makes the recipe's other cells free of data cost for that seed.

    Parameters
    ----------
    recipe_of, cell_of : (C,) integer recipe and cell of each candidate (one candidate per pair).
    data_cost : (R,) cost of synthesising one dataset of each recipe, in the budget unit.
    compute_cost : (C,) training compute of each candidate, in the budget unit.
    datasets : recipe -> seeds that have data (runs of the experiment, any state).
    used : (recipe, cell, seed) triples that have a run already.
    next_seed : the first seed no run of the experiment has.
    """

    def __init__(self, recipe_of: np.ndarray, cell_of: np.ndarray, data_cost: np.ndarray, compute_cost: np.ndarray,
                 datasets: dict[int, list[int]], used: set[tuple[int, int, int]], next_seed: int):
        self.recipe_of = np.asarray(recipe_of, dtype=int)
        self.cell_of = np.asarray(cell_of, dtype=int)
        self.data_cost = np.asarray(data_cost, dtype=float)
        self.compute_cost = np.asarray(compute_cost, dtype=float)
        self.datasets = {r: sorted(s) for r, s in datasets.items()}
        self.used = set(used)
        self.next_seed = int(next_seed)
        self.free = np.array([sum((r, k, s) not in self.used for s in self.datasets.get(r, []))
                              for r, k in zip(self.recipe_of, self.cell_of)], dtype=int)

    def costs(self) -> np.ndarray:
        """(C,) cost of each candidate's next run, in the budget unit."""
        return self.compute_cost + np.where(self.free > 0, 0.0, self.data_cost[self.recipe_of])

    def take(self, c: int) -> tuple[int, bool, float, float]:
        """Propose candidate ``c``'s next run: ``(seed, new_dataset, data_cost, compute_cost)``."""
        r, k = int(self.recipe_of[c]), int(self.cell_of[c])
        free = [s for s in self.datasets.get(r, []) if (r, k, s) not in self.used]
        if free:
            seed, new, data = free[0], False, 0.0
            self.free[c] -= 1
        else:
            seed, new, data = self.next_seed, True, float(self.data_cost[r])
            self.next_seed += 1
            self.datasets.setdefault(r, []).append(seed)
            self.free[(self.recipe_of == r) & (self.cell_of != k)] += 1
        self.used.add((r, k, seed))
        return seed, new, data, float(self.compute_cost[c])


@dataclass(frozen=True)
class Step:
    """One chosen run and the expected state after it and those before it."""

    index: int
    """Candidate index."""
    seed: int
    """Seed the run gets (from :class:`CostBook`)."""
    new_dataset: bool
    """Whether it needs a new dataset."""
    data_cost: float
    """Its data cost, budget unit."""
    compute_cost: float
    """Its compute cost, budget unit."""
    width: float
    """90% gain-interval width after it, linear-Gaussian (score points)."""
    regret: float
    """Expected regret after it (score points)."""
    p_resolved: float
    """Share of simulations whose interval is above 0 after it."""
    ess: float
    """Mean effective sample size of the untempered weights after it."""


@dataclass(frozen=True)
class Selection:
    """The chosen runs and the state before any of them."""

    steps: list[Step]
    """Chosen runs, in order."""
    width_now: float
    """Width with no new run, linear-Gaussian (about ``allocate``'s when the gains are near normal)."""
    regret_now: float
    """Expected regret with no new run (score points)."""
    p_resolved_now: float
    """Share of simulations whose interval is above 0 with no new run."""
    notes: list[str] = field(default_factory=list)
    """Why fewer runs than asked were chosen, if so."""


@dataclass
class _State:
    """The greedy's running state: log weights, largest N so far, replicate counts, the screen's anomalies."""

    logw: np.ndarray
    max_n: float
    picks: dict[int, int]
    ya: np.ndarray
    fa: np.ndarray
    ga: np.ndarray
    """(B,) anomalies of the gains without the effect error (the Gaussian width's)."""
    u: float
    """The criterion's value for the runs chosen so far."""


@dataclass(frozen=True)
class _Setup:
    """What stays fixed during the greedy: simulations, normalisers, plan scores."""

    truth: np.ndarray
    noise: np.ndarray
    best: np.ndarray
    w0: float
    r0: float
    rival_w: np.ndarray
    now: dict[str, np.ndarray]
    seed: int
    ess_min: float
    """The tempered weights' least effective sample size."""

    def u(self, m: dict[str, np.ndarray]) -> np.ndarray:
        """``E[W] / W_0 + E[R] / R_0`` of measures ``m`` (the regret term only when ``R_0 > 0``)."""
        out = m["width"] / max(self.w0, 1e-300)
        return out + m["regret"] / self.r0 if self.r0 > 1e-12 else out


def _setup(ens: Ensemble, sims: int, seed: int) -> tuple[_Setup, _State]:
    b, c_all = ens.preds.shape
    truth = (np.arange(sims) * b // sims) if sims <= b else np.arange(sims) % b
    noise = np.random.default_rng(seed).standard_normal((sims, c_all))
    logw0 = np.zeros((sims, b))
    logw0[np.arange(sims), truth] = -np.inf
    best = ens.scores.max(axis=1)
    now = weighted_measures(logw0[None], effect_gains(ens, 0.0), ens.scores, best)
    now["width"] = gaussian_width(ens, np.var(ens.gains, ddof=1), 0.0)
    rivals = ens.scores[:, 1:] - ens.scores[:, :1]
    ycols = np.column_stack([effect_gains(ens, 0.0)[0], rivals])
    rival_w = np.maximum(rivals, 0.0).mean(axis=0)
    rival_w = rival_w / rival_w.sum() if rival_w.sum() > 0 else rival_w
    setup = _Setup(truth=truth, noise=noise, best=best, w0=float(now["width"][0]), r0=float(now["regret"][0]),
                   rival_w=rival_w, now=now, seed=seed, ess_min=min(30.0, b / 4))
    state = _State(logw=logw0, max_n=0.0, picks={}, ya=ycols - ycols.mean(axis=0),
                   fa=ens.preds - ens.preds.mean(axis=0), ga=ens.gains - ens.gains.mean(), u=0.0)
    state.u = float(setup.u(now)[0])
    return setup, state


def _screen_scores(st: _State, ens: Ensemble, rival_w: np.ndarray) -> np.ndarray:
    """(C,) linear-Gaussian share of the gain's and the rivals' variance a run would explain."""
    b = st.fa.shape[0]
    var_f = (st.fa * st.fa).sum(axis=0) / (b - 1)
    cov = st.ya.T @ st.fa / (b - 1)
    var_y = np.maximum((st.ya * st.ya).sum(axis=0) / (b - 1), 1e-300)
    rho2 = cov * cov / var_y[:, None] / np.maximum(var_f + ens.noise_var, 1e-300)[None, :]
    return rho2[0] + (rival_w[:, None] * rho2[1:]).sum(axis=0) if rho2.shape[0] > 1 else rho2[0]


def _ensrf(st: _State, c: int, v: float) -> None:
    """Serial ensemble square-root update of the screen's anomalies with one result at candidate ``c``."""
    b = st.fa.shape[0]
    f = st.fa[:, c].copy()
    denom = float(f @ f) / (b - 1) + v
    if denom <= 0:
        return
    alpha = 1.0 / (1.0 + math.sqrt(v / denom))
    st.ya -= alpha * np.outer(f, st.ya.T @ f / (b - 1) / denom)
    st.ga -= alpha * f * (st.ga @ f / (b - 1) / denom)
    st.fa -= alpha * np.outer(f, st.fa.T @ f / (b - 1) / denom)


def _shortlist(score: np.ndarray, feasible: np.ndarray, cells: np.ndarray, size: int, per_cell: int) -> np.ndarray:
    """Indices: the ``size`` best feasible by ``score``, plus the ``per_cell`` best of every cell."""
    idx = np.flatnonzero(feasible)
    s = score[idx]
    keep = set(idx[np.argsort(-s)[:size]].tolist())
    for k in np.unique(cells[idx]):
        in_k = idx[cells[idx] == k]
        keep |= set(in_k[np.argsort(-score[in_k])[:per_cell]].tolist())
    return np.array(sorted(keep), dtype=int)


def _posterior_var(st: _State, ens: Ensemble, cands: np.ndarray) -> np.ndarray:
    """(L,) linear-Gaussian variance of the gain (no effect error) after one more result at each of ``cands``."""
    b = st.fa.shape[0]
    f = st.fa[:, cands]
    cov = st.ga @ f / (b - 1)
    denom = np.maximum((f * f).sum(axis=0) / (b - 1) + ens.noise_var[cands], 1e-300)
    return float(st.ga @ st.ga) / (b - 1) - cov * cov / denom


def _increments(ens: Ensemble, y: np.ndarray, cands: np.ndarray) -> np.ndarray:
    """(L, M, B) log-likelihood increments of each draw for results ``y`` (M, L) at candidates ``cands``."""
    f = ens.preds[:, cands]  # (B, L)
    d = y.T[:, :, None] - f.T[:, None, :]
    return -0.5 * d * d / np.maximum(ens.noise_var[cands], 1e-300)[:, None, None]


def _outcomes(ens: Ensemble, truth: np.ndarray, cands: np.ndarray, picks: dict[int, int], noise: np.ndarray,
              seed: int) -> np.ndarray:
    """(M, L) simulated results at ``cands``; a replicate of a chosen run gets fresh noise."""
    e = noise[:, cands].copy()
    for j, c in enumerate(cands):
        r = picks.get(int(c), 0)
        if r:
            e[:, j] = np.random.default_rng([seed, int(c), r]).standard_normal(e.shape[0])
    return ens.preds[truth][:, cands] + np.sqrt(ens.noise_var[cands])[None, :] * e


def _rung_if_chosen(ens: Ensemble, st: _State, cands: np.ndarray) -> np.ndarray:
    """(L,) each candidate's N where one more run there makes that size a rung (``rung_runs`` runs among the fit's
    sparse runs and the batch's distinct candidates: a replicate of a chosen run adds no difference to check),
    else 0."""
    n = ens.cand_n[cands]
    picked: dict[float, int] = {}
    for c in st.picks:
        picked[float(ens.cand_n[c])] = picked.get(float(ens.cand_n[c]), 0) + 1
    have = np.array([ens.sparse_runs.get(float(x), 0) + picked.get(float(x), 0) for x in n])
    new = np.array([int(c) not in st.picks for c in cands], dtype=int)
    return np.where(have + new >= ens.rung_runs, n, 0.0)


def _choose(ens: Ensemble, su: _Setup, st: _State, costs: np.ndarray, feasible: np.ndarray, cell_of: np.ndarray,
            screen: int, per_cell: int) -> tuple[int, dict[str, float]]:
    """One greedy choice: screen, evaluate the shortlist by the preposterior, update the state; the candidate and
    its measures (``width``, ``regret``, ``p_resolved``, ``ess``)."""
    floor = 1e-3 * float(np.median(costs[costs > 0])) if np.any(costs > 0) else 1e-9
    lin = _screen_scores(st, ens, su.rival_w) / np.maximum(costs, floor)
    cands = _shortlist(lin, feasible, cell_of, screen, per_cell)
    y = _outcomes(ens, su.truth, cands, st.picks, su.noise, su.seed)
    logw = st.logw[None] + _increments(ens, y, cands)
    top = np.maximum(st.max_n, _rung_if_chosen(ens, st, cands))
    m = weighted_measures(tempered(logw, su.ess_min), effect_gains(ens, top), ens.scores, su.best)
    m["width"] = gaussian_width(ens, _posterior_var(st, ens, cands), top)
    m["ess"] = _ess(logw).mean(axis=-1)
    u = su.u(m)
    j = int(np.argmax((st.u - u) / np.maximum(costs[cands], floor)))
    c = int(cands[j])
    st.logw, st.u = logw[j], float(u[j])
    st.max_n = max(st.max_n, float(_rung_if_chosen(ens, st, np.array([c]))[0]))
    st.picks[c] = st.picks.get(c, 0) + 1
    _ensrf(st, c, float(ens.noise_var[c]))
    return c, {k: float(v[j]) for k, v in m.items()}


def select_runs(ens: Ensemble, book: CostBook, k: int, *, max_cost: float | None = None, sims: int = 128,
                screen: int = 48, per_cell: int = 4, seed: int = 0,
                progress: Callable[[int], None] | None = None) -> Selection:
    """Choose ``k`` runs greedily by the preposterior criterion (module docstring), at most ``max_cost`` in all.

    ``sims`` simulated outcomes per batch; ``screen`` candidates (plus ``per_cell`` per cell) evaluated
    by the preposterior each step. Raises ``ValueError`` when no candidate fits ``max_cost`` at all (the
    caller words it); stops early, with a note, when the remaining cost allows no further run.
    """
    su, st = _setup(ens, sims, seed)
    steps: list[Step] = []
    notes: list[str] = []
    spent = 0.0
    for _ in range(k):
        costs = book.costs()
        feasible = np.ones(costs.size, dtype=bool) if max_cost is None else costs <= max_cost - spent + 1e-9
        if not feasible.any():
            if not steps:
                raise ValueError(f"no candidate run costs at most {max_cost:g} (the cheapest costs {costs.min():g})")
            notes.append(f"stopped after {len(steps)} of {k} runs: no further run fits the remaining "
                         f"{max_cost - spent:,.2f} of max cost {max_cost:,.2f} (cheapest {costs.min():,.2f})")
            break
        c, m = _choose(ens, su, st, costs, feasible, book.cell_of, screen, per_cell)
        seed_c, new, data, comp = book.take(c)
        spent += data + comp
        steps.append(Step(index=c, seed=seed_c, new_dataset=new, data_cost=data, compute_cost=comp, **m))
        if progress is not None:
            progress(len(steps))
    return Selection(steps=steps, width_now=su.w0, regret_now=su.r0, p_resolved_now=float(su.now["p_resolved"][0]),
                     notes=notes)
