"""Law forms over model size and data axes: Chinchilla, saturating, the research plan's hypotheses (seed 003),
and the OLMo ladder's two steps (a loss, then a sigmoid to accuracy)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fit.errors import FitInputError
from fit.law_base import ArrayMap, Law, LawFactory, Params, normalise, one_input, split_inputs
from fit.law_effective import effective
from fit.models import LawInput

__all__ = ["chinchilla", "saturating", "hypothesis", "sigmoid", "two_step"]


def chinchilla(inputs: Sequence[LawInput] | None = None) -> Law:
    """``L = E + A / N^alpha + B / D_eff^beta`` (Hoffmann et al. 2022, Approach 3), with data axes.

    With inputs ``N`` and ``D`` only, this is the published form: amplitudes ``E, A, B``
    fitted as logs; the starting grid is the Epoch AI replication's (Besiroglu et al. 2024,
    arXiv 2404.10102): ``alpha, beta in {0, 0.5, ..., 2}``, ``log E in {-1, -0.5, ..., 1}``,
    ``log A, log B in {0, 5, ..., 25}`` (0 replaced by 0.02 because the bounds exclude it);
    Huber delta ``1e-3`` on log loss. A ``unique_tokens`` input, or diversity and quality
    axes, make it the effective-data law of :func:`effective` (quality as a multiplier).
    """
    if inputs is not None and any(i.kind in ("unique_tokens", "diversity", "quality") for i in inputs):
        return effective("chinchilla", "loss", "multiplier")(inputs)
    if inputs is None:
        inputs = (LawInput(name="N", kind="size"), LawInput(name="D", kind="tokens"))
    n_in = one_input(inputs, "size", "chinchilla")
    d_in = one_input(inputs, "tokens", "chinchilla")

    def fn(p: Params, X: ArrayMap) -> np.ndarray:
        n = normalise(n_in, X[n_in.name])
        d = normalise(d_in, X[d_in.name])
        return p["E"] + p["A"] * n ** (-p["alpha"]) + p["B"] * d ** (-p["beta"])

    return Law(
        name="chinchilla", target="loss", inputs=(n_in, d_in), param_names=("E", "A", "alpha", "B", "beta"),
        bounds={"E": (1e-3, 50.0), "A": (1e-3, 1e14), "alpha": (1e-3, 3.0), "B": (1e-3, 1e14), "beta": (1e-3, 3.0)},
        start_grid={"E": tuple(float(np.exp(v)) for v in (-1.0, -0.5, 0.0, 0.5, 1.0)),
                    "A": tuple(float(np.exp(v)) for v in (0.0, 5.0, 10.0, 15.0, 20.0, 25.0)),
                    "alpha": (0.02, 0.5, 1.0, 1.5, 2.0),
                    "B": tuple(float(np.exp(v)) for v in (0.0, 5.0, 10.0, 15.0, 20.0, 25.0)),
                    "beta": (0.02, 0.5, 1.0, 1.5, 2.0)},
        fn=fn, log_params=frozenset({"E", "A", "B"}), huber_delta=1e-3,
        formula="L(N, D) = E + A / N^alpha + B / D^beta")


def saturating(inputs: Sequence[LawInput] | None = None) -> Law:
    """``S = S_max - sum_k A_k t_k^(-alpha_k)`` over model size and every axis.

    ``t = x / ref`` for size and diversity inputs, ``t = 1 + w`` for quality inputs.
    Amplitudes ``A_k`` are fitted as logs.
    """
    size, div, qual = split_inputs(inputs, "saturating")
    terms = [size, *div, *qual]
    names = ["S_max"]
    bounds: dict[str, tuple[float, float]] = {"S_max": (-1.0, 3.0)}
    grid: dict[str, tuple[float, ...]] = {"S_max": (0.5, 0.9)}
    for t in terms:
        names += [f"A_{t.name}", f"alpha_{t.name}"]
        bounds[f"A_{t.name}"] = (1e-6, 10.0)
        bounds[f"alpha_{t.name}"] = (1e-3, 5.0)
        grid[f"A_{t.name}"] = (0.03, 0.2)
        grid[f"alpha_{t.name}"] = (0.3, 1.0)

    def fn(p: Params, X: ArrayMap) -> np.ndarray:
        out = p["S_max"]
        for t in terms:
            x = normalise(t, X[t.name])
            base = 1.0 + x if t.kind == "quality" else x
            out = out - p[f"A_{t.name}"] * base ** (-p[f"alpha_{t.name}"])
        return out

    return Law(name="saturating", target="score", inputs=tuple(terms), param_names=tuple(names), bounds=bounds,
               start_grid=grid, fn=fn, log_params=frozenset(n for n in names if n.startswith("A_")),
               formula="S = S_max - sum_k A_k t_k^(-alpha_k)")


def hypothesis(kind: str, sized: bool = False) -> LawFactory:
    """The research plan's forms; ``sized=True`` scales the diversity gain by ``n^delta`` (``{kind}_nx``).

    ``G(x) n^delta`` lets diversity be worth more (``delta > 0``) or less to a larger model: the
    N x data term the separable forms lack. ``delta = 0`` is the plain form, so the two nest.
    """
    label = f"{kind}_nx" if sized else kind

    def factory(inputs: Sequence[LawInput] | None = None) -> Law:
        size, div, qual = split_inputs(inputs, label)
        if not div or not qual:
            raise FitInputError(f"law {kind!r} needs at least one diversity and one quality axis "
                                f"(got {len(div)} diversity, {len(qual)} quality)")
        names = ["S0", "A_N", "alpha_N"]
        bounds: dict[str, tuple[float, float]] = {"S0": (-1.0, 2.0), "A_N": (1e-6, 10.0), "alpha_N": (1e-3, 3.0)}
        grid: dict[str, tuple[float, ...]] = {"S0": (0.1, 0.4, 0.7), "A_N": (0.05, 0.3), "alpha_N": (0.2, 0.6, 1.2)}
        for d in div:
            names += [f"G_{d.name}", f"alpha_{d.name}"]
            bounds[f"G_{d.name}"] = (1e-6, 3.0)
            bounds[f"alpha_{d.name}"] = (1e-3, 5.0)
            grid[f"G_{d.name}"] = (0.02, 0.1)
            grid[f"alpha_{d.name}"] = (0.3, 1.0)
        h_hi = 30.0 if kind == "multiplicative" else 3.0
        h_grid = (0.2, 1.0) if kind == "multiplicative" else (0.02, 0.1)
        for q in qual:
            names += [f"H_{q.name}", f"beta_{q.name}"]
            bounds[f"H_{q.name}"] = (1e-6, h_hi)
            bounds[f"beta_{q.name}"] = (1e-2, 10.0)
            grid[f"H_{q.name}"] = h_grid
            grid[f"beta_{q.name}"] = (0.5, 2.0)
        if kind == "interaction":
            names.append("kappa")
            bounds["kappa"] = (-10.0, 50.0)
            grid["kappa"] = (0.0, 2.0, 8.0)
        if sized:
            names.append("delta_N")
            bounds["delta_N"] = (-1.0, 1.0)
            grid["delta_N"] = (0.0, 0.2)

        def fn(p: Params, X: ArrayMap) -> np.ndarray:
            n = normalise(size, X[size.name])
            gain = 0.0
            for d in div:
                gain = gain + p[f"G_{d.name}"] * (1.0 - normalise(d, X[d.name]) ** (-p[f"alpha_{d.name}"]))
            if sized:
                gain = gain * n ** p["delta_N"]
            qual_gain = 0.0
            for q in qual:
                w = normalise(q, X[q.name])
                qual_gain = qual_gain + p[f"H_{q.name}"] * (1.0 - (1.0 + w) ** (-p[f"beta_{q.name}"]))
            base = p["S0"] - p["A_N"] * n ** (-p["alpha_N"])
            if kind == "additive":
                return base + gain + qual_gain
            if kind == "multiplicative":
                return base + gain * (1.0 + qual_gain)
            return base + gain + qual_gain + p["kappa"] * gain * qual_gain

        formula = {
            "additive": "S = S0 - A_N n^(-alpha_N) + G(x) + Q(q)",
            "multiplicative": "S = S0 - A_N n^(-alpha_N) + G(x) (1 + Q(q))",
            "interaction": "S = S0 - A_N n^(-alpha_N) + G(x) + Q(q) + kappa G(x) Q(q)",
        }[kind] + "; G(x) = " + ("n^delta_N " if sized else "") + \
            "sum_i G_i (1 - t_i^(-alpha_i)), Q(q) = sum_j H_j (1 - (1 + w_j)^(-beta_j))"
        logs = frozenset(n for n in names if n.split("_")[0] in ("A", "G", "H"))
        return Law(name=label, target="score", inputs=(size, *div, *qual), param_names=tuple(names), bounds=bounds,
                   start_grid=grid, fn=fn, log_params=logs, formula=formula)

    factory.__doc__ = f"The {kind!r} form (see the module docstring)."
    return factory


def sigmoid(inputs: Sequence[LawInput] | None = None) -> Law:
    """``S = lo + (hi - lo) / (1 + exp(k (L - L0)))``: accuracy falls as the loss ``L`` rises (``k > 0``).

    ``0 <= lo`` and ``hi <= 1`` (an accuracy); the floor ``lo`` is held at chance accuracy with
    ``fit --floor`` (OLMo model ladder, Bhagia et al. 2024).
    """
    if inputs is None:
        inputs = (LawInput(name="L", kind="metric"),)
    loss_in = one_input(inputs, "metric", "sigmoid")

    def fn(p: Params, X: ArrayMap) -> np.ndarray:
        z = np.clip(p["k"] * (X[loss_in.name] - p["L0"]), -60.0, 60.0)
        return p["lo"] + (p["hi"] - p["lo"]) / (1.0 + np.exp(z))

    return Law(name="sigmoid", target="score", inputs=(loss_in,), param_names=("lo", "hi", "k", "L0"),
               bounds={"lo": (0.0, 1.0), "hi": (0.0, 1.0), "k": (1e-2, 100.0), "L0": (1e-3, 50.0)},
               start_grid={"lo": (0.0, 0.2), "hi": (0.6, 1.0), "k": (1.0, 5.0, 20.0), "L0": (0.5, 1.5, 3.0, 6.0)},
               fn=fn, log_params=frozenset({"k", "L0"}), formula="S = lo + (hi - lo) / (1 + exp(k (L - L0)))")


def two_step(inputs: Sequence[LawInput] | None = None) -> Law:
    """Chinchilla loss from ``(N, D)``, then :func:`sigmoid` to the score (OLMo ladder's two steps).

    Fitting needs the observed loss as the input ``L`` of each point (stage 2) and fits
    stage 1 on ``L`` itself; prediction chains ``sigmoid(chinchilla(N, D))``.
    """
    base = tuple(i for i in (inputs or ()) if i.kind in ("size", "tokens")) or None
    loss_name = next((i.name for i in (inputs or ()) if i.kind == "metric"), "L")
    stage1 = chinchilla(base)
    stage2 = sigmoid((LawInput(name=loss_name, kind="metric"),))

    def fn(p: Params, X: ArrayMap) -> np.ndarray:
        loss = stage1.fn({k: p[k] for k in stage1.param_names}, X)
        return stage2.fn({k: p[k] for k in stage2.param_names}, {loss_name: loss})

    names = stage1.param_names + stage2.param_names
    return Law(name="two_step", target="score", inputs=(*stage1.inputs, *stage2.inputs), param_names=names,
               bounds={**stage1.bounds, **stage2.bounds}, start_grid={**stage1.start_grid, **stage2.start_grid},
               fn=fn, log_params=stage1.log_params | stage2.log_params,
               formula=f"{stage1.formula}; {stage2.formula}", stages=(stage1, stage2, loss_name))
