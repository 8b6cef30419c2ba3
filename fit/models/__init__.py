"""Contracts of fit/: the points a law is fitted to, and the frozen result of a fit.

Imports only pydantic, numpy and the standard library. A :class:`FitResult` is
stored in the registry as JSON (``Registry.save_fit(payload=fit.model_dump(mode="json"))``)
and loaded back with ``FitResult.model_validate(payload)``; the allocator rebuilds
the law with :func:`fit.laws.law_of` and predicts with ``law.predict(fit.params, X)``.
"""

from __future__ import annotations

from fit.models.core import (  # noqa: F401
    CVFold,
    FitResult,
    HeldoutMetrics,
    HeldoutPoint,
    InputKind,
    LawCandidate,
    LawInput,
    LawSelection,
    MIN_POINTS_PER_PARAM,
    ParamInterval,
    Points,
    ResidualScale,
    Target,
    Truth,
    fit_warnings,
)
from fit.models.interaction import (  # noqa: F401
    ExperimentFit,
    FitRequest,
    HypothesisFit,
    InteractionResult,
    LackOfFit,
    RollingStep,
)
from fit.models.summaries import (  # noqa: F401
    AllocationBasis,
    AxisDecision,
    DecisionAccuracy,
    DecisionPoint,
    FitDiff,
    FitList,
    FitRow,
    FitSummary,
    InteractionSummary,
    ParamDiff,
    ReportSummary,
    SummaryParam,
)
from fit.models.predictions import (  # noqa: F401
    DomainFit,
    JointFit,
    PointPrediction,
    Prediction,
    SharedExponent,
)

__all__ = [
    "AllocationBasis",
    "AxisDecision",
    "CVFold",
    "DecisionAccuracy",
    "DecisionPoint",
    "DomainFit",
    "ExperimentFit",
    "FitDiff",
    "FitList",
    "FitRequest",
    "FitResult",
    "FitRow",
    "FitSummary",
    "HeldoutMetrics",
    "HeldoutPoint",
    "HypothesisFit",
    "InputKind",
    "InteractionResult",
    "InteractionSummary",
    "JointFit",
    "LackOfFit",
    "LawCandidate",
    "LawInput",
    "LawSelection",
    "MIN_POINTS_PER_PARAM",
    "ParamDiff",
    "ParamInterval",
    "PointPrediction",
    "Points",
    "Prediction",
    "ReportSummary",
    "ResidualScale",
    "RollingStep",
    "SharedExponent",
    "SummaryParam",
    "Target",
    "Truth",
    "fit_warnings",
]
