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
    "AxisDecision",
    "DecisionAccuracy",
    "DecisionPoint",
    "Target",
    "InputKind",
    "LawInput",
    "Points",
    "ParamInterval",
    "HeldoutPoint",
    "HeldoutMetrics",
    "FitResult",
    "LawCandidate",
    "CVFold",
    "LawSelection",
    "Truth",
    "HypothesisFit",
    "InteractionResult",
    "FitRequest",
    "ExperimentFit",
    "ResidualScale",
    "LackOfFit",
    "RollingStep",
    "SummaryParam",
    "InteractionSummary",
    "FitSummary",
    "ReportSummary",
    "PointPrediction",
    "Prediction",
    "DomainFit",
    "SharedExponent",
    "JointFit",
]

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

    @model_validator(mode="after")
    def _lengths(self) -> "Points":
        n = len(self.y)
        for name, col in self.inputs.items():
            if len(col) != n:
                raise ValueError(f"input {name!r} has {len(col)} values for {n} points")
        for name in ("run_ids", "split", "groups", "flops", "steps", "final"):
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
            "flops": take(self.flops), "steps": take(self.steps), "final": take(self.final)})

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
    lack_of_fit: LackOfFit | None = None
    """Residual SD against replicate SD (None without replicated seeds)."""
    interaction: InteractionResult | None = None
    """The additive-vs-interaction verdict this fit was chosen by (None when not run)."""
    form_weight: float = 1.0
    """This form's weight among the candidate forms (BIC weight); 1 when no other form was fitted."""
    forms: list[FitResult] = Field(default_factory=list)
    """The other candidate forms, each with its ``form_weight``: prediction intervals mix them by weight
    (:func:`fit.predict.predict_points`)."""
    rolling: list[RollingStep] = Field(default_factory=list)
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
    ``max_fitted_n`` (:attr:`LawSelection.effect_sd`); None: gain intervals carry parameter draws only."""
    max_fitted_flops: float | None = None
    """Training FLOPs of the largest fitted run (None when unknown): ``predict`` measures extrapolation by it."""

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
    supported: Literal["additive", "multiplicative", "interaction"]
    """Form the evidence supports (what ``--law auto`` fits): ``additive`` only when the data cannot tell
    the forms apart; else ``multiplicative`` or ``interaction``, whichever has the lower BIC (a discount
    needs ``interaction``: ``multiplicative`` can only amplify)."""
    verdict: Literal["additive", "amplifies", "discounts"] = "additive"
    """``additive`` (no detectable interaction), or the direction: quality ``amplifies`` or ``discounts``
    what diversity buys (``gain_ratio`` above or below 1)."""
    strength: Literal["strong", "weak", "none"]
    """With a rejection of additivity (the LR test, ``lr_p <= 0.05``): ``strong`` when the BIC gap also exceeds
    6, else ``weak``; ``none`` when additivity stands (no evidence either way is not strong evidence)."""
    delta_bic: float
    """BIC(additive) - min(BIC(multiplicative), BIC(interaction)) (> 0 favours a non-additive form)."""
    lr_stat: float
    """Likelihood-ratio statistic of ``interaction`` vs ``additive`` (kappa = 0), ``n log(RSS_add / RSS_int)``."""
    lr_p: float
    """Its p-value against the residual bootstrap of the statistic under the additive fit, every draw refitted
    as the observed data were (the chi-square reference is invalid with parameters at their bounds);
    chi-square 1 df without bootstrap draws. The one test that decides the verdict."""
    lr_p_method: str = "chi-square (1 df)"
    """How ``lr_p`` was computed."""
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
    floor: float | None = Field(default=None, ge=0.0, lt=1.0)
    """Accuracy floor of a two-step law (chance accuracy, e.g. 0.25 for 4 choices): ``lo`` held there."""
    stage1_metric: str = "loss"
    """Intermediate of a two-step law: a metric of the benchmark, or ``other/metric`` (e.g. a task loss in
    bits per byte) that stage 1 predicts from N and D."""
    train_stages: list[str] | None = None
    """Fit only the runs trained with exactly these stages (``["sft"]``, ``["sft", "grpo"]``...); None: all.
    SFT and RL laws are fitted separately (research plan)."""
    target: Literal["auto", "envelope", "final", "checkpoints"] = "auto"
    """What each run contributes (:mod:`fit.targets`); ``auto``: the envelope for a loss when runs have scored
    checkpoints, else the final value."""
    validation: str = "valid-calls"
    """Benchmark whose value chooses each run's envelope checkpoint (never a test benchmark)."""


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


