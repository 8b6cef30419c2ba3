"""Contracts of fit/: the points a law is fitted to, and the frozen result of a fit.

Imports only pydantic, numpy and the standard library. A :class:`FitResult` is
stored in the registry as JSON (``Registry.save_fit(payload=fit.model_dump(mode="json"))``)
and loaded back with ``FitResult.model_validate(payload)``; the allocator rebuilds
the law with :func:`fit.laws.law_of` and predicts with ``law.predict(fit.params, X)``.
"""

from __future__ import annotations

import hashlib
import json
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "Target",
    "InputKind",
    "LawInput",
    "Points",
    "ParamInterval",
    "HeldoutPoint",
    "HeldoutMetrics",
    "FitResult",
    "Truth",
    "HypothesisFit",
    "InteractionResult",
    "FitRequest",
    "ExperimentFit",
]

Target = Literal["score", "loss"]
"""``score``: higher is better, residuals on the raw scale; ``loss``: positive, residuals on the log scale."""

InputKind = Literal["size", "tokens", "flops", "diversity", "quality", "metric"]
"""How a law input enters a law (see :class:`LawInput`)."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


class LawInput(_Frozen):
    """One input variable of a law, with the fixed normalisation it is used under.

    Ratio inputs (``size``, ``tokens``, ``flops``, ``diversity``) enter as
    ``t = x / ref``; ``quality`` inputs enter as ``w = (x - lo) / (hi - lo)``.
    The normalisation is part of the law (stored with every fit), so parameters
    fitted under it predict correctly for any new point.
    """

    name: str
    """Key in the ``X`` mapping: ``N``, ``D``, ``C`` or an axis name."""
    kind: InputKind
    """``size`` (N), ``tokens`` (D), ``flops`` (C), ``diversity`` or ``quality`` axis, or ``metric``
    (an observed intermediate such as the loss of a two-step law; used as is)."""
    ref: float = Field(default=1.0, gt=0)
    """Reference level of ratio inputs, in the input's unit (``t = x / ref``)."""
    lo: float = 0.0
    """Lowest design level of a quality input, in its unit (``w = 0`` there)."""
    hi: float = 1.0
    """Highest design level of a quality input, in its unit (``w = 1`` there)."""

    @model_validator(mode="after")
    def _check(self) -> "LawInput":
        if self.kind == "quality" and not self.hi > self.lo:
            raise ValueError(f"quality input {self.name!r}: hi ({self.hi}) must exceed lo ({self.lo})")
        return self


