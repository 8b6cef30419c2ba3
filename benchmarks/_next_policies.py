"""Truths and the comparison policies of ``benchmarks/next_runs.py`` (random at equal cost, D-optimal, more seeds).

Every policy draws from the candidate space ``toolscale next`` uses (:func:`allocator.proposal.candidate_space`) and
prices its runs with the same cost book (dataset reuse, compute at ``[cost].per_pflop``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from allocate_truths import _truths  # noqa: E402
from grid.cost import cost_model_from_config  # noqa: E402
from allocator.proposal import candidate_space, cost_book  # noqa: E402
from allocator.planning import plan_target  # noqa: E402
from fit.laws import Law, get_law, known_laws, law_of, register_law  # noqa: E402
from fit.models import LawInput  # noqa: E402
from grid.registry import Registry  # noqa: E402
from pipeline.allocate import config_for, load_fit  # noqa: E402

__all__ = ["truths", "truth_score", "random_rows", "d_optimal_rows", "seeds_rows", "candidate_context", "target_tokens"]

BENCH = "simulated"


def _logistic(inputs=None) -> Law:
    """``S = 1 / (1 + exp(-(a0 + a_N log n + sum_i a_i log t_i + sum_j h_j w_j)))``: no fitted form has it."""
    inputs = tuple(inputs or ())
    size = next(i for i in inputs if i.kind == "size")
    div = [i for i in inputs if i.kind == "diversity"]
    qual = [i for i in inputs if i.kind == "quality"]
    names = ["a0", "a_N"] + [f"a_{d.name}" for d in div] + [f"h_{q.name}" for q in qual]

    def fn(p, X):
        eta = p["a0"] + p["a_N"] * np.log(X[size.name] / size.ref)
        for d in div:
            eta = eta + p[f"a_{d.name}"] * np.log(X[d.name] / d.ref)
        for q in qual:
            eta = eta + p[f"h_{q.name}"] * (X[q.name] - q.lo) / (q.hi - q.lo)
        return 1.0 / (1.0 + np.exp(-eta))

    return Law(name="bench_logistic", target="score", inputs=(size, *div, *qual), param_names=tuple(names),
               bounds={n: (-10.0, 10.0) for n in names}, start_grid={n: (0.0,) for n in names}, fn=fn,
               formula="S = logistic(a0 + a_N log n + sum a_i log t_i + sum h_j w_j)")


if "bench_logistic" not in known_laws():
    register_law(_logistic, "bench_logistic")


def _with_tokens(inputs, d_ref: float) -> list[LawInput]:
    return [inputs[0], LawInput(name="D", kind="tokens", ref=d_ref), *inputs[1:]]


def truths(inputs, d_ref: float = 819200.0) -> dict[str, tuple[Law, dict[str, float]]]:
    """``name -> (law, params)``: allocate_truths' five, then the two misspecified ones.

    ``d_ref``: D of the smallest rung (normalises D in the ``effective`` truth).
    """
    out = {name: (get_law(law, inputs), params) for name, (law, params) in _truths(inputs).items()}
    eff = get_law("effective", _with_tokens(list(inputs), d_ref))
    p = {"S_max": 0.75, "A": 0.25, "alpha": 0.4, "B": 0.25, "beta": 0.5}
    for i in eff.inputs:
        if i.kind == "diversity":
            p.update({f"c_{i.name}": 1.0, f"gamma_{i.name}": 0.6})
        elif i.kind == "quality":
            p.update({f"c_{i.name}": 0.5, f"gamma_{i.name}": 1.0})
    out["effective (misspecified: data x data x D)"] = (eff, p)
    lg = get_law("bench_logistic", inputs)
    q = {"a0": -1.2, "a_N": 0.35}
    for i in lg.inputs:
        if i.kind == "diversity":
            q[f"a_{i.name}"] = 0.12
        elif i.kind == "quality":
            q[f"h_{i.name}"] = 0.25
    out["logistic (misspecified: logistic link)"] = (lg, q)
    return out


def truth_score(law: Law, params: dict[str, float], tokens: float):
    """The truth as a solver score ``(levels, n_params) -> scores``; D is the planned rung's tokens."""
    def score(levels, n_params):
        X = {k: np.atleast_1d(np.asarray(v, dtype=float)) for k, v in levels.items()}
        m = len(next(iter(X.values())))
        X.setdefault("N", np.full(m, float(n_params)))
        X.setdefault("D", np.full(m, float(tokens)))
        return np.asarray(law.predict(params, X), dtype=float).ravel()
    return score


def candidate_context(path: str, plans: list[dict[str, float]]):
    """``(config, space, book, runs)`` over the experiment ``sim`` of the registry at ``path``, as ``next`` builds
    them (the candidate space, the cost book, every run of the experiment)."""
    with Registry(path, read_only=True) as reg:
        cfg = config_for(reg, "sim", None)
        runs = reg.runs("sim")
    space = candidate_space(cfg, cost_model_from_config(cfg), [dict(r.recipe) for r in runs] + plans)
    return cfg, space, cost_book(space, runs), runs


