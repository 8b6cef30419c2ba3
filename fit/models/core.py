"""Law inputs, fit points and the fitted law (:class:`FitResult`) with its held-out check and law choice."""

from __future__ import annotations

import hashlib
import json
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator


__all__ = ["CVFold", "FitResult", "HeldoutMetrics", "HeldoutPoint", "InputKind", "LawCandidate", "LawInput", "LawSelection", "MIN_POINTS_PER_PARAM", "ParamInterval", "Points", "ResidualScale", "Target", "Truth", "fit_warnings"]


Target = Literal["score", "loss"]
"""``score``: higher is better, residuals on the raw scale; ``loss``: positive, residuals on the log scale."""

InputKind = Literal["size", "tokens", "unique_tokens", "flops", "diversity", "quality", "metric"]
"""How a law input enters a law (see :class:`LawInput`); ``unique_tokens`` is U of a data-constrained law."""

ResidualScale = Literal["log", "relative", "raw"]
"""Residuals a fit minimises: ``log`` (``log y - log f``: losses, and small positive scores),
``relative`` (``(y - f) / scale``, the Huber delta relative to the metric's spread) or ``raw`` (``y - f``)."""


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
    """``size`` (N), ``tokens`` (D), ``unique_tokens`` (U), ``flops`` (C), ``diversity`` or ``quality`` axis, or ``metric``
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
    n_skipped: int = 0
    """Done runs left out because they lack the target metric (an empty imported cell)."""
    steps: list[float] = Field(default_factory=list)
    """Training step of each point's checkpoint (empty: every point is a run's final checkpoint)."""
    final: list[bool] = Field(default_factory=list)
    """Per point: is it its run's final checkpoint (empty: all are)."""
    checkpoint_of: list[str] = Field(default_factory=list)
    """Per point: the run its checkpoint belongs to (empty: every point is its own run); the bootstrap
    resamples runs, all their checkpoints together."""
    weights: list[float] = Field(default_factory=list)
    """Per point: the standard error of ``y`` (``import-runs --weight``), in ``y``'s unit; residuals are divided
    by it relative to its median (empty: unweighted)."""

    @model_validator(mode="after")
    def _lengths(self) -> "Points":
        n = len(self.y)
        for name, col in self.inputs.items():
            if len(col) != n:
                raise ValueError(f"input {name!r} has {len(col)} values for {n} points")
        for name in ("run_ids", "split", "groups", "flops", "steps", "final", "checkpoint_of", "weights"):
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
            "flops": take(self.flops), "steps": take(self.steps), "final": take(self.final),
            "checkpoint_of": take(self.checkpoint_of), "weights": take(self.weights)})

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
    relative_mae: float | None = None
    """MAE over the mean ``|actual|`` of the held-out runs (dimensionless; Choshen et al. 2024's
    absolute relative error is the per-run version)."""
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
    are_seed_means: float | None = None
    """Absolute relative error on seed means (Choshen et al. 2024's ARE): each held-out recipe's runs averaged
    over their seeds, ``mean_g |mean pred_g - mean actual_g| / |mean actual_g|`` over the recipes ``g``."""
    recipes: int = 0
    """Held-out recipes (seed-mean groups) behind ``are_seed_means``."""
    points: list[HeldoutPoint] = Field(default_factory=list)
    """Per-run detail."""


class LawCandidate(_Frozen):
    """One candidate form of ``--law auto``'s choice (:func:`fit.selection.select_law`)."""

    label: str
    """What the choice calls it (``chinchilla`` on N and D only is ``chinchilla_ND``)."""
    law: str
    """Registered law name."""
    n_params: int
    """Free parameters."""
    cv_mae: float | None = None
    """MAE on the largest fitted size when fitted on the smaller ones, metric units (None: no CV, or it failed)."""
    cv_relative_mae: float | None = None
    """``cv_mae`` over the mean observed value there (the largest CV fold: the choice's criterion)."""
    cv_relative_mae_se: float | None = None
    """Standard error of ``cv_relative_mae`` (SD of the runs' absolute errors over sqrt(n), over the mean)."""
    cv_fold_relative_mae: list[float | None] = Field(default_factory=list)
    """Relative MAE on each rolling CV fold (:attr:`LawSelection.folds` order); None where that fit failed."""
    cv_fold_relative_mae_se: list[float | None] = Field(default_factory=list)
    """Its standard error on each fold."""
    bic: float
    """BIC of the fit the score came from."""
    converged: bool = True
    """Whether that fit converged."""


class CVFold(_Frozen):
    """One fold of rolling rung cross-validation."""

    fit_sizes: list[float]
    """Model sizes N fitted."""
    predicted_size: float
    """The fitted size predicted."""
    decades: float
    """``log10(predicted_size / max(fit_sizes))``: the reach of the fold."""
    chosen: str | None = None
    """Nested CV: the form chosen on the folds below this one (None: no fold below it)."""
    excess: float | None = None
    """The error one rung up beyond the runs' noise, ``sqrt(max(0, rms^2 - noise^2))`` (residual units), of the
    form the correction uses on this fold."""


