"""A registry of named scaling-law forms.

A :class:`Law` is data plus one vectorised formula: parameter names, bounds and a
starting grid (natural units), the inputs it reads (with their normalisation), the
target it predicts (``score`` or ``loss``) and which parameters the fitter works on
in log space. The fitter (:func:`fit.fitting.fit_law`) knows nothing about any
particular form.

Registered forms (``known_laws()``):

``chinchilla``
    ``L(N, D) = E + A / N^alpha + B / D^beta`` (Hoffmann et al. 2022, Approach 3); with
    unique tokens or data axes, ``D`` becomes effective data ``D_eff`` (below).
``chinchilla_qterm``, ``effective``, ``effective_qterm`` (effective-data laws, loss and score)
    ``L = E + A n^-alpha + B d_eff^-beta`` / ``S = S_max - A n^-alpha - B d_eff^-beta`` with
    ``d_eff = D' prod_i m_i(x_i)``: repetition (Muennighoff et al. 2023) and a saturating
    multiplier per data axis; ``_qterm``: quality as its own additive term instead.
``saturating``
    ``S = S_max - sum_k A_k t_k^(-alpha_k)`` over model size and every data axis.
``additive`` (hypothesis: quality acts on its own failure modes)
    ``S = S0 - A_N n^(-alpha_N) + G(x) + Q(q)``.
``multiplicative`` (hypothesis: quality scales what diversity buys)
    ``S = S0 - A_N n^(-alpha_N) + G(x) (1 + Q(q))``.
``interaction`` (nests ``additive`` at ``kappa = 0``)
    ``S = S0 - A_N n^(-alpha_N) + G(x) + Q(q) + kappa G(x) Q(q)``.
``sigmoid`` / ``two_step``
    ``S = lo + (hi - lo) / (1 + exp(k (L - L0)))`` on an observed loss ``L``; chained
    with ``chinchilla`` it predicts a benchmark score from N and D (OLMo model ladder).

with ``G(x) = sum_i G_i (1 - t_i^(-alpha_i))`` over diversity axes (``t_i = x_i / ref_i``,
the gain over the reference level, saturating at ``G_i``) and
``Q(q) = sum_j H_j (1 - (1 + w_j)^(-beta_j))`` over quality axes
(``w_j = (q_j - lo_j) / (hi_j - lo_j)``, 0 at the lowest design level, 1 at the highest).

Adding a form takes a few lines and no change to the fitter::

    from fit.laws import Law, register_law
    from fit.models import LawInput

    register_law(Law(
        name="kaplan_n", target="loss", inputs=(LawInput(name="N", kind="size"),),
        param_names=("Nc", "alpha"), bounds={"Nc": (1e3, 1e16), "alpha": (0.01, 2)},
        start_grid={"Nc": (1e8, 1e13), "alpha": (0.05, 0.3)}, log_params=frozenset({"Nc"}),
        fn=lambda p, X: (X["N"] / p["Nc"]) ** -p["alpha"], formula="L = (N / Nc)^-alpha"))

A law whose form depends on the experiment's axes is registered as a factory
``inputs -> Law``; ``get_law(name, inputs=...)`` specialises it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fit.errors import FitInputError, UnknownLawError
from fit.models import FitResult, LawInput, Target

__all__ = [
    "Law",
    "LawFactory",
    "register_law",
    "get_law",
    "law_of",
    "known_laws",
    "default_inputs",
    "normalise",
    "HYPOTHESES",
    "effective_tokens",
]

Params = Mapping[str, Any]
ArrayMap = Mapping[str, np.ndarray]


@dataclass(frozen=True)
class Law:
    """A named law form.

    Parameters
    ----------
    name : registry name.
    target : ``score`` (higher is better, raw residuals) or ``loss`` (positive, log residuals).
    inputs : the inputs the formula reads, with their normalisation (:class:`fit.models.LawInput`).
    param_names : parameter names, in a fixed order (only the fitter's internal vector uses it).
    bounds : ``name -> (low, high)`` in natural units.
    start_grid : ``name -> candidate starting values`` in natural units.
    fn : ``fn(params, X) -> prediction``; ``params`` values may be arrays of shape ``(B, 1)``
        (one row per candidate) and must broadcast against the ``(n,)`` input arrays.
    log_params : parameters fitted as ``log(value)`` (positive amplitudes).
    formula : the formula, for reports.
    huber_delta : default Huber threshold in residual units (log units for losses).
    stages : for a two-step law, ``(stage1, stage2, intermediate)``: stage 1 predicts the
        intermediate input of stage 2 (e.g. a loss from N and D); each stage is fitted on
        its own observed data and the prediction chains them.
    residual_scale : ``log``, ``relative`` or ``raw`` residuals (:data:`fit.models.ResidualScale`);
        None: ``log`` for a loss, ``raw`` for a score. The fitter sets it per data set
        (:func:`fit.fitting.choose_residual_scale`) and :func:`law_of` restores it.
    residual_unit : divisor of ``relative`` residuals (the metric's SD over the fitted runs).
    """

    name: str
    target: Target
    inputs: tuple[LawInput, ...]
    param_names: tuple[str, ...]
    bounds: dict[str, tuple[float, float]]
    start_grid: dict[str, tuple[float, ...]]
    fn: Callable[[Params, ArrayMap], np.ndarray]
    log_params: frozenset[str] = frozenset()
    formula: str = ""
    huber_delta: float = 0.05
    stages: tuple["Law", "Law", str] | None = field(default=None, repr=False)
    residual_scale: str | None = None
    residual_unit: float = 1.0

    def __post_init__(self) -> None:
        names = set(self.param_names)
        missing = [p for p in self.param_names if p not in self.bounds or p not in self.start_grid]
        extra = [p for p in (*self.bounds, *self.start_grid) if p not in names]
        if missing or extra or len(names) != len(self.param_names):
            raise ValueError(f"law {self.name!r}: every parameter needs bounds and a start grid "
                             f"(missing {missing}, unknown {sorted(set(extra))})")
        for p, (lo, hi) in self.bounds.items():
            if not lo < hi:
                raise ValueError(f"law {self.name!r}: bounds of {p} must satisfy low < high, got ({lo}, {hi})")
            if p in self.log_params and lo <= 0:
                raise ValueError(f"law {self.name!r}: log-space parameter {p} needs a positive lower bound")

    @property
    def axes(self) -> tuple[str, ...]:
        """Names of the inputs the law reads (keys of ``X``)."""
        return tuple(i.name for i in self.inputs)

    @property
    def n_params(self) -> int:
        """Number of free parameters."""
        return len(self.param_names)

    def input(self, name: str) -> LawInput:
        """The input called ``name``."""
        for i in self.inputs:
            if i.name == name:
                return i
        raise FitInputError(f"law {self.name!r} has no input {name!r}; inputs: {', '.join(self.axes)}")

    def predict(self, params: Params, X: Mapping[str, Any]) -> np.ndarray:
        """Predicted target at the points ``X`` (``input name -> values`` in natural units).

        ``params`` maps every name in ``param_names`` to a value. Raises
        :class:`fit.errors.FitInputError` naming a missing parameter or input.
        """
        missing = [p for p in self.param_names if p not in params]
        if missing:
            raise FitInputError(f"law {self.name!r}: missing parameters {', '.join(missing)}; "
                                f"needs {', '.join(self.param_names)}")
        needed = self.axes if self.stages is None else self.stages[0].axes
        absent = [a for a in needed if a not in X]
        if absent:
            raise FitInputError(f"law {self.name!r}: missing inputs {', '.join(absent)}; needs {', '.join(needed)}")
        arrays = {k: np.asarray(v, dtype=float) for k, v in X.items()}
        return np.asarray(self.fn({p: params[p] for p in self.param_names}, arrays), dtype=float)


LawFactory = Callable[[Sequence[LawInput] | None], Law]
_REGISTRY: dict[str, LawFactory] = {}

HYPOTHESES: dict[str, str] = {
    "additive": "quality axes add their own saturating gains, independent of diversity",
    "multiplicative": "quality scales the diversity gains (low groundedness discounts what diversity buys)",
}
"""The two hypotheses of the research plan (seed 003) and the law of each."""


def register_law(law: Law | LawFactory, name: str | None = None, *, replace: bool = False) -> None:
    """Register a :class:`Law` (fixed inputs) or a factory ``inputs -> Law`` under ``name``."""
    if isinstance(law, Law):
        fixed = law
        key = name or law.name

        def factory(inputs: Sequence[LawInput] | None = None) -> Law:
            return fixed
    else:
        if name is None:
            raise ValueError("register_law: a factory needs a name")
        key, factory = name, law
    if key in _REGISTRY and not replace:
        raise ValueError(f"law {key!r} is already registered (pass replace=True)")
    _REGISTRY[key] = factory


def known_laws() -> list[str]:
    """Registered law names, sorted."""
    return sorted(_REGISTRY)


def get_law(name: str, inputs: Sequence[LawInput] | None = None) -> Law:
    """The law registered as ``name``, specialised to ``inputs`` when the form takes any.

    ``inputs=None`` uses :func:`default_inputs` (model size plus the default preset's six
    axes). Unknown names raise :class:`fit.errors.UnknownLawError` listing the known ones.
    """
    if name not in _REGISTRY:
        import difflib

        close = difflib.get_close_matches(name, _REGISTRY, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise UnknownLawError(f"unknown law {name!r}{hint}; known laws: {', '.join(known_laws())}")
    return _REGISTRY[name](inputs)


def law_of(fit: FitResult) -> Law:
    """Rebuild the law a stored :class:`FitResult` was fitted with (same inputs, normalisation, residual scale)."""
    from dataclasses import replace

    law = get_law(fit.law, fit.inputs)
    if law.stages is not None:
        return law
    return replace(law, residual_scale=fit.residual_scale, residual_unit=fit.residual_unit,
                   huber_delta=fit.huber_delta)


def default_inputs() -> tuple[LawInput, ...]:
    """Model size and the six axes of ``toolscale/presets/default.toml`` with their design ranges."""
    return (
        LawInput(name="N", kind="size", ref=1e5),
        LawInput(name="tool_diversity", kind="diversity", ref=4.0),
        LawInput(name="task_count", kind="diversity", ref=64.0),
        LawInput(name="db_diversity", kind="diversity", ref=1.0),
        LawInput(name="repair_rate", kind="quality", lo=0.0, hi=1.0),
        LawInput(name="coverage_quota", kind="quality", lo=0.0, hi=0.2),
        LawInput(name="support_depth", kind="quality", lo=1.0, hi=4.0),
    )


def normalise(inp: LawInput, x: np.ndarray) -> np.ndarray:
    """``x / ref`` for ratio inputs, ``(x - lo) / (hi - lo)`` for quality inputs, ``x`` for metrics."""
    if inp.kind == "quality":
        return (x - inp.lo) / (inp.hi - inp.lo)
    if inp.kind == "metric":
        return x
    return x / inp.ref


# ---------------------------------------------------------------------------
# chinchilla
# ---------------------------------------------------------------------------
def _chinchilla(inputs: Sequence[LawInput] | None = None) -> Law:
    """``L = E + A / N^alpha + B / D_eff^beta`` (Hoffmann et al. 2022, Approach 3), with data axes.

    With inputs ``N`` and ``D`` only, this is the published form: amplitudes ``E, A, B``
    fitted as logs; the starting grid is the Epoch AI replication's (Besiroglu et al. 2024,
    arXiv 2404.10102): ``alpha, beta in {0, 0.5, ..., 2}``, ``log E in {-1, -0.5, ..., 1}``,
    ``log A, log B in {0, 5, ..., 25}`` (0 replaced by 0.02 because the bounds exclude it);
    Huber delta ``1e-3`` on log loss. A ``unique_tokens`` input, or diversity and quality
    axes, make it the effective-data law of :func:`_effective` (quality as a multiplier).
    """
    if inputs is not None and any(i.kind in ("unique_tokens", "diversity", "quality") for i in inputs):
        return _effective("chinchilla", "loss", "multiplier")(inputs)
    if inputs is None:
        inputs = (LawInput(name="N", kind="size"), LawInput(name="D", kind="tokens"))
    n_in = _one(inputs, "size", "chinchilla")
    d_in = _one(inputs, "tokens", "chinchilla")

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


def _effective(name: str, target: Target, quality: str, diversity: str = "multiplier",
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
        size = _one(inputs, "size", name)
        toks = _one(inputs, "tokens", name)
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
        if is_loss:
            names = ["E", "A", "alpha", "B", "beta"]
            bounds: dict[str, tuple[float, float]] = {
                "E": (1e-3, 50.0), "A": (1e-3, 1e14), "alpha": (1e-3, 3.0), "B": (1e-3, 1e14), "beta": (1e-3, 3.0)}
            big = size.ref == 1.0  # raw N and D: published magnitudes
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
        if uniq_in is not None or unique:
            names.append("R_star")
            bounds["R_star"] = (0.05, 1e3)
            grid["R_star"] = (1.0, 10.0) if unique else (2.0, 10.0, 40.0)
        if unique:
            names.append("U0")
            bounds["U0"] = (1e-4, 1e8)
            grid["U0"] = (1.0, 10.0, 100.0) if uniq_in is None else (0.1, 1.0)
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

        head = "L = E + A n^-alpha + B d_eff^-beta" if is_loss else "S = S_max - A n^-alpha - B d_eff^-beta"
        if overfit:
            head += " + C R^gamma" if is_loss else " - C R^gamma"
        if term:
            head += " - Q(q)" if is_loss else " + Q(q)"
        parts = ["D'" if uniq_in is not None or unique else "D"] + [f"m_{a.name}" for a in mult]
        formula = f"{head}; d_eff = {' * '.join(parts)}"
        if uniq_in is not None or unique:
            formula += "; D' = U + U R* (1 - exp(-R / R*)), R = D / U - 1"
        if unique:
            formula += "; U = U0" + ("" if uniq_in is None else " U_tokens") + "".join(
                f" t_{a.name}^rho_{a.name}" for a in shapers)
        if mult:
            formula += "; m = 1 + c (1 - t^-gamma)"
        logs = frozenset(p for p in names if p in ("E", "A", "B", "R_star", "U0", "C") or p.split("_")[0] in ("c", "H"))
        return Law(name=name, target=target, inputs=(size, toks, *uniq, *div, *qual), param_names=tuple(names),
                   bounds=bounds, start_grid=grid, fn=fn, log_params=logs, formula=formula,
                   huber_delta=1e-3 if is_loss else 0.05)

    factory.__doc__ = f"The {name!r} effective-data law (see :func:`_effective`)."
    return factory


def _one(inputs: Sequence[LawInput], kind: str, law: str) -> LawInput:
    found = [i for i in inputs if i.kind == kind]
    if len(found) != 1:
        raise FitInputError(f"law {law!r} needs exactly one {kind!r} input, got {len(found)}")
    return found[0]


# ---------------------------------------------------------------------------
# score laws over model size and data axes
# ---------------------------------------------------------------------------
def _split_inputs(inputs: Sequence[LawInput] | None, law: str) -> tuple[LawInput, list[LawInput], list[LawInput]]:
    inputs = tuple(default_inputs() if inputs is None else inputs)
    size = _one(inputs, "size", law)
    div = [i for i in inputs if i.kind == "diversity"]
    qual = [i for i in inputs if i.kind == "quality"]
    other = [i.name for i in inputs if i.kind not in ("size", "diversity", "quality")]
    if other:
        raise FitInputError(f"law {law!r} takes model size, diversity and quality inputs; "
                            f"cannot use {', '.join(other)}")
    return size, div, qual


def _saturating(inputs: Sequence[LawInput] | None = None) -> Law:
    """``S = S_max - sum_k A_k t_k^(-alpha_k)`` over model size and every axis.

    ``t = x / ref`` for size and diversity inputs, ``t = 1 + w`` for quality inputs.
    Amplitudes ``A_k`` are fitted as logs.
    """
    size, div, qual = _split_inputs(inputs, "saturating")
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


def _hypothesis(kind: str, sized: bool = False) -> LawFactory:
    """The research plan's forms; ``sized=True`` scales the diversity gain by ``n^delta`` (``{kind}_nx``).

    ``G(x) n^delta`` lets diversity be worth more (``delta > 0``) or less to a larger model: the
    N x data term the separable forms lack. ``delta = 0`` is the plain form, so the two nest.
    """
    label = f"{kind}_nx" if sized else kind

    def factory(inputs: Sequence[LawInput] | None = None) -> Law:
        size, div, qual = _split_inputs(inputs, label)
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


# ---------------------------------------------------------------------------
# two-step: loss from N and D, then a sigmoid to accuracy (OLMo model ladder)
# ---------------------------------------------------------------------------
def _sigmoid(inputs: Sequence[LawInput] | None = None) -> Law:
    """``S = lo + (hi - lo) / (1 + exp(k (L - L0)))``: accuracy falls as the loss ``L`` rises (``k > 0``).

    ``0 <= lo`` and ``hi <= 1`` (an accuracy); the floor ``lo`` is held at chance accuracy with
    ``fit --floor`` (OLMo model ladder, Bhagia et al. 2024).
    """
    if inputs is None:
        inputs = (LawInput(name="L", kind="metric"),)
    loss_in = _one(inputs, "metric", "sigmoid")

    def fn(p: Params, X: ArrayMap) -> np.ndarray:
        z = np.clip(p["k"] * (X[loss_in.name] - p["L0"]), -60.0, 60.0)
        return p["lo"] + (p["hi"] - p["lo"]) / (1.0 + np.exp(z))

    return Law(name="sigmoid", target="score", inputs=(loss_in,), param_names=("lo", "hi", "k", "L0"),
               bounds={"lo": (0.0, 1.0), "hi": (0.0, 1.0), "k": (1e-2, 100.0), "L0": (1e-3, 50.0)},
               start_grid={"lo": (0.0, 0.2), "hi": (0.6, 1.0), "k": (1.0, 5.0, 20.0), "L0": (0.5, 1.5, 3.0, 6.0)},
               fn=fn, log_params=frozenset({"k", "L0"}), formula="S = lo + (hi - lo) / (1 + exp(k (L - L0)))")


def _two_step(inputs: Sequence[LawInput] | None = None) -> Law:
    """Chinchilla loss from ``(N, D)``, then :func:`_sigmoid` to the score (OLMo ladder's two steps).

    Fitting needs the observed loss as the input ``L`` of each point (stage 2) and fits
    stage 1 on ``L`` itself; prediction chains ``sigmoid(chinchilla(N, D))``.
    """
    base = tuple(i for i in (inputs or ()) if i.kind in ("size", "tokens")) or None
    loss_name = next((i.name for i in (inputs or ()) if i.kind == "metric"), "L")
    stage1 = _chinchilla(base)
    stage2 = _sigmoid((LawInput(name=loss_name, kind="metric"),))

    def fn(p: Params, X: ArrayMap) -> np.ndarray:
        loss = stage1.fn({k: p[k] for k in stage1.param_names}, X)
        return stage2.fn({k: p[k] for k in stage2.param_names}, {loss_name: loss})

    names = stage1.param_names + stage2.param_names
    return Law(name="two_step", target="score", inputs=(*stage1.inputs, *stage2.inputs), param_names=names,
               bounds={**stage1.bounds, **stage2.bounds}, start_grid={**stage1.start_grid, **stage2.start_grid},
               fn=fn, log_params=stage1.log_params | stage2.log_params,
               formula=f"{stage1.formula}; {stage2.formula}", stages=(stage1, stage2, loss_name))


register_law(_chinchilla, "chinchilla")
register_law(_effective("chinchilla_qterm", "loss", "term"), "chinchilla_qterm")
register_law(_effective("effective", "score", "multiplier"), "effective")
register_law(_effective("effective_qterm", "score", "term"), "effective_qterm")
register_law(_effective("chinchilla_unique", "loss", "multiplier", "unique"), "chinchilla_unique")
register_law(_effective("effective_unique", "score", "multiplier", "unique"), "effective_unique")
register_law(_effective("chinchilla_overfit", "loss", "multiplier", "unique", overfit=True), "chinchilla_overfit")
register_law(_saturating, "saturating")
for _kind in ("additive", "multiplicative", "interaction"):
    register_law(_hypothesis(_kind), _kind)
    register_law(_hypothesis(_kind, sized=True), f"{_kind}_nx")
register_law(_sigmoid, "sigmoid")
register_law(_two_step, "two_step")
