"""The law registry: :class:`Law` (a named form as data plus one vectorised formula), registration and lookup.

The forms themselves live in :mod:`fit.law_effective` (effective-data laws) and :mod:`fit.law_forms` (Chinchilla,
saturating, the research plan's hypotheses, the two-step ladder); :mod:`fit.laws` registers them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fit.errors import FitInputError, UnknownLawError
from fit.models import FitResult, LawInput, Target

__all__ = ["Law", "LawFactory", "Params", "ArrayMap", "register_law", "get_law", "law_of", "known_laws",
           "default_inputs", "normalise", "HYPOTHESES", "one_input", "split_inputs"]

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
    ideal_point : for a two-step law, ``(intermediate, score)`` added to stage 2's data in every fit (the OLMo
        ladder's "ideal point", a loss of 0 at accuracy 1); the ceiling stays free, unlike a held ``hi``.
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
    ideal_point: tuple[float, float] | None = None

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


def one_input(inputs: Sequence[LawInput], kind: str, law: str) -> LawInput:
    """The one input of ``kind`` among ``inputs``; FitInputError naming ``law`` otherwise."""
    found = [i for i in inputs if i.kind == kind]
    if len(found) != 1:
        raise FitInputError(f"law {law!r} needs exactly one {kind!r} input, got {len(found)}")
    return found[0]


def split_inputs(inputs: Sequence[LawInput] | None, law: str) -> tuple[LawInput, list[LawInput], list[LawInput]]:
    """``(size, diversity inputs, quality inputs)`` of a score law over model size and data axes."""
    inputs = tuple(default_inputs() if inputs is None else inputs)
    size = one_input(inputs, "size", law)
    div = [i for i in inputs if i.kind == "diversity"]
    qual = [i for i in inputs if i.kind == "quality"]
    other = [i.name for i in inputs if i.kind not in ("size", "diversity", "quality")]
    if other:
        raise FitInputError(f"law {law!r} takes model size, diversity and quality inputs; "
                            f"cannot use {', '.join(other)}")
    return size, div, qual