class LawSelection(_Frozen):
    """How ``--law auto`` chose the form, using the ``fit`` runs only."""

    criterion: Literal["rung_cv", "bic"]
    """``rung_cv``: lowest relative MAE one rung up; ``bic``: lowest BIC (fewer than 3 fitted sizes)."""
    predicted_size: float | None
    """The fitted size predicted by the rung CV (None for ``bic``)."""
    fit_sizes: list[float]
    """Sizes the CV fits saw."""
    candidates: list[LawCandidate]
    """Every candidate with its score."""
    chosen: str
    """Label of the chosen candidate."""
    extrapolation_sd: float | None = None
    """The chosen form's CV error in excess of the runs' noise, ``sqrt(max(0, cv_rms^2 - cv_noise_sd^2))``,
    per decade of model size (log residuals for a loss); None for ``bic``."""
    cv_rms: float | None = None
    """RMS of the chosen form's CV residuals at the predicted size (noise included); None for ``bic``."""
    cv_noise_sd: float | None = None
    """Residual SD of the chosen form's CV fit (the runs' noise, already in every interval); None for ``bic``."""
    effect_slope: float | None = None
    """Slope of the observed on the predicted differences between the predicted size's runs (1: the law
    gets them right; :func:`fit.selection.effect_slope`); None for ``bic``."""
    effect_slope_se: float | None = None
    """Standard error of ``effect_slope``."""
    effect_sd: float | None = None
    """Relative error of a predicted difference between runs per decade of N, beyond the slope's noise:
    ``sqrt(max(0, (effect_slope - 1)^2 - effect_slope_se^2)) / decades``; None for ``bic``."""
    effect_size: float | None = None
    """The predicted size of the fold the slope was read on: the largest whose runs' predictions differ
    (replicates of one recipe have no differences to check); None when no fold has any."""
    folds: list[CVFold] = Field(default_factory=list)
    """Every rolling CV fold (fit the sizes below one fitted size, predict it), smallest predicted size first."""
    correction: Literal["nested", "runner_up", "none"] | None = None
    """How ``extrapolation_sd`` is corrected for having chosen the form on the same folds: ``nested`` (each
    outer fold's form chosen on the folds below it), ``runner_up`` (the larger of the chosen and the runner-up
    form's errors, when no fold has one below it), ``none`` (a single candidate); None for ``bic``."""
    extrapolation_sd_chosen: float | None = None
    """The chosen form's own pooled CV excess per decade, before the selection correction (biased low)."""


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
    """True when the best start's optimizer converged (a parameter at a bound is listed in ``at_bounds`` and
    warned about: :meth:`warnings`)."""
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
    point_target: str = "final"
    """What each run contributed (:mod:`fit.targets`): ``final`` (its last model), ``envelope`` (its checkpoint
    with the best validation value, scored on the test benchmark) or ``checkpoints`` (every scored checkpoint
    past the first 10% of training)."""
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
    residual_scale: ResidualScale = "raw"
    """Residuals minimised (``log`` for losses; see :data:`ResidualScale`). ``huber_delta`` is in these units;
    ``residual_sd`` and ``replicate_sd`` are in log units for ``log``, metric units otherwise."""
    residual_unit: float = 1.0
    """For ``relative`` residuals, the metric's scale the residuals are divided by (its SD over the fitted runs),
    in metric units; 1 otherwise."""
    n_skipped: int = 0
    """Done runs skipped because they lack the fitted metric (e.g. an empty imported cell)."""
    lack_of_fit: LackOfFit | None = None  # noqa: F821 (fit.models.predictions resolves it)
    """Residual SD against replicate SD (None without replicated seeds)."""
    interaction: InteractionResult | None = None  # noqa: F821 (fit.models.predictions resolves it)
    """The additive-vs-interaction verdict this fit was chosen by (None when not run)."""
    form_weight: float = 1.0
    """This form's weight among the candidate forms (BIC weight); 1 when no other form was fitted."""
    forms: list[FitResult] = Field(default_factory=list)
    """The other candidate forms, each with its ``form_weight``: prediction intervals mix them by weight
    (:func:`fit.predict.predict_points`)."""
    rolling: list[RollingStep] = Field(default_factory=list)  # noqa: F821 (fit.models.predictions resolves it)
    """Rolling validation steps (``--holdout rungs:K``): fit the smallest sizes, predict the next one."""
    selection: LawSelection | None = None
    """How ``--law auto`` chose this form on the fitted runs (None when the law was named)."""
    extrapolation_sd: float | None = None
    """Extra prediction error per decade of N above ``max_fitted_n``, in residual units (the rung CV's
    :attr:`LawSelection.extrapolation_sd`); None: intervals carry parameter and residual noise only."""
    max_fitted_n: float | None = None
    """Largest fitted model size N (where ``extrapolation_sd`` starts to count)."""
    effect_sd: float | None = None
    """Relative error of a predicted difference between runs (a gain) per decade of N above
    ``max_compared_n`` (:attr:`LawSelection.effect_sd`); None: gain intervals carry parameter draws only."""
    max_compared_n: float | None = None
    """Largest rung where the law's differences between runs were checked (``effect_sd`` counts decades from
    it): a size with at least :data:`fit.selection.MIN_RUNG_RUNS` fitted runs whose predictions differ
    (:attr:`LawSelection.effect_size`; the largest rung when there is none). A lone run at a larger size
    moves ``max_fitted_n``, not this. None (a fit stored before it): ``max_fitted_n``."""
    max_fitted_flops: float | None = None
    """Training FLOPs of the largest fitted run (None when unknown): ``predict`` measures extrapolation by it."""
    fitted_ranges: dict[str, tuple[float, float]] = Field(default_factory=dict)
    """``input -> (min, max)`` over the fitted points, natural units (``predict`` flags inputs beyond them)."""
    weighted: bool = False
    """True when residuals were weighted by the runs' standard errors (``import-runs --weight``)."""
    axis_extrapolation_sd: dict[str, float] = Field(default_factory=dict)
    """Per diversity axis, the law's error per doubling past its largest tested level (residual units), from a
    refit without the runs at that level (:mod:`fit.axis_extrapolation`); ``allocate`` widens the intervals of
    plans that go past it. Empty: not measured (fewer than 3 levels, or a fit made before it was)."""
    envelope_at_first: dict[str, int] = Field(default_factory=dict)
    """``split -> points`` (``fit``, ``heldout``) fitted at the early-stopped envelope whose chosen checkpoint is
    their run's first kept one (:func:`fit.targets.at_first_checkpoint`): their optimum may lie earlier, so the
    envelope overstates their best loss. Empty: none, or not an envelope fit."""
    options: dict[str, float | str] = Field(default_factory=dict)
    """Fit options that shape the data or the law (``smooth``, ``skip_first``, ``ceiling``, ``floor``, ``ideal_point``,
    ``repetition``, ``stage1_metric``)."""

    def warnings(self) -> list[str]:
        """What a reader of this fit must know (:func:`fit.models.fit_warnings`)."""
        return fit_warnings(self)

    @model_validator(mode="before")
    @classmethod
    def _default_scale(cls, data):
        """Fits stored before ``residual_scale`` existed: log residuals for a loss, raw for a score."""
        if isinstance(data, dict) and "residual_scale" not in data:
            data = {**data, "residual_scale": "log" if data.get("target") == "loss" else "raw"}
        return data

    def draws(self) -> list[dict[str, float]]:
        """Bootstrap parameter draws, or ``[params]`` when none were computed."""
        return list(self.bootstrap) if self.bootstrap else [dict(self.params)]