class LackOfFit(_Frozen):
    """Does the law fit as well as the noise allows? Residual SD against the SD between replicated seeds.

    ``F = (SS_lack / df_lack) / (SS_pure / df_pure)`` with ``SS_pure`` the within-replicate-group sum of
    squares and ``SS_lack = RSS - SS_pure`` (the classical lack-of-fit F test of a regression with replicates).
    """

    residual_sd: float
    """Residual SD of the fit, in residual units."""
    replicate_sd: float
    """Pooled SD between replicated seeds, in residual units."""
    ratio: float
    """``residual_sd / replicate_sd`` (about 1 when the law fits to the noise)."""
    f_stat: float | None = None
    """Lack-of-fit F statistic (None where the degrees of freedom do not allow it)."""
    df_lack: int = 0
    """Degrees of freedom of lack of fit: groups minus free parameters."""
    df_pure: int = 0
    """Degrees of freedom of pure error: runs minus groups (of replicated runs)."""
    p_value: float | None = None
    """P-value of ``f_stat`` (F distribution)."""
    flagged: bool = False
    """True when ``p_value < 0.01``: the law misses structure the data have (the report flags it)."""


class RollingStep(_Frozen):
    """One step of rolling validation: fit the smallest model sizes, predict the next one up."""

    fit_sizes: list[float]
    """Model sizes fitted (parameters)."""
    predicted_size: float
    """Model size predicted (parameters)."""
    n: int
    """Runs predicted."""
    mae: float
    """Mean absolute error, in the metric's unit."""
    relative_mae: float
    """Mean of ``|error| / |actual|``."""
    max_error: float
    """Largest absolute error."""
    interval_coverage: float | None = None
    """Share of predicted runs inside their 90% interval (None without bootstrap)."""
    converged: bool = True
    """Whether the step's fit converged."""


class SummaryParam(_Frozen):
    """One parameter in a fit summary."""

    estimate: float
    """Point estimate, natural units."""
    lo: float | None = None
    """Lower 95% bootstrap bound (None without bootstrap)."""
    hi: float | None = None
    """Upper 95% bootstrap bound."""
    se: float | None = None
    """Bootstrap standard deviation."""


class InteractionSummary(_Frozen):
    """The interaction verdict in a fit summary."""

    supported: str
    """Form the evidence supports: ``additive``, ``multiplicative`` or ``interaction``."""
    verdict: str
    """``additive`` (the data cannot tell the forms apart), ``amplifies`` or ``discounts`` (quality scales what
    diversity buys up or down)."""
    strength: str
    """``strong``, ``weak`` (additivity rejected by the LR test; strong with a BIC gap above 6) or ``none``."""
    delta_bic: float
    """BIC(additive) - BIC(best other form)."""
    lr_stat: float
    """Likelihood-ratio statistic, interaction vs additive."""
    lr_p: float
    """P-value of the LR statistic against its parametric bootstrap (chi-square, 1 df, without bootstrap)."""
    lr_p_method: str
    """``parametric bootstrap (B draws)`` or ``chi-square (1 df, invalid at bounds)``."""
    f_stat: float
    """Linearised F statistic."""
    f_p: float
    """Its p-value."""
    gain_ratio: float
    """Diversity gain at top quality / at bottom quality (1 = additive)."""
    gain_ratio_lo: float | None = None
    """Lower 95% bound."""
    gain_ratio_hi: float | None = None
    """Upper 95% bound."""
    bic: dict[str, float]
    """BIC per form."""
    heldout_mae: dict[str, float | None]
    """Held-out MAE per form (None when nothing is held out)."""


class AxisDecision(_Frozen):
    """Decision accuracy over the recipe pairs that differ on one axis."""

    accuracy: float | None
    """Share of those pairs ordered right (ties count 1/2); None without such a pair."""
    lo: float | None
    """Lower bound of the Wilson interval."""
    hi: float | None
    """Upper bound of the Wilson interval."""
    pairs: int
    """Recipe pairs that differ on this axis."""


class DecisionPoint(_Frozen):
    """One point of the accuracy-against-compute curve: one fitted rung's order against the held-out one."""

    model_size: str
    """The fitted rung."""
    cell: str
    """Its cell whose order is compared (the rung at its largest tokens per parameter), ``rung x tpp``."""
    flops: float
    """Training FLOPs of a run in that cell (the largest there)."""
    accuracy: float | None
    """Share of recipe pairs ordered as at the held-out size (ties 1/2)."""
    lo: float | None
    """Lower bound of the Wilson interval."""
    hi: float | None
    """Upper bound."""
    pairs: int
    """Recipe pairs scored."""
    close_accuracy: float | None = None
    """The same over the close pairs (within ``close_sds`` seed SDs at this cell)."""
    close_pairs: int = 0
    """Close pairs scored."""