def _rows(space, book, picks) -> tuple[list[dict], list[float]]:
    rows, costs, total = [], [], 0.0
    for c in picks:
        seed, _, data, comp = book.take(int(c))
        total += data + comp
        cell = space.cells[int(space.cell_of[c])]
        rows.append({"recipe": dict(space.recipes[int(space.recipe_of[c])]), "model_size": cell.model_size,
                     "token_multiplier": cell.token_multiplier, "seed": seed})
        costs.append(total)
    return rows, costs


def _random_batch(space, book, k: int, target: float, rng: np.random.Generator) -> list[int]:
    """``k`` candidates drawn one at a time, uniformly among those the rest of ``target`` still affords (leaving
    room for the cheapest run per remaining pick); the cheapest when none is affordable."""
    picks, spent = [], 0.0
    for i in range(k):
        costs = book.costs()
        room = target - spent - (k - i - 1) * float(costs.min())
        ok = np.flatnonzero(costs <= room)
        c = int(rng.choice(ok)) if ok.size else int(np.argmin(costs))
        picks.append(c)
        spent += sum(book.take(c)[2:])
    return picks


def random_rows(path: str, k: int, target: float, *, seed: int, plans: list[dict[str, float]],
                tries: int = 200) -> tuple[list[dict], float]:
    """``k`` random candidates costing about ``target`` together: sequential uniform draws among the affordable
    (:func:`_random_batch`), the first batch within 10% of ``target`` of ``tries`` (else the closest)."""
    _, space, _, runs = candidate_context(path, plans)
    rng = np.random.default_rng(seed)
    best = None
    for _ in range(tries):
        picks = _random_batch(space, cost_book(space, runs), k, target, rng)
        rows, costs = _rows(space, cost_book(space, runs), picks)
        gap = abs(costs[-1] - target) / max(target, 1e-9)
        if best is None or gap < best[0]:
            best = (gap, rows, costs[-1])
        if gap <= 0.10:
            break
    return best[1], best[2]


def _jacobian(law: Law, params: dict[str, float], fixed: set[str], X: dict[str, np.ndarray]) -> np.ndarray:
    """(n, p) derivatives of the law's prediction in its free parameters (log space for log parameters)."""
    names = [p for p in law.param_names if p not in fixed]
    base = np.atleast_1d(law.predict(params, X))
    cols = []
    for p in names:
        step = dict(params)
        if p in law.log_params:
            step[p] = params[p] * np.exp(1e-4)
            cols.append((np.atleast_1d(law.predict(step, X)) - base) / 1e-4)
        else:
            h = 1e-4 * max(abs(params[p]), 1e-2)
            step[p] = params[p] + h
            cols.append((np.atleast_1d(law.predict(step, X)) - base) / h)
    return np.column_stack(cols)


def d_optimal_rows(path: str, k: int, plans: list[dict[str, float]]) -> tuple[list[dict], list[float]]:
    """Greedy D-optimal augmentation: each run maximises ``j' M^-1 j`` (M: the fitted runs' information plus
    the runs added so far) for the chosen law at its point estimate."""
    with Registry(path, read_only=True) as reg:
        _, fit = load_fit(reg, "sim", BENCH)
        fitted = reg.runs("sim", status="done", split="fit")
    cfg, space, book, _ = candidate_context(path, plans)
    law = law_of(fit)
    x0 = {a: np.array([float({"N": r.model_params, "D": r.train_tokens}.get(a, r.recipe.get(a, 0.0)) or 0.0)
                       for r in fitted]) for a in law.axes}
    xc = space.inputs()
    j0 = _jacobian(law, fit.params, set(fit.fixed), x0)
    jc = _jacobian(law, fit.params, set(fit.fixed), {a: xc[a] for a in law.axes})
    m = j0.T @ j0
    m += 1e-9 * np.trace(m) / m.shape[0] * np.eye(m.shape[0])
    picks = []
    for _ in range(k):
        inv = np.linalg.pinv(m)
        gain = np.einsum("ij,jk,ik->i", jc, inv, jc)
        c = int(np.argmax(gain))
        picks.append(c)
        m += np.outer(jc[c], jc[c])
    return _rows(space, book, picks)


def seeds_rows(path: str, k: int, *, seed: int, plans: list[dict[str, float]]) -> tuple[list[dict], list[float]]:
    """New seeds of the fitted design points at the largest fitted size, in a seeded order (cycling)."""
    cfg, space, book, runs = candidate_context(path, plans)
    fitted = [r for r in runs if r.split == "fit" and r.status == "done"]
    top = max(fitted, key=lambda r: r.model_params).model_size
    from grid.augment import recipe_key

    rix = {recipe_key(r): i for i, r in enumerate(space.recipes)}
    kix = next(i for i, c in enumerate(space.cells) if c.model_size == top)
    recipes = sorted({rix[recipe_key(r.recipe)] for r in fitted if r.model_size == top})
    order = np.random.default_rng(seed).permutation(recipes)
    picks = [int(order[i % len(order)]) * len(space.cells) + kix for i in range(k)]
    return _rows(space, book, picks)


def target_tokens(cfg) -> float:
    """D the allocator plans with at the target rung."""
    return plan_target(cfg, None).d