class Points(_Frozen):
    """The data a law is fitted to: one entry per finished run."""

    inputs: dict[str, list[float]]
    """Input name (``N``, ``D``, ``C`` or an axis) -> value per run, in the input's unit."""
    y: list[float]
    """Observed value per run (a score in [0, 1] or a positive loss)."""
    target: Target = "score"
    """What ``y`` is (decides the residual scale)."""
    run_ids: list[str] = Field(default_factory=list)
    """Run id per point (empty for anonymous data)."""
    split: list[Literal["fit", "heldout"]] = Field(default_factory=list)
    """Split per point (empty means every point is ``fit``)."""
    groups: list[str] = Field(default_factory=list)
    """Replicate group per point: runs differing only in seed share a group (noise estimate)."""
    flops: list[float] = Field(default_factory=list)
    """Training FLOPs per point (for the extrapolation factor; empty if unknown)."""
    experiment: str = ""
    """Experiment name."""
    benchmark: str = ""
    """Benchmark name."""
    metric: str = "score"
    """Metric name (``score``, ``loss``...)."""
    simulated: bool = False
    """True when the points come from ``toolscale simulate`` (labelled in every report)."""

    @model_validator(mode="after")
    def _lengths(self) -> "Points":
        n = len(self.y)
        for name, col in self.inputs.items():
            if len(col) != n:
                raise ValueError(f"input {name!r} has {len(col)} values for {n} points")
        for name in ("run_ids", "split", "groups", "flops"):
            col = getattr(self, name)
            if col and len(col) != n:
                raise ValueError(f"{name} has {len(col)} values for {n} points")
        return self

    @property
    def n(self) -> int:
        """Number of points."""
        return len(self.y)

    def X(self) -> dict[str, np.ndarray]:
        """Inputs as float arrays."""
        return {k: np.asarray(v, dtype=float) for k, v in self.inputs.items()}

    def y_array(self) -> np.ndarray:
        """``y`` as a float array."""
        return np.asarray(self.y, dtype=float)

    def split_array(self) -> np.ndarray:
        """Split per point as a string array (``fit`` where none was given)."""
        return np.asarray(self.split if self.split else ["fit"] * self.n)

    def subset(self, mask: "np.ndarray | list[bool] | list[int]") -> "Points":
        """The points selected by a boolean mask or an index array (repeats allowed)."""
        idx = np.asarray(mask)
        if idx.dtype == bool:
            idx = np.flatnonzero(idx)
        idx = idx.astype(int)

        def take(col: list) -> list:
            return [col[i] for i in idx] if col else []

        return self.model_copy(update={
            "inputs": {k: take(v) for k, v in self.inputs.items()}, "y": take(self.y),
            "run_ids": take(self.run_ids), "split": take(self.split), "groups": take(self.groups),
            "flops": take(self.flops)})

    def data_hash(self) -> str:
        """SHA-256 (first 16 hex digits) of the inputs, values and run ids: same data, same hash."""
        payload = json.dumps({"inputs": {k: [float(x) for x in v] for k, v in sorted(self.inputs.items())},
                              "y": [float(x) for x in self.y], "run_ids": list(self.run_ids),
                              "target": self.target}, sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()[:16]


class ParamInterval(_Frozen):
    """Bootstrap confidence interval of one parameter."""

    estimate: float
    """Point estimate from the full data."""
    lo: float
    """Lower percentile bound."""
    hi: float
    """Upper percentile bound."""
    se: float
    """Bootstrap standard deviation."""
    level: float = 0.95
    """Confidence level of ``[lo, hi]``."""


class HeldoutPoint(_Frozen):
    """One held-out run: actual vs predicted, with its prediction interval."""

    run_id: str
    """Run id."""
    actual: float
    """Observed value."""
    predicted: float
    """Law prediction (parameters fitted without this run)."""
    lo: float | None = None
    """Lower bound of the prediction interval (None without bootstrap)."""
    hi: float | None = None
    """Upper bound of the prediction interval (None without bootstrap)."""
    flops: float | None = None
    """Training FLOPs of the run."""


class HeldoutMetrics(_Frozen):
    """How well the law fitted on ``fit`` runs predicts the ``heldout`` runs."""

    n: int
    """Held-out runs."""
    mae: float
    """Mean absolute error, in the target's unit (score points or loss)."""
    max_error: float
    """Largest absolute error."""
    rmse: float
    """Root mean squared error."""
    interval_coverage: float | None = None
    """Share of held-out runs inside their prediction interval (None without bootstrap)."""
    interval_level: float = 0.90
    """Nominal level of the prediction intervals."""
    extrapolation_factor: float | None = None
    """Largest held-out FLOPs / largest fitted FLOPs (None if FLOPs unknown)."""
    points: list[HeldoutPoint] = Field(default_factory=list)
    """Per-run detail."""


class FitResult(_Frozen):
    """A fitted law: named parameters, diagnostics, uncertainty and held-out checks.

    Everything a consumer needs to predict is here: ``law`` (registry name),
    ``inputs`` (the law's inputs and their normalisation) and ``params``.
    """

    law: str
    """Registry name of the law (:func:`fit.laws.get_law`)."""
    inputs: list[LawInput]
    """The law's inputs with the normalisation the parameters are fitted under."""
    params: dict[str, float]
    """Fitted parameters by name, in natural units (amplitudes not logged)."""
    target: Target
    """``score`` (raw residuals) or ``loss`` (log residuals)."""
    loss: float
    """Final objective: mean Huber loss of the residuals."""
    converged: bool
    """True when the best start's optimizer converged and no parameter sits on a bound."""
    message: str = ""
    """Optimizer message and diagnostics (which parameters hit a bound...)."""
    at_bounds: list[str] = Field(default_factory=list)
    """Parameters within 1e-6 (relative) of a bound."""
    fixed: dict[str, float] = Field(default_factory=dict)
    """Parameters held at a value instead of fitted (e.g. the size exponent when the fitted runs
    have fewer than 3 model sizes); they are in ``params`` too."""
    priors: dict[str, tuple[float, float]] = Field(default_factory=dict)
    """``name -> (low, high)``: fixed parameters the bootstrap draws uniformly from this range."""
    n_points: int
    """Points fitted."""
    n_params: int
    """Free parameters."""
    data_hash: str
    """:meth:`Points.data_hash` of the fitted points."""
    huber_delta: float
    """Huber threshold, in residual units (log units for losses)."""
    n_starts: int
    """Starting points from which L-BFGS-B ran."""
    residual_sd: float
    """Standard deviation of the fit residuals (``sqrt(RSS / (n - k))``), residual units."""
    replicate_sd: float | None = None
    """Pure-noise SD estimated from replicated seeds (pooled within-group SD); None without replicates."""
    log_likelihood: float
    """Gaussian log-likelihood at ``sigma^2 = RSS / n``."""
    aic: float
    """Akaike information criterion ``2k - 2 ll``."""
    bic: float
    """Bayesian information criterion ``k ln n - 2 ll``."""
    bootstrap: list[dict[str, float]] = Field(default_factory=list)
    """Parameter dicts of the bootstrap refits (empty when not computed)."""
    bootstrap_seed: int | None = None
    """Seed of the bootstrap resampling."""
    intervals: dict[str, ParamInterval] = Field(default_factory=dict)
    """95% bootstrap confidence interval per parameter."""
    heldout: HeldoutMetrics | None = None
    """Held-out extrapolation metrics (None when nothing was held out)."""
    holdout_rule: str = "none"
    """``top-flops:F``, ``split`` or ``none``."""
    holdout_source: str = ""
    """Where the split came from: ``stored split column``, ``recomputed over done runs`` or ``none``."""
    experiment: str = ""
    """Experiment name."""
    benchmark: str = ""
    """Benchmark name."""
    metric: str = "score"
    """Metric fitted."""
    simulated: bool = False
    """True when fitted on simulated runs."""
    fit_seconds: float = 0.0
    """Wall time of the point fit, in seconds."""

    def draws(self) -> list[dict[str, float]]:
        """Bootstrap parameter draws, or ``[params]`` when none were computed."""
        return list(self.bootstrap) if self.bootstrap else [dict(self.params)]


class Truth(_Frozen):
    """A known law that ``toolscale simulate`` draws results from."""

    law: str
    """Registry name of the true law."""
    params: dict[str, float]
    """True parameter values by name."""
    noise_sd: float = Field(default=0.015, ge=0.0)
    """SD of the Gaussian noise added to each run's score (score points; log units for a loss)."""
    benchmark: str = "simulated"
    """Benchmark name the simulated scores are stored under."""
    metric: str | None = None
    """Metric name (default: ``loss`` for a loss law, else ``score``)."""
    description: str = ""
    """Where the truth came from (built-in default or a file)."""


class HypothesisFit(_Frozen):
    """One hypothesis' fit in the interaction test."""

    law: str
    """Law name (``additive``, ``multiplicative``, ``interaction``)."""
    params: dict[str, float]
    """Fitted parameters."""
    n_params: int
    """Free parameters k."""
    rss: float
    """Residual sum of squares on the fitted runs."""
    aic: float
    """AIC."""
    bic: float
    """BIC."""
    heldout_mae: float | None = None
    """MAE on held-out runs (None when nothing is held out)."""
    converged: bool = True
    """Optimizer convergence."""


class InteractionResult(_Frozen):
    """Additive vs multiplicative: which hypothesis the data supports, and by how much."""

    fits: dict[str, HypothesisFit]
    """Fit of each law by name."""
    supported: Literal["additive", "multiplicative"]
    """Hypothesis with the lower BIC (equal k: the lower RSS)."""
    strength: Literal["strong", "weak"]
    """``strong`` when the BIC gap exceeds 6 and the likelihood-ratio test agrees."""
    delta_bic: float
    """BIC(other) - BIC(supported) (>= 0)."""
    lr_stat: float
    """Likelihood-ratio statistic of ``interaction`` vs ``additive`` (kappa = 0), 1 df."""
    lr_p: float
    """Its p-value (chi-square, 1 df)."""
    f_stat: float
    """Linearised F statistic (statsmodels OLS, exponents fixed at the additive fit) for the interaction term."""
    f_p: float
    """Its p-value."""
    interaction_coef: float
    """OLS coefficient of the interaction feature ``G(x) Q(q)`` (0 under the additive hypothesis)."""
    gain_ratio: float
    """Effect size: diversity gain at the highest quality / at the lowest (1 = additive), from ``interaction``."""
    gain_ratio_lo: float | None = None
    """Lower 95% bootstrap bound of ``gain_ratio``."""
    gain_ratio_hi: float | None = None
    """Upper 95% bootstrap bound of ``gain_ratio``."""
    n_points: int
    """Runs fitted."""


class FitRequest(_Frozen):
    """What ``toolscale fit`` / ``toolscale report`` asks for (the CLI parses into this)."""

    experiment: str
    """Experiment name."""
    benchmark: str
    """Benchmark whose metric is fitted."""
    metric: str | None = None
    """Metric (default: ``loss`` for loss laws, ``score`` otherwise)."""
    law: str = "auto"
    """Law name, or ``auto``: the hypothesis the interaction test supports (score with diversity and
    quality axes), ``saturating`` (score without quality axes), ``chinchilla`` (loss)."""
    axes: list[str] | None = None
    """Axes entering the law (None: every axis of the experiment)."""
    holdout: str = "top-flops:0.25"
    """Hold-out rule: ``top-flops:F``, ``split`` or ``none`` (see :mod:`fit.holdout`)."""
    n_bootstrap: int = Field(default=200, ge=0)
    """Bootstrap refits (0: no intervals)."""
    huber_delta: float | None = Field(default=None, gt=0)
    """Huber threshold (default: the law's)."""
    n_starts: int = Field(default=8, ge=1)
    """Minimiser runs from the best grid starts."""
    max_grid: int = Field(default=8192, ge=1)
    """Largest starting grid scored."""
    method: Literal["trf", "lbfgsb"] = "trf"
    """Minimiser (see :func:`fit.fitting.fit_params`)."""
    seed: int = 0
    """Seed of grid subsampling and bootstrap."""
    n_jobs: int | None = Field(default=None, ge=1)
    """Bootstrap worker processes (None: every core)."""
    interaction_test: bool = True
    """Run the additive vs multiplicative comparison when the experiment has both axis kinds."""
    interaction_bootstrap: int = Field(default=50, ge=0)
    """Bootstrap refits of the ``interaction`` law for the effect-size interval (at most ``n_bootstrap``)."""


class ExperimentFit(_Frozen):
    """Everything ``fit`` and ``report`` computed for one experiment and benchmark."""

    request: FitRequest
    """The request."""
    fit: FitResult
    """The fit of the chosen law."""
    interaction: InteractionResult | None = None
    """The hypothesis comparison (None without both diversity and quality axes, or for loss laws)."""
    points: Points
    """The points fitted and held out (for plots)."""