class DecisionAccuracy(_Frozen):
    """Small-to-large decision accuracy of one small-scale order, with its Wilson interval."""

    source: str
    """``observed`` (largest fitted cell) or ``law`` (the fitted law's held-out predictions)."""
    accuracy: float | None
    """Share of recipe pairs whose small-scale order matches the held-out order (ties count 1/2)."""
    lo: float | None
    """Lower bound of the Wilson score interval of ``accuracy`` over ``pairs`` (pairs share recipes, so they
    are not independent: the interval is optimistic when recipes repeat across pairs)."""
    hi: float | None
    """Upper bound of that interval."""
    level: float
    """Nominal level of ``[lo, hi]``."""
    pairs: int
    """Recipe pairs scored."""
    recipes: int
    """Recipes with a held-out value and a small-scale value."""
    higher_is_better: bool
    """Direction of the metric (only the sign of differences matters)."""
    small_scale: str
    """What the small-scale value is (the cell, or the law)."""
    per_axis: dict[str, AxisDecision]
    """The same over the pairs that differ on each axis."""
    n_bootstrap: int = 0
    """Bootstrap draws (0: the intervals are Wilson intervals)."""
    interval: str = "wilson"
    """How ``[lo, hi]`` is computed."""
    seed_sd: float | None = None
    """SD of one run across seeds at the fitted size (pooled over replicated recipes there), metric units;
    None when no recipe ran two seeds there."""
    close_sds: float = 2.0
    """A pair is close when its observed difference at the fitted size is within this many ``seed_sd``."""
    close_accuracy: float | None = None
    """Accuracy over the close pairs (the informative decisions); None without a seed SD or a close pair."""
    close_lo: float | None = None
    """Lower Wilson bound of ``close_accuracy``."""
    close_hi: float | None = None
    """Upper Wilson bound."""
    close_pairs: int = 0
    """Close pairs scored."""
    curve: list[DecisionPoint] = Field(default_factory=list)
    """Accuracy against compute: each fitted rung's order against the held-out one (DataDecide), smallest first."""


