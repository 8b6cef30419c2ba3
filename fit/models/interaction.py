"""The additive-versus-multiplicative test, the fit request, lack of fit and rolling-origin steps."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from fit.models.core import FitResult, Points, _Frozen

__all__ = ["ExperimentFit", "FitRequest", "HypothesisFit", "InteractionResult", "LackOfFit", "RollingStep"]


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
    repetition: bool = False
    """``chinchilla``: add the repetition term of runs with ``unique_tokens`` (Muennighoff et al. 2023); without
    it ``--law chinchilla`` fits exactly ``E + A / N^alpha + B / D^beta`` (and the experiment's data axes)."""
    ceiling: float | None = Field(default=None, gt=0.0, le=1.0)
    """Two-step laws: accuracy ceiling ``hi`` held fixed (a hard bound; the OLMo ladder uses ``ideal_point``)."""
    ideal_point: float | None = Field(default=None, gt=0.0, le=1.0)
    """Two-step laws: add the point (loss 0, this accuracy) to stage 2's data, as the OLMo ladder does (its
    "ideal point", 1.0; allenai/OLMo-ladder ``src/scripts/step2.py``); ``hi`` stays free."""
    smooth: int = Field(default=1, ge=1)
    """Two-step laws: moving average over this many consecutive checkpoints of a run (stage 1 sees the mean of
    a run's last ``smooth`` checkpoints); 1: none."""
    skip_first: float = Field(default=0.0, ge=0.0, lt=1.0)
    """Two-step laws: share of each run's first checkpoints left out of stage 2 (warm-up transients)."""
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
