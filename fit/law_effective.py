"""Effective-data laws: the data axes act on the tokens the model effectively sees (see :func:`effective`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fit.errors import FitInputError
from fit.law_base import ArrayMap, Law, LawFactory, Params, normalise, one_input
from fit.models import LawInput, Target

__all__ = ["effective", "effective_tokens"]


def effective_tokens(p: Params, d: np.ndarray, u: np.ndarray | None) -> np.ndarray:
    """Repetition-adjusted tokens ``D' = U + U R* (1 - exp(-R / R*))``, ``R = max(D / U - 1, 0)``.

    Muennighoff et al. 2023 ("Scaling Data-Constrained Language Models", eq. 5): the ``R``-th
    repetition of the unique tokens ``U`` is worth ``exp(-R / R*)`` of a new token, so repeated
    data saturates at ``U (1 + R*)``. A run that sees fewer tokens than ``U`` repeats nothing:
    ``D' = D`` (the paper's ``U_D = min(U, D)``). ``d`` and ``u`` share one unit; ``u is None``
    returns ``d``.
    """
    if u is None:
        return d
    seen = np.minimum(u, d)
    r = np.maximum(d / u - 1.0, 0.0)
    rs = p["R_star"]
    return seen + seen * rs * (1.0 - np.exp(-r / rs))


def effective(name: str, target: Target, quality: str, diversity: str = "multiplier",
               overfit: bool = False) -> LawFactory:
    """Effective-data laws: the data axes act on the tokens the model effectively sees.

    ``loss:  L = E     + A n^(-alpha) + B d_eff^(-beta) [- Q(q)]``
    ``score: S = S_max - A n^(-alpha) - B d_eff^(-beta) [+ Q(q)]``

    with ``n = N / ref_N``, ``d_eff = D' prod_i m_i(x_i)``, ``D'`` the repetition-adjusted
    tokens of :func:`effective_tokens` (``D / ref_D`` without a ``unique_tokens`` input) and
    each ``m_i`` a saturating multiplier of its axis: ``m_i = 1 + c_i (1 - t_i^(-gamma_i))``
    for a diversity axis (``t_i = x_i / ref_i``, ``m = 1`` at the reference level, at most
    ``1 + c_i``), ``m_j = 1 + c_j (1 - (1 + w_j)^(-gamma_j))`` for a quality axis. A data
    axis is then worth more as N grows and as D grows (its effect enters through
    ``B d_eff^(-beta)``, not as a separable term). ``quality="multiplier"`` puts quality
    inside ``d_eff`` (quality scales what diversity buys); ``quality="term"`` gives it its own
    saturating term ``Q(q) = sum_j H_j (1 - (1 + w_j)^(-beta_j))`` (the research plan's two
    hypotheses).

    ``diversity="unique"`` makes the diversity axes set the *unique content* of the data
    instead of scaling its tokens: ``U = U0 prod_i t_i^rho_i`` (in units of ``ref_D``; times
    the runs' ``unique_tokens / ref_D`` when that input is given), and every token beyond
    ``U`` is a repetition, discounted as in :func:`effective_tokens` with ``R = D / U - 1``.
    Low-diversity data then saturates: more tokens, and the larger models that use them,
    stop paying once they only repeat the few tools they cover, while diverse data keeps
    paying. A diversity axis is so worth more to a larger ``D`` (and to the larger ``N`` it
    is trained with), which the separable score forms cannot express.

    ``overfit=True`` (with ``diversity="unique"``) adds a term in which repetitions *hurt*:
    ``+ C R^gamma`` for a loss (``- C R^gamma`` for a score), ``R = max(D / U - 1, 0)`` the
    repetitions of the unique content, ``0 < gamma <= 1``. A run that makes many passes over
    little unique content memorises it and its held-out loss rises; as ``D = tokens per parameter
    x N``, a larger model at the same tokens per parameter repeats more and is hurt more.
    ``C -> 0`` is the ``chinchilla_unique`` law; diverse data (``R ~ 0``) pays no penalty.
    """
    unique = diversity == "unique"
    if overfit and not unique:
        raise ValueError("overfit=True needs diversity='unique' (the term counts repetitions of U)")

    def factory(inputs: Sequence[LawInput] | None = None) -> Law:
        if inputs is None:
            inputs = (LawInput(name="N", kind="size"), LawInput(name="D", kind="tokens"))
        size = one_input(inputs, "size", name)
        toks = one_input(inputs, "tokens", name)
        uniq = [i for i in inputs if i.kind == "unique_tokens"]
        if len(uniq) > 1:
            raise FitInputError(f"law {name!r} takes at most one unique_tokens input, got {len(uniq)}")
        uniq_in = uniq[0] if uniq else None
        div = [i for i in inputs if i.kind == "diversity"]
        qual = [i for i in inputs if i.kind == "quality"]
        mult = ([] if unique else div) + (qual if quality == "multiplier" else [])
        shapers = div if unique else []
        term = qual if quality == "term" else []
        is_loss = target == "loss"
        names, bounds, grid = _parameters(is_loss, size.ref == 1.0, uniq_in is not None, unique, overfit, shapers,
                                          mult, term)

        def fn(p: Params, X: ArrayMap) -> np.ndarray:
            n = normalise(size, X[size.name])
            d = normalise(toks, X[toks.name])
            u = None if uniq_in is None else X[uniq_in.name] / toks.ref
            if unique:
                u = p["U0"] * (1.0 if u is None else u)
                for a in shapers:
                    u = u * normalise(a, X[a.name]) ** p[f"rho_{a.name}"]
            d_eff = effective_tokens(p, d, u)
            harm = p["C"] * np.maximum(d / u - 1.0, 0.0) ** p["gamma"] if overfit else 0.0
            for a in mult:
                x = normalise(a, X[a.name])
                base = 1.0 + x if a.kind == "quality" else x
                d_eff = d_eff * (1.0 + p[f"c_{a.name}"] * (1.0 - base ** (-p[f"gamma_{a.name}"])))
            red = p["A"] * n ** (-p["alpha"]) + p["B"] * d_eff ** (-p["beta"])
            qgain = 0.0
            for q in term:
                qgain = qgain + p[f"H_{q.name}"] * (1.0 - (1.0 + normalise(q, X[q.name])) ** (-p[f"beta_{q.name}"]))
            return p["E"] + red - qgain + harm if is_loss else p["S_max"] - red + qgain - harm

        formula = _formula(is_loss, overfit, term, mult, shapers, uniq_in is not None, unique)
        logs = frozenset(p for p in names if p in ("E", "A", "B", "R_star", "U0", "C") or p.split("_")[0] in ("c", "H"))
        return Law(name=name, target=target, inputs=(size, toks, *uniq, *div, *qual), param_names=tuple(names),
                   bounds=bounds, start_grid=grid, fn=fn, log_params=logs, formula=formula,
                   huber_delta=1e-3 if is_loss else 0.05)

    factory.__doc__ = f"The {name!r} effective-data law (see :func:`effective`)."
    return factory


def _parameters(is_loss: bool, big: bool, has_unique: bool, unique: bool, overfit: bool, shapers: Sequence[LawInput],
                mult: Sequence[LawInput], term: Sequence[LawInput]
                ) -> tuple[list[str], dict[str, tuple[float, float]], dict[str, tuple[float, ...]]]:
    """``(names, bounds, start grid)`` of an effective-data law; ``big``: raw N and D (published magnitudes)."""
    if is_loss:
        names = ["E", "A", "alpha", "B", "beta"]
        bounds: dict[str, tuple[float, float]] = {
            "E": (1e-3, 50.0), "A": (1e-3, 1e14), "alpha": (1e-3, 3.0), "B": (1e-3, 1e14), "beta": (1e-3, 3.0)}
        amp = tuple(float(np.exp(v)) for v in ((0.0, 5.0, 10.0, 15.0, 20.0, 25.0) if big else (-2.0, 0.0, 2.0)))
        grid: dict[str, tuple[float, ...]] = {
            "E": tuple(float(np.exp(v)) for v in (-1.0, -0.5, 0.0, 0.5, 1.0)), "A": amp,
            "alpha": (0.02, 0.5, 1.0, 1.5, 2.0) if big else (0.3, 0.7), "B": amp,
            "beta": (0.02, 0.5, 1.0, 1.5, 2.0) if big else (0.3, 0.7)}
    else:
        names = ["S_max", "A", "alpha", "B", "beta"]
        bounds = {"S_max": (-0.5, 1.5), "A": (1e-6, 10.0), "alpha": (1e-3, 3.0), "B": (1e-6, 10.0),
                  "beta": (1e-3, 3.0)}
        grid = {"S_max": (0.3, 0.6, 0.9), "A": (0.03, 0.2), "alpha": (0.3, 0.8), "B": (0.03, 0.2),
                "beta": (0.3, 0.8)}
    if has_unique or unique:
        names.append("R_star")
        bounds["R_star"] = (0.05, 1e3)
        grid["R_star"] = (1.0, 10.0) if unique else (2.0, 10.0, 40.0)
    if unique:
        names.append("U0")
        bounds["U0"] = (1e-4, 1e8)
        grid["U0"] = (1.0, 10.0, 100.0) if not has_unique else (0.1, 1.0)
        for a in shapers:
            names.append(f"rho_{a.name}")
            bounds[f"rho_{a.name}"] = (0.0, 3.0)
            grid[f"rho_{a.name}"] = (0.2, 1.0)
    if overfit:
        names += ["C", "gamma"]
        bounds.update(C=(1e-6, 1e3), gamma=(1e-2, 1.0))  # gamma <= 1: the harm grows at most linearly in R
        grid.update(C=(1e-3, 1e-1), gamma=(0.3, 1.0))
    for a in mult:
        names += [f"c_{a.name}", f"gamma_{a.name}"]
        bounds[f"c_{a.name}"] = (1e-4, 1e3)
        bounds[f"gamma_{a.name}"] = (1e-2, 5.0)
        grid[f"c_{a.name}"] = (0.3, 3.0)
        grid[f"gamma_{a.name}"] = (0.3, 1.0)
    for q in term:
        names += [f"H_{q.name}", f"beta_{q.name}"]
        bounds[f"H_{q.name}"] = (1e-6, 3.0)
        bounds[f"beta_{q.name}"] = (1e-2, 10.0)
        grid[f"H_{q.name}"] = (0.02, 0.1)
        grid[f"beta_{q.name}"] = (0.5, 2.0)
    return names, bounds, grid


def _formula(is_loss: bool, overfit: bool, term: Sequence[LawInput], mult: Sequence[LawInput],
             shapers: Sequence[LawInput], has_unique: bool, unique: bool) -> str:
    """The formula of an effective-data law, for reports."""
    head = "L = E + A n^-alpha + B d_eff^-beta" if is_loss else "S = S_max - A n^-alpha - B d_eff^-beta"
    if overfit:
        head += " + C R^gamma" if is_loss else " - C R^gamma"
    if term:
        head += " - Q(q)" if is_loss else " + Q(q)"
    parts = ["D'" if has_unique or unique else "D"] + [f"m_{a.name}" for a in mult]
    formula = f"{head}; d_eff = {' * '.join(parts)}"
    if has_unique or unique:
        formula += "; D' = U + U R* (1 - exp(-R / R*)), R = D / U - 1"
    if unique:
        formula += "; U = U0" + ("" if not has_unique else " U_tokens") + "".join(
            f" t_{a.name}^rho_{a.name}" for a in shapers)
    if mult:
        formula += "; m = 1 + c (1 - t^-gamma)"
    return formula