class FitSummary(_Frozen):
    """What ``toolscale fit --json`` prints and the MCP ``fit_summary`` tool returns: ``model_dump(mode="json")``.

    One model for both, built from a stored :class:`FitResult` by :meth:`of`.
    """

    fit_id: str | None = None
    """Registry id of the stored fit (None with ``--no-store``)."""
    experiment: str
    """Experiment name."""
    benchmark: str
    """Benchmark name."""
    metric: str
    """Metric fitted."""
    law: str
    """Law fitted."""
    formula: str = ""
    """The law's formula."""
    target: str
    """``score`` or ``loss``."""
    simulated: bool
    """True for simulated runs."""
    converged: bool
    """Optimizer convergence."""
    message: str
    """Optimizer message and diagnostics."""
    at_bounds: list[str]
    """Parameters at a bound."""
    n_points: int
    """Runs fitted."""
    n_skipped: int = 0
    """Done runs skipped because they lack the fitted metric."""
    n_params: int
    """Free parameters."""
    data_hash: str
    """Hash of the fitted points."""
    params: dict[str, SummaryParam]
    """Parameters with their 95% intervals."""
    residual_scale: ResidualScale
    """Residuals minimised (``log``, ``relative`` or ``raw``)."""
    huber_delta: float
    """Huber threshold, in residual units."""
    residual_sd: float
    """Residual SD, in residual units."""
    replicate_sd: float | None
    """Replicate SD (None without replicates)."""
    lack_of_fit: LackOfFit | None = None
    """Residual vs replicate SD test."""
    aic: float
    """AIC."""
    bic: float
    """BIC."""
    n_bootstrap: int
    """Bootstrap draws kept."""
    form_weights: dict[str, float] = Field(default_factory=dict)
    """Weight of each candidate form in the prediction intervals (the fitted law's included)."""
    holdout_rule: str
    """Hold-out rule."""
    holdout_source: str
    """Where the split came from."""
    point_target: str = "final"
    """What each run contributed: ``final``, ``envelope`` or ``checkpoints`` (:mod:`fit.targets`)."""
    heldout_n: int
    """Held-out runs."""
    heldout_mae: float | None
    """Held-out MAE, metric units."""
    heldout_relative_mae: float | None = None
    """Held-out error on seed means: ``mean |err| / actual`` over the held-out recipes, each averaged over its
    seeds (:attr:`HeldoutMetrics.are_seed_means`, Choshen et al. 2024's ARE)."""
    heldout_mae_over_mean: float | None = None
    """Held-out MAE over the mean held-out value, run by run (the figure reported before seed means)."""
    heldout_max_error: float | None
    """Largest held-out error."""
    interval_coverage: float | None
    """Share of held-out runs inside their 90% interval."""
    extrapolation_factor: float | None
    """Largest held-out FLOPs / largest fitted FLOPs."""
    heldout_predictions: list[HeldoutPoint] = Field(default_factory=list)
    """Each held-out run: actual, predicted and the 90% interval."""
    rolling: list[RollingStep] = Field(default_factory=list)
    """Rolling validation steps (``--holdout rungs:K``)."""
    selection: LawSelection | None = None
    """How ``--law auto`` chose the form (None when a law was named)."""
    fit_seconds: float
    """Wall time of the point fit, seconds."""
    interaction: InteractionSummary | None = None
    """The interaction verdict (None when not run)."""
    decision_accuracy: DecisionAccuracy | None = None
    """Small-to-large decision accuracy (:class:`fit.decision.DecisionAccuracy`, observed order at the
    largest fitted cell vs the held-out order, with its bootstrap interval and per axis); None without
    two recipes at the held-out size."""
    decision_accuracy_law: DecisionAccuracy | None = None
    """The same with the fitted law's held-out predictions as the small-scale order."""

    @classmethod
    def of(cls, fit: "FitResult", fit_id: str | None = None, formula: str = "") -> "FitSummary":
        """The summary of ``fit`` (its stored interaction verdict included)."""
        params = {}
        for name, value in fit.params.items():
            iv = fit.intervals.get(name)
            params[name] = SummaryParam(estimate=value, lo=iv.lo if iv else None, hi=iv.hi if iv else None,
                                        se=iv.se if iv else None)
        h = fit.heldout
        inter = None
        if fit.interaction is not None:
            i = fit.interaction
            inter = InteractionSummary(
                supported=i.supported, verdict=i.verdict, strength=i.strength, delta_bic=i.delta_bic,
                lr_stat=i.lr_stat, lr_p=i.lr_p, lr_p_method=i.lr_p_method, f_stat=i.f_stat, f_p=i.f_p,
                gain_ratio=i.gain_ratio, gain_ratio_lo=i.gain_ratio_lo, gain_ratio_hi=i.gain_ratio_hi,
                bic={k: v.bic for k, v in i.fits.items()}, heldout_mae={k: v.heldout_mae for k, v in i.fits.items()})
        weights = {fit.law: fit.form_weight, **{f.law: f.form_weight for f in fit.forms}} if fit.forms else {}
        return cls(fit_id=fit_id, experiment=fit.experiment, benchmark=fit.benchmark, metric=fit.metric, law=fit.law,
                   formula=formula, target=fit.target, simulated=fit.simulated, converged=fit.converged,
                   message=fit.message, at_bounds=list(fit.at_bounds), n_points=fit.n_points,
                   n_skipped=fit.n_skipped, n_params=fit.n_params, data_hash=fit.data_hash, params=params,
                   residual_scale=fit.residual_scale, huber_delta=fit.huber_delta, residual_sd=fit.residual_sd,
                   replicate_sd=fit.replicate_sd, lack_of_fit=fit.lack_of_fit, aic=fit.aic, bic=fit.bic,
                   n_bootstrap=len(fit.bootstrap), form_weights=weights, holdout_rule=fit.holdout_rule,
                   holdout_source=fit.holdout_source, point_target=fit.point_target, heldout_n=h.n if h else 0, heldout_mae=h.mae if h else None,
                   heldout_relative_mae=h.are_seed_means if h else None,
                   heldout_mae_over_mean=h.relative_mae if h else None,
                   heldout_max_error=h.max_error if h else None,
                   interval_coverage=h.interval_coverage if h else None,
                   extrapolation_factor=h.extrapolation_factor if h else None,
                   heldout_predictions=list(h.points) if h else [], rolling=list(fit.rolling),
                   selection=fit.selection, fit_seconds=fit.fit_seconds, interaction=inter)


class ReportSummary(FitSummary):
    """What ``toolscale report --json`` prints: the fit summary and the files written."""

    files: dict[str, str] = Field(default_factory=dict)
    """``markdown``, ``html``, ``json`` -> path written."""


