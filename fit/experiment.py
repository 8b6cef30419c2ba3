"""One experiment, one benchmark: choose the law, apply the hold-out rule, fit, compare hypotheses.

:func:`fit_experiment` is pure over the registry's rows (runs) and the experiment's
config model; the CLI reads them (parsing the stored config) and stores the result.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from fit.axis_extrapolation import axis_extrapolation_sd
from fit.data import law_for_runs, points_from_runs, runs_with_stages
from fit.errors import FitInputError
from fit.fitting import fit_law
from fit.holdout import apply_holdout, heldout_metrics, parse_holdout
from fit.interaction import compare_hypotheses
from fit.laws import Law, get_law
from fit.models import ExperimentFit, FitRequest, FitResult, LawSelection, Points
from fit.predict import bic_weights
from fit.rolling import rolling_steps
from fit.selection import rung_sizes, select_law
from fit.targets import at_first_checkpoint, target_runs
from grid.models import RunRecord
from toolscale.config import ExperimentConfig

__all__ = ["LOSS_CANDIDATES", "fit_experiment", "has_data_axes", "loss_candidates", "sized_choice", "stored_fraction", "with_extrapolation", "with_forms"]


def stored_fraction(config: ExperimentConfig | None) -> float:
    """The held-out fraction the stored split was made with: the config's, else import-runs' 0.25."""
    return config.design.heldout_fraction if config is not None else 0.25


def fit_experiment(runs: Sequence[RunRecord], request: FitRequest, *, config: ExperimentConfig | None = None,
                   simulated: bool | None = None) -> ExperimentFit:
    """Fit ``request.law`` (or the automatic choice) to the done runs of one experiment.

    Parameters
    ----------
    runs : the experiment's done :class:`grid.models.RunRecord` rows.
    request : what to fit.
    config : the experiment's config (axis kinds and ranges, design hold-out fraction);
        None for imported experiments.
    simulated : label override (default: from the runs' source).
    """
    if not runs:
        raise FitInputError(f"experiment {request.experiment!r} has no done runs to fit")
    if request.train_stages is not None:
        runs = runs_with_stages(runs, request.train_stages)
        if not runs:
            raise FitInputError(f"experiment {request.experiment!r} has no done run trained with stages "
                                f"{'+'.join(request.train_stages)}")
    name = request.law
    if name == "auto":
        name = _auto_law(runs, request, config)
    generic = get_law(name)
    metric = request.metric or ("loss" if generic.target == "loss" else "score")
    if request.validation == request.benchmark:
        raise FitInputError(f"--validation {request.validation!r} is the benchmark being fitted; the checkpoint "
                            "must be chosen on other items")
    runs, point_target = target_runs(runs, benchmark=request.benchmark, metric=metric, target=request.target,
                                     validation=request.validation)
    law = law_for_runs(name, runs, config, request.axes, repetition=request.repetition or request.law == "auto")
    loss_auto = request.law == "auto" and generic.target == "loss" and has_data_axes(law)
    inter = ("L", request.stage1_metric) if law.stages is not None else None
    fixed = _held(law, request)
    if request.ideal_point is not None:
        if law.stages is None:
            raise FitInputError(f"--ideal-point adds a point to stage 2 of a two-step law; law {law.name!r} has none")
        law = replace(law, ideal_point=(0.0, request.ideal_point))
    names = law.stages[0].axes if law.stages is not None else law.axes
    points = points_from_runs(runs, benchmark=request.benchmark, metric=metric, inputs=names,
                              experiment=request.experiment, simulated=simulated, intermediate=inter)
    points, source = apply_holdout(points, request.holdout, stored_fraction(config))
    if points.final and law.stages is None:  # checkpoints feed a two-step law's stage 2 only
        points = points.subset(points.final)
    if law.stages is not None:
        points = _two_step_points(points, law.stages[2], request)
    selection = None
    if loss_auto:
        candidates = loss_candidates(runs, config, request.axes)
        selection = select_law(points, candidates, n_starts=request.n_starts, max_grid=min(request.max_grid, 4096),
                               seed=request.seed, huber_delta=request.huber_delta)
        law = candidates[selection.chosen]
    kinds = {i.kind for i in law.inputs}
    interaction = None
    if request.interaction_test and law.target == "score" and {"diversity", "quality"} <= kinds \
            and law.stages is None:
        interaction, forms = compare_hypotheses(points, law.inputs, n_starts=request.n_starts,
                                                n_bootstrap=min(request.n_bootstrap, request.interaction_bootstrap),
                                                max_grid=min(request.max_grid, 4096), seed=request.seed,
                                                huber_delta=request.huber_delta, n_jobs=request.n_jobs)
        if request.law == "auto":
            law, selection = sized_choice(points, get_law(interaction.supported, law.inputs), n_starts=request.n_starts,
                                          max_grid=min(request.max_grid, 4096), seed=request.seed,
                                          huber_delta=request.huber_delta)
    fit = fit_law(points, law, huber_delta=request.huber_delta, n_starts=request.n_starts,
                  max_grid=request.max_grid, seed=request.seed, n_bootstrap=request.n_bootstrap,
                  n_jobs=request.n_jobs, holdout_rule=request.holdout, holdout_source=source, method=request.method,
                  fixed=fixed)
    if interaction is not None:
        fit = with_forms(fit, [f for name, f in forms.items() if name != fit.law], points, law, seed=request.seed)
        fit = fit.model_copy(update={"interaction": interaction})
    fit = fit.model_copy(update={"point_target": point_target, "envelope_at_first": _early(runs, points)})
    if selection is not None:
        fit = with_extrapolation(fit, selection, points, law, seed=request.seed)
    if law.stages is not None and selection is None:
        fit = _two_step_extrapolation(fit, points, law, request)
    fit = fit.model_copy(update={"options": _options(request, law), "axis_extrapolation_sd": axis_extrapolation_sd(
        points, law, [i.name for i in law.inputs if i.kind in ("diversity", "quality")], fixed=fixed)})
    kind, k = parse_holdout(request.holdout)
    if kind == "rungs":
        steps = rolling_steps(points, law, int(k), n_bootstrap=min(request.n_bootstrap, 50), seed=request.seed,
                              n_starts=request.n_starts, max_grid=request.max_grid, huber_delta=request.huber_delta,
                              n_jobs=request.n_jobs, method=request.method)
        fit = fit.model_copy(update={"rolling": steps})
    return ExperimentFit(request=request, fit=fit, interaction=interaction, points=points)


def _early(runs: Sequence[RunRecord], points: Points) -> dict[str, int]:
    """``split -> points`` whose envelope is their run's first kept checkpoint (:func:`fit.targets.at_first_checkpoint`)."""
    early = at_first_checkpoint(runs)
    out: dict[str, int] = {}
    for rid, split in zip(points.run_ids, points.split_array()):
        if rid in early:
            out[str(split)] = out.get(str(split), 0) + 1
    return out


def _heldout_final(points: Points) -> Points:
    """The held-out points a fit is judged on: each held-out run's final checkpoint."""
    import numpy as np

    final = np.asarray(points.final, dtype=bool) if points.final else np.ones(points.n, dtype=bool)
    return points.subset((points.split_array() == "heldout") & final)


def _held(law: Law, request: FitRequest) -> dict[str, float] | None:
    """Parameters held fixed: a two-step law's accuracy floor (``--floor``) and ceiling (``--ceiling``)."""
    fixed: dict[str, float] = {}
    for flag, name, value in (("--floor", "lo", request.floor), ("--ceiling", "hi", request.ceiling)):
        if value is None:
            continue
        if name not in law.param_names:
            raise FitInputError(f"{flag} holds the accuracy {'floor' if name == 'lo' else 'ceiling'} of a two-step "
                                f"law (sigmoid, two_step); law {law.name!r} has none")
        fixed[name] = value
    if "lo" in fixed and "hi" in fixed and not fixed["lo"] < fixed["hi"]:
        raise FitInputError(f"--floor {fixed['lo']:g} must be below --ceiling {fixed['hi']:g}")
    if (request.smooth > 1 or request.skip_first > 0) and law.stages is None:
        raise FitInputError(f"--smooth and --skip-first shape the checkpoints of a two-step law; law {law.name!r} "
                            "fits final checkpoints only")
    return fixed or None


def _two_step_points(points: Points, inter: str, request: FitRequest) -> Points:
    """A two-step law's points: fitted runs without the intermediate are left out (held-out ones stay, to be
    predicted from N and D and scored), then checkpoints are skipped and smoothed (:mod:`fit.checkpoints`)."""
    import numpy as np

    from fit.checkpoints import smooth_checkpoints

    has = np.isfinite(np.asarray(points.inputs[inter], dtype=float))
    keep = has | (points.split_array() == "heldout")
    if not keep.all():
        points = points.subset(keep).model_copy(update={"n_skipped": points.n_skipped + int((~keep).sum())})
    return smooth_checkpoints(points, smooth=request.smooth, skip_first=request.skip_first, intermediate=inter)


def _two_step_extrapolation(fit: FitResult, points: Points, law: Law, request: FitRequest) -> FitResult:
    """A named two-step fit with the extrapolation error of its own rung CV (fit the smaller sizes, predict the
    largest fitted one: :func:`fit.selection.select_law` with one candidate), when there are 3+ fitted sizes."""
    fitted = points.subset(points.split_array() == "fit")
    if len(set(fitted.inputs["N"])) < 3:
        return fit
    selection = select_law(points, {law.name: law}, n_starts=request.n_starts, max_grid=min(request.max_grid, 4096),
                           seed=request.seed, huber_delta=request.huber_delta)
    return with_extrapolation(fit, selection, points, law, seed=request.seed)


def _options(request: FitRequest, law: Law) -> dict[str, float | str]:
    out: dict[str, float | str] = {}
    if request.repetition:
        out["repetition"] = 1.0
    if law.stages is not None:
        out.update(smooth=float(request.smooth), skip_first=request.skip_first, stage1_metric=request.stage1_metric)
        if request.ceiling is not None:
            out["ceiling"] = request.ceiling
        if request.floor is not None:
            out["floor"] = request.floor
        if request.ideal_point is not None:
            out["ideal_point"] = request.ideal_point
    return out


def with_forms(fit: FitResult, others: Sequence[FitResult], points: Points, law: Law, *, seed: int = 0,
               level: float = 0.90) -> FitResult:
    """``fit`` with the other candidate forms attached by BIC weight, held-out metrics recomputed on the mixture.

    Forms fitted on other data (another hash) are not mixed. Each attached form keeps its bootstrap
    draws and drops its own held-out detail and forms (the payload stays flat).
    """
    others = [o for o in others if o.data_hash == fit.data_hash and o.converged]
    if not others:
        return fit
    weights = bic_weights({fit.law: fit.bic, **{o.law: o.bic for o in others}})
    flat = [o.model_copy(update={"form_weight": weights[o.law], "forms": [], "heldout": None,
                                 "interaction": None}) for o in others]
    fit = fit.model_copy(update={"forms": flat, "form_weight": weights[fit.law]})
    test = _heldout_final(points)
    if test.n:
        train = points.subset(points.split_array() == "fit")
        fit = fit.model_copy(update={"heldout": heldout_metrics(fit, law, test, train_flops=train.flops,
                                                                level=level, seed=seed)})
    return fit


def with_extrapolation(fit: FitResult, selection: LawSelection, points: Points, law: Law, *, seed: int = 0,
                       level: float = 0.90) -> FitResult:
    """``fit`` with the selection and its extrapolation error attached, held-out metrics recomputed with it."""
    fitted = points.subset(points.split_array() == "fit")
    rungs = rung_sizes(fitted)
    fit = fit.model_copy(update={"selection": selection, "extrapolation_sd": selection.extrapolation_sd,
                                 "effect_sd": selection.effect_sd, "max_fitted_n": float(max(fitted.inputs["N"])),
                                 "max_compared_n": selection.effect_size or (rungs[-1] if rungs else None)})
    test = _heldout_final(points)
    if test.n and selection.extrapolation_sd is not None:
        fit = fit.model_copy(update={"heldout": heldout_metrics(fit, law, test, train_flops=fitted.flops,
                                                                level=level, seed=seed)})
    return fit


def sized_choice(points: Points, law: Law, **fit_kw: Any) -> tuple[Law, LawSelection]:
    """The supported score form with or without its ``n^delta`` size coupling (``{form}_nx``), by rung CV.

    The interaction verdict picks the form; whether diversity's gain grows with model size is
    then chosen the way a loss form is (:func:`fit.selection.select_law`), on the fitted runs.
    """
    cands = {law.name: law, f"{law.name}_nx": get_law(f"{law.name}_nx", law.inputs)}
    selection = select_law(points, cands, **fit_kw)
    return cands[selection.chosen], selection


def has_data_axes(law: Law) -> bool:
    """Whether ``law`` reads a data axis (diversity, quality or unique tokens), not N and D alone."""
    return any(i.kind in ("diversity", "quality", "unique_tokens") for i in law.inputs)


LOSS_CANDIDATES = ("chinchilla_ND", "chinchilla", "chinchilla_qterm", "chinchilla_unique", "chinchilla_overfit")
"""The loss forms ``--law auto`` compares (:func:`fit.selection.select_law`): the published
form on N and D alone, and the four effective-data forms with the experiment's axes (the last
one lets repetitions of little unique data make a larger model's loss rise)."""


def loss_candidates(runs: Sequence[RunRecord], config: ExperimentConfig | None,
                    axes: Sequence[str] | None = None) -> dict[str, Law]:
    """The :data:`LOSS_CANDIDATES` specialised to the experiment (a form that cannot take its axes is left out)."""
    out: dict[str, Law] = {"chinchilla_ND": get_law("chinchilla")}
    for name in LOSS_CANDIDATES[1:]:
        try:
            out[name] = law_for_runs(name, runs, config, axes)
        except FitInputError:
            continue
    return out


def _auto_law(runs: Sequence[RunRecord], request: FitRequest, config: ExperimentConfig | None) -> str:
    if request.metric in ("loss", "bpb"):  # nats per token, bits per byte: lower is better
        return "chinchilla"
    from fit.data import axis_kinds

    kinds = axis_kinds(config, runs)
    chosen = request.axes if request.axes is not None else list(kinds)
    unknown = [a for a in chosen if a not in kinds]
    if unknown:
        raise FitInputError(f"unknown axis {unknown[0]!r}; axes of this experiment: {', '.join(kinds) or 'none'}")
    present = {kinds[a]["kind"] for a in chosen}
    if not present:
        raise FitInputError("law auto needs data axes for a score; use --law chinchilla with --metric loss, "
                            "or import axis columns")
    return "additive" if present == {"diversity", "quality"} else "saturating"
