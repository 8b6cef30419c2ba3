"""fit's registry edge: the runs read, fitted and stored, and a stored fit as ``fit --json`` reports it, for the CLI
and the MCP server alike.

:func:`load_runs` reads an experiment's done runs and its stored config; :func:`fit_loaded` fits them as a
:class:`fit.models.FitRequest` (the one query model, parsed at the CLI's boundary) asks; :func:`store_fit` saves
the fit and returns its id.
:func:`with_decisions` adds the small-to-large decision accuracies of a fit over its experiment's runs (read at
the fit's own point target, on the experiment's validation split); :func:`stored_summary` is the whole
:class:`fit.models.FitSummary` of a stored fit, so the MCP ``fit_summary`` tool returns what ``fit --json`` prints.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

from fit.models import FitRequest, FitResult, FitSummary
from grid.models import RunRecord
from toolscale.config import ExperimentConfig

__all__ = ["summary_of", "with_decisions", "stored_summary", "validation_of", "LoadedRuns", "load_runs", "fit_loaded",
           "store_fit"]


@dataclass(frozen=True)
class LoadedRuns:
    """An experiment's done runs as the registry holds them, with the config stored at design time."""

    experiment: str
    runs: list[RunRecord]
    config: ExperimentConfig | None
    """Parsed from the registry; None for imported runs stored without one."""
    simulated: bool


def load_runs(registry: str, experiment: str | None) -> LoadedRuns:
    """The done runs of ``experiment`` (or of the registry's only experiment; UsageError naming them otherwise)."""
    from grid import Registry
    from toolscale.config import parse_config
    from toolscale.errors import UsageError

    with Registry(registry, read_only=True) as reg:
        if experiment is None:
            names = [e.name for e in reg.experiments()]
            if len(names) != 1:
                raise UsageError(f"name the experiment with --experiment; the registry holds "
                                 f"{', '.join(names) if names else 'none'}")
            experiment = names[0]
        info = reg.experiment(experiment)
        runs = reg.runs(experiment, status="done")
    config = parse_config(info.config, source=f"registry config of {experiment}") if info.config else None
    return LoadedRuns(experiment, runs, config, info.simulated)


def fit_loaded(loaded: LoadedRuns, request: FitRequest,
               progress: AbstractContextManager[Any] | None = None) -> Any:
    """The :class:`fit.experiment.ExperimentFit` of ``loaded`` as ``request`` asks (``measured_groundedness`` among
    its axes reads each run's probe, :mod:`probes.measured`); ``progress`` is entered around the fit (a spinner)."""
    from fit.experiment import fit_experiment

    runs = loaded.runs
    if request.axes and "measured_groundedness" in request.axes:
        from fit.data import axis_kinds
        from probes.measured import with_measured_axis

        runs, _ = with_measured_axis(runs, axis_kinds(loaded.config, runs))  # fit.data.axis_kinds adds the axis
    with progress or nullcontext():
        return fit_experiment(runs, request, config=loaded.config, simulated=loaded.simulated or None)


def store_fit(registry: str, fit: FitResult) -> str:
    """Save ``fit`` in the registry; its fit id."""
    from grid import Registry

    with Registry(registry) as reg:
        return reg.save_fit(experiment=fit.experiment, benchmark=fit.benchmark, metric=fit.metric, law=fit.law,
                            converged=fit.converged, n_points=fit.n_points, data_hash=fit.data_hash,
                            payload=fit.model_dump(mode="json"))


def validation_of(config: ExperimentConfig | None, override: str | None = None) -> str:
    """``override``, else the experiment's ``[eval] validation`` (a code experiment's is ``code-valid``), else
    ``valid-calls``."""
    if override:
        return override
    return (config.eval.validation if config is not None else None) or "valid-calls"


def summary_of(fit: FitResult, fit_id: str | None = None) -> FitSummary:
    """The :class:`FitSummary` of a fit (its formula and verdict included), without decision accuracies."""
    from fit import law_of

    return FitSummary.of(fit, fit_id, formula=law_of(fit).formula)


def with_decisions(summary: FitSummary, fit: FitResult, runs: Sequence[RunRecord], config: ExperimentConfig | None,
                   *, validation: str | None = None) -> FitSummary:
    """``summary`` with the small-to-large decision accuracies of ``fit`` over ``runs`` (:mod:`fit.decision`)."""
    from fit.decision import LOSS_METRICS, decisions_for_fit
    from fit.targets import target_values

    values = None
    if fit.point_target != "final":
        values = target_values(runs, benchmark=fit.benchmark, metric=fit.metric, target=fit.point_target,
                               validation=validation_of(config, validation))
    observed, law = decisions_for_fit(runs, fit, higher_is_better=fit.metric not in LOSS_METRICS, values=values)
    return summary.model_copy(update={"decision_accuracy": observed, "decision_accuracy_law": law})


def stored_summary(registry: str, benchmark: str, *, experiment: str | None = None,
                   fit_id: str | None = None) -> FitSummary:
    """The ``fit --json`` object of a stored fit (the newest for ``benchmark``, or ``fit_id``) with its decision
    accuracies over the experiment's done runs."""
    from pipeline.allocate import load_fit, resolve_experiment
    from grid import Registry

    with Registry(registry, read_only=True) as reg:
        exp = resolve_experiment(reg, benchmark, experiment)
        fid, fit = load_fit(reg, exp, benchmark, fit_id=fit_id)
    loaded = load_runs(registry, fit.experiment)
    return with_decisions(summary_of(fit, fid), fit, loaded.runs, loaded.config)