class PointPrediction(_Frozen):
    """One predicted point (``toolscale predict``)."""

    inputs: dict[str, float]
    """The point's inputs, natural units (N in parameters, D in tokens, axes in their units)."""
    predicted: float
    """Predicted value (the fitted law's point prediction), metric units."""
    lo: float
    """Lower bound of the prediction interval (forms mixed by weight, parameters and noise)."""
    hi: float
    """Upper bound."""
    level: float = 0.90
    """Nominal level of ``[lo, hi]``."""
    flops: float | None = None
    """Training FLOPs of the point (``6 N D``), when N and D are known."""
    beyond_range: bool = False
    """True when the point's FLOPs exceed the largest fitted run's."""
    extrapolation_factor: float | None = None
    """Point FLOPs / largest fitted FLOPs (> 1 is beyond the fitted range)."""


class Prediction(_Frozen):
    """What ``toolscale predict --json`` prints."""

    experiment: str
    """Experiment of the fit."""
    benchmark: str
    """Benchmark."""
    metric: str
    """Metric predicted."""
    law: str
    """Law fitted."""
    fit_id: str | None = None
    """Registry id of the fit used."""
    form_weights: dict[str, float] = Field(default_factory=dict)
    """Forms mixed into the intervals, by weight."""
    max_fitted_flops: float | None = None
    """Largest fitted run's training FLOPs."""
    points: list[PointPrediction]
    """One entry per ``--at``."""


class DomainFit(_Frozen):
    """One experiment (domain) of a cross-domain fit: its own fit beside the joint one."""

    experiment: str
    """Experiment name."""
    benchmark: str
    """Benchmark fitted (``benchmark/metric``)."""
    chosen_law: str
    """The form the experiment's own ``--law`` choice gave (rung CV for ``auto``)."""
    n_fit: int
    """Fitted runs."""
    n_heldout: int
    """Held-out runs."""
    n_params_separate: int
    """Free parameters of its own fit."""
    residual_sd_separate: float
    """Residual SD of its own fit (log units for a loss)."""
    residual_sd_joint: float
    """Residual SD of the joint fit on its fitted runs (same units, same degrees-of-freedom rule:
    the joint fit's parameters are shared between the domains pro rata of their runs)."""
    heldout_relative_mae_separate: float | None = None
    """Held-out MAE / mean held-out value, its own fit."""
    heldout_relative_mae_joint: float | None = None
    """The same for the joint fit."""
    extrapolation_factor: float | None = None
    """Largest held-out FLOPs / largest fitted FLOPs of this experiment."""
    params_separate: dict[str, float] = Field(default_factory=dict)
    """Its own fit's parameters."""


class SharedExponent(_Frozen):
    """One exponent shared by the domains: each domain's own estimate and the joint one, with intervals."""

    name: str
    """Parameter name (``alpha``, ``beta``, ``rho_<axis>``...)."""
    separate: dict[str, ParamInterval]
    """Per experiment: its own fit's estimate with the bootstrap interval (estimate only without a bootstrap)."""
    joint: ParamInterval
    """The joint fit's estimate and interval."""
    agree: bool | None = None
    """Whether the domains' intervals overlap (None without bootstrap intervals)."""


class JointFit(_Frozen):
    """``fit --experiments A,B``: one law form over several domains, shared exponents, per-domain constants."""

    experiments: list[str]
    """The experiments, in order."""
    law: str
    """The form fitted (every domain's own fit and the joint one)."""
    metric: str
    """What is fitted, per experiment ``benchmark/metric`` (see ``domains``)."""
    shared: list[str]
    """Parameters shared across domains (exponents of N, D and of the axes every domain has)."""
    domain_params: list[str]
    """Parameters each domain has its own of (constants, and everything of an axis one domain lacks)."""
    n_points: int
    """Fitted runs over all domains."""
    k_separate: int
    """Free parameters of the separate fits together."""
    k_joint: int
    """Free parameters of the joint fit."""
    bic_separate: float
    """BIC of the separate fits together, on all fitted runs (one Gaussian likelihood of the pooled residuals)."""
    bic_joint: float
    """BIC of the joint fit, the same way."""
    delta_bic: float
    """``bic_joint - bic_separate``: below 0, sharing the exponents fits the runs better per parameter."""
    lr_stat: float
    """``n log(RSS_joint / RSS_separate)``: the likelihood-ratio statistic of the shared exponents."""
    lr_p: float | None = None
    """Its chi-square p-value with ``k_separate - k_joint`` degrees of freedom (asymptotic)."""
    domains: list[DomainFit]
    """Per experiment."""
    exponents: list[SharedExponent]
    """The shared exponents."""
    verdict: str
    """One line: whether sharing costs fit quality (BIC and held-out error)."""
    joint_params: dict[str, float] = Field(default_factory=dict)
    """The joint fit's parameters (``name@experiment`` for a domain's own)."""
    converged: bool = True
    """Whether the joint fit converged."""


FitResult.model_rebuild()
