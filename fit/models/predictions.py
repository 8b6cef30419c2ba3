"""Predictions at new points and joint fits across domains (shared exponents)."""

from __future__ import annotations


from pydantic import Field

from fit.models.core import FitResult, ParamInterval, _Frozen
from fit.models.interaction import InteractionResult, LackOfFit, RollingStep

__all__ = ["DomainFit", "JointFit", "PointPrediction", "Prediction", "SharedExponent"]


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
    """True when the point's FLOPs exceed the largest fitted run's, or any input lies outside its fitted range."""
    extrapolation_factor: float | None = None
    """Point FLOPs / largest fitted FLOPs (> 1 is beyond the fitted range)."""
    beyond_inputs: dict[str, float] = Field(default_factory=dict)
    """Inputs outside their fitted range, with how far: ``value / max`` above it, ``min / value`` below it
    (``inf`` below a positive range at 0); empty when every input is inside (or the fit stored no ranges)."""


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
    """Held-out error of its own fit: absolute relative error on seed means, as ``FitResult.heldout_relative_mae``."""
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


# FitResult (core) names three contracts defined after it (its fields refer to them by name)
FitResult.model_rebuild(_types_namespace={"LackOfFit": LackOfFit, "InteractionResult": InteractionResult,
                                          "RollingStep": RollingStep})