MIN_POINTS_PER_PARAM = 5
"""Fewer fitted runs per free parameter than this and a fit is weakly determined (warned)."""


def _binom_cdf(k: int, n: int, p: float) -> float:
    """``P(X <= k)`` for ``X ~ Binomial(n, p)``."""
    import math

    return sum(math.comb(n, i) * p ** i * (1 - p) ** (n - i) for i in range(0, k + 1))


def fit_warnings(fit: "FitResult") -> list[str]:
    """Plain-language warnings: parameters at bounds, held-out coverage below nominal beyond binomial noise
    (one-sided ``P(X <= k) < 0.05`` for ``k`` of ``n`` runs inside their intervals at the nominal level), lack
    of fit, and fewer than :data:`MIN_POINTS_PER_PARAM` fitted runs per free parameter."""
    out = []
    free = [p for p in fit.at_bounds if p not in fit.fixed]
    if free:
        out.append(f"parameters at a bound of their range: {', '.join(free)} (not identified by these runs; their "
                   "intervals and anything that extrapolates through them are unreliable)")
    h = fit.heldout
    if h is not None and h.interval_coverage is not None and h.n:
        k = round(h.interval_coverage * h.n)
        p = _binom_cdf(k, h.n, h.interval_level)
        if p < 0.05:
            out.append(f"held-out coverage {k} of {h.n} ({h.interval_coverage:.0%}) is below the nominal "
                       f"{h.interval_level:.0%} beyond binomial noise (P = {p:.2g}): the intervals are too narrow")
    if fit.lack_of_fit is not None and fit.lack_of_fit.flagged:
        lof = fit.lack_of_fit
        out.append(f"lack of fit: residual SD is {lof.ratio:.1f}x the replicate SD (p = {lof.p_value:.2g}): the "
                   "law misses structure the runs have")
    early = fit.envelope_at_first
    if early:
        n_held = h.n if h is not None else 0
        held = f" and {early.get('heldout', 0)} of {n_held} held out" if n_held else ""
        out.append(f"{early.get('fit', 0)} of {fit.n_points} fitted runs{held} are best on validation at their first "
                   "kept checkpoint: their optimum may lie earlier, so the envelope overstates their best loss; keep "
                   "earlier checkpoints ([eval] checkpoint_spacing = \"log\", or more checkpoints)")
    if fit.n_params and fit.n_points < MIN_POINTS_PER_PARAM * fit.n_params:
        out.append(f"{fit.n_params} parameters on {fit.n_points} runs ({fit.n_points / fit.n_params:.1f} per "
                   f"parameter, fewer than {MIN_POINTS_PER_PARAM}): the fit is weakly determined")
    return out


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
