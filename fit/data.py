"""Registry runs -> :class:`fit.models.Points`, and the law inputs an experiment's axes give.

Pure functions of :class:`grid.models.RunRecord` lists (the CLI reads the registry).
Inputs: ``N`` = ``model_params``, ``D`` = ``train_tokens``, ``C`` = ``train_flops``,
and every axis from ``recipe``. The target is the metric ``"<benchmark>/<metric>"``.
Runs made by the project, imported with ``import-runs`` and simulated all go through
the same path.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from fit.errors import FitInputError
from fit.laws import Law, get_law
from fit.models import LawInput, Points
from grid.models import RunRecord
from toolscale.config import STAGES, ExperimentConfig

__all__ = ["points_from_runs", "law_for_runs", "axis_kinds", "available_metrics", "runs_with_stages",
           "DEFAULT_QUALITY_AXES", "UNIQUE_TOKENS", "EFFECTIVE_LAWS"]

DEFAULT_QUALITY_AXES = frozenset({"repair_rate", "coverage_quota", "support_depth", "groundedness", "measured_groundedness"})
"""Axes treated as quality axes when the experiment has no config saying otherwise (imports)."""


_COLUMNS = {"N": "model_params", "D": "train_tokens", "C": "train_flops"}
UNIQUE_TOKENS = "unique_tokens"
MEASURED_QUALITY = "measured_groundedness"
"""A quality axis measured per run by the probe (``probes.measured``), not set in the config."""
"""Recipe column of a run's unique training tokens U (repeated data: ``D / U`` epochs); it enters
effective-data laws as repetition (:func:`fit.laws.effective_tokens`), no other law."""
EFFECTIVE_LAWS = frozenset({"chinchilla", "chinchilla_qterm", "chinchilla_unique", "chinchilla_overfit", "effective",
                            "effective_qterm", "effective_unique"})
"""Laws whose data axes act on effective data ``D_eff`` (they read N, D, U and every axis)."""


def available_metrics(runs: Sequence[RunRecord]) -> list[str]:
    """Every ``benchmark/metric`` key present on the runs, sorted."""
    return sorted({k for r in runs for k in r.metrics})


def axis_kinds(config: ExperimentConfig | None, runs: Sequence[RunRecord]) -> dict[str, dict[str, Any]]:
    """``axis -> {"kind", "min", "max"}`` from the experiment config, else inferred from the runs.

    Without a config (imported runs) an axis is ``quality`` if it is one of
    :data:`DEFAULT_QUALITY_AXES` or takes a value <= 0, else ``diversity``; its range is
    the runs' range.
    """
    out: dict[str, dict[str, Any]] = {}
    if config is not None:
        out = {a.name: {"kind": a.kind, "min": float(a.min), "max": float(a.max)} for a in config.axes}
        uniq = [r.recipe[UNIQUE_TOKENS] for r in runs if UNIQUE_TOKENS in r.recipe]
        if uniq and UNIQUE_TOKENS not in out:  # imported repetition data beside the config's axes
            out[UNIQUE_TOKENS] = {"kind": "unique_tokens", "min": float(min(uniq)), "max": float(max(uniq))}
        measured = [r.recipe[MEASURED_QUALITY] for r in runs if MEASURED_QUALITY in r.recipe]
        if measured and MEASURED_QUALITY not in out:  # the probe's measurement (probes.measured) beside the knobs
            out[MEASURED_QUALITY] = {"kind": "quality", "min": float(min(measured)), "max": float(max(measured))}
        return out
    names = sorted({k for r in runs for k in r.recipe})
    for name in names:
        vals = np.array([r.recipe[name] for r in runs if name in r.recipe], dtype=float)
        kind = "quality" if name in DEFAULT_QUALITY_AXES or np.any(vals <= 0) else "diversity"
        if name == UNIQUE_TOKENS:
            kind = "unique_tokens"
        out[name] = {"kind": kind, "min": float(vals.min()), "max": float(vals.max())}
    return out


def _group_key(r: Any) -> str:
    meta = r.metadata or {}
    mult = meta.get("token_multiplier", 1.0)
    return json.dumps([sorted(r.recipe.items()), r.model_size, mult, r.train_tokens if r.source == "import" else None,
                       meta.get("checkpoint_point")], default=str)


def _present(v: Any) -> bool:
    """A metric value that is there: not absent, None or NaN (an empty imported cell is missing)."""
    return v is not None and not (isinstance(v, float) and math.isnan(v))


def _checkpoints(runs: Sequence[RunRecord]) -> tuple[list[float], list[bool], list[str]]:
    """``(steps, final, checkpoint_of)`` of runs that are checkpoints (metadata ``step``); empty lists when
    none is."""
    meta = [r.metadata or {} for r in runs]
    if not any("step" in m for m in meta):
        return [], [], []
    steps = [float(m.get("step", math.inf)) for m in meta]
    last: dict[str, float] = {}
    for m, st in zip(meta, steps):
        key = str(m.get("checkpoint_of", id(m)))
        last[key] = max(last.get(key, -math.inf), st)
    final = [st == last[str(m.get("checkpoint_of", id(m)))] for m, st in zip(meta, steps)]
    owners = [str(m.get("checkpoint_of", r.run_id)) for m, r in zip(meta, runs)]
    return [s if math.isfinite(s) else -1.0 for s in steps], final, owners


def _weights(runs: Sequence[RunRecord], key: str) -> list[float]:
    """Standard errors of ``key`` when the runs carry them (``import-runs --weight``); FitInputError when only
    some do."""
    errs = [(getattr(r, "stderrs", None) or {}).get(key) for r in runs]
    if all(e is None for e in errs):
        return []
    missing = next((r.run_id for r, e in zip(runs, errs) if e is None or not e > 0), None)
    if missing is not None:
        raise FitInputError(f"run {missing} has no standard error for {key} while others do; weights need one for "
                            "every fitted run (re-import the runs without one with --weight COLUMN --update, or those with one "
                            "without --weight and with --update, for none)")
    return [float(e) for e in errs]


def points_from_runs(runs: Sequence[RunRecord], *, benchmark: str, metric: str = "score", inputs: Sequence[str] = (),
                     experiment: str = "", simulated: bool | None = None,
                     intermediate: tuple[str, str] | None = None) -> Points:
    """Points of the runs that have ``benchmark/metric`` (and every named input).

    Parameters
    ----------
    runs : :class:`grid.models.RunRecord` objects (done runs).
    benchmark, metric : the target is ``metrics["benchmark/metric"]``.
    inputs : input names to collect: ``N``, ``D``, ``C`` or axis names.
    intermediate : ``(input name, metric)`` of a two-step law (e.g. ``("L", "loss")``); the metric
        is of the same benchmark, or ``"other-benchmark/metric"`` (a task loss such as bits per byte). A run
        with the target but not the intermediate (a big model's accuracy without its loss) gets ``NaN``: it can
        be predicted from N and D and scored, not fitted (:func:`fit.experiment.fit_experiment` drops it from
        the fit split).

    Rows imported with a ``step`` column are checkpoints of one run (``metadata["step"]`` and
    ``metadata["checkpoint_of"]``): ``Points.steps`` holds each step and ``Points.final`` marks
    each run's last checkpoint.
    simulated : label; default: True when any run's source is ``simulated``.

    Raises :class:`fit.errors.FitInputError` when no run has the metric (listing the ones present).
    """
    key = f"{benchmark}/{metric}"
    with_metric = [r for r in runs if _present(r.metrics.get(key))]
    inter_key = None
    if intermediate is not None:
        inter_key = intermediate[1] if "/" in intermediate[1] else f"{benchmark}/{intermediate[1]}"
        if with_metric and not any(_present(r.metrics.get(inter_key)) for r in with_metric):
            raise FitInputError(f"no done run has {inter_key!r}, the intermediate stage 1 of a two-step law predicts; "
                                f"metrics present: {', '.join(available_metrics(runs))} (see --stage1-metric)")
    if not with_metric:
        present = ", ".join(available_metrics(runs)) or "none"
        raise FitInputError(f"no done run has metric {key!r}; metrics present: {present}")
    cols: dict[str, list[float]] = {}
    for name in inputs:
        vals = []
        for r in with_metric:
            v = {"N": r.model_params, "D": r.train_tokens, "C": r.train_flops}.get(name, r.recipe.get(name))
            if v is None or not math.isfinite(float(v)):
                column = _COLUMNS.get(name, "axis")
                raise FitInputError(f"run {r.run_id} has no value for input {name!r} ({column}); "
                                    "every fitted run needs it")
            vals.append(float(v))
        cols[name] = vals
    if intermediate is not None:
        cols[intermediate[0]] = [float(r.metrics[inter_key]) if _present(r.metrics.get(inter_key)) else math.nan
                                 for r in with_metric]
    flops = [float(r.train_flops) if r.train_flops is not None else math.nan for r in with_metric]
    if simulated is None:
        simulated = any(r.source == "simulated" for r in with_metric)
    steps, final, owners = _checkpoints(with_metric)
    return Points(inputs=cols, y=[float(r.metrics[key]) for r in with_metric], n_skipped=len(runs) - len(with_metric),
                  steps=steps, final=final, checkpoint_of=owners, weights=_weights(with_metric, key),
                  target="loss" if metric in ("loss", "bpb") else "score", run_ids=[r.run_id for r in with_metric],
                  split=[r.split for r in with_metric], groups=[_group_key(r) for r in with_metric],
                  flops=flops if all(math.isfinite(f) for f in flops) else [], experiment=experiment,
                  benchmark=benchmark, metric=metric, simulated=bool(simulated))


def law_for_runs(name: str, runs: Sequence[RunRecord], config: ExperimentConfig | None = None,
                 axes: Sequence[str] | None = None, repetition: bool = True) -> Law:
    """The law ``name`` specialised to the experiment: its axes, kinds and normalisation.

    Size: ``N / min(N)``; diversity axes: ``x / min`` (the config's lowest design level);
    quality axes: ``(x - min) / (max - min)``. ``axes`` restricts which axes enter.
    Effective-data laws (:data:`EFFECTIVE_LAWS`) also read ``D / min(D)`` and the runs'
    ``unique_tokens`` (repetition); ``chinchilla`` without axes is the published form (raw N
    and D); ``two_step`` uses N and D only. ``repetition=False`` leaves ``unique_tokens`` out of
    ``chinchilla`` (``fit --law chinchilla`` without ``--repetition``: exactly its formula).
    """
    generic = get_law(name)
    kinds = {i.kind for i in generic.inputs}
    effective = name in EFFECTIVE_LAWS
    if not kinds & {"diversity", "quality"} and not effective:
        return generic  # N and D enter unnormalised, as in the published fits
    ax = axis_kinds(config, runs)
    chosen = list(axes) if axes is not None else list(ax)
    unknown = [a for a in chosen if a not in ax]
    if unknown:
        raise FitInputError(f"unknown axis {unknown[0]!r}; axes of this experiment: {', '.join(ax) or 'none'}")
    if not effective or (name == "chinchilla" and not repetition):
        chosen = [a for a in chosen if ax[a]["kind"] != "unique_tokens"]
    if effective and not chosen and name == "chinchilla":
        return generic  # N and D only: the published form, unnormalised
    n_vals = [float(r.model_params) for r in runs if r.model_params]
    if not n_vals:
        raise FitInputError("no run has model_params (N); score laws need the model size of every run")
    inputs = [LawInput(name="N", kind="size", ref=min(n_vals))]
    if effective:
        d_vals = [float(r.train_tokens) for r in runs if r.train_tokens]
        if not d_vals:
            raise FitInputError(f"no run has train_tokens (D); law {name!r} needs the training tokens of every run")
        inputs.append(LawInput(name="D", kind="tokens", ref=min(d_vals)))
    for a in chosen:
        spec = ax[a]
        if spec["kind"] == "unique_tokens":
            inputs.append(LawInput(name=a, kind="unique_tokens"))
            continue
        if spec["kind"] in ("quality", "stage"):  # a stage axis is 0 when the stage is off
            lo, hi = spec["min"], spec["max"]
            if not hi > lo:
                raise FitInputError(f"axis {a!r} has a single level ({lo:g}); a law cannot learn its effect")
            inputs.append(LawInput(name=a, kind="quality", lo=lo, hi=hi))
        else:
            if spec["min"] <= 0:
                raise FitInputError(f"diversity axis {a!r} needs levels > 0 for a power law; min is {spec['min']:g}")
            inputs.append(LawInput(name=a, kind="diversity", ref=spec["min"]))
    return get_law(name, inputs)


def train_stages_of(run: Any) -> list[str]:
    """The training stages a run went through, in order (``metadata.stages``; runs from before stages: SFT)."""
    done = (getattr(run, "metadata", None) or {}).get("stages")
    return [s for s in STAGES if s in done] if isinstance(done, dict) else ["sft"]


def runs_with_stages(runs: Sequence[RunRecord], stages: Sequence[str]) -> list[RunRecord]:
    """The runs trained with exactly ``stages`` (order as they run)."""
    want = list(stages)
    return [r for r in runs if train_stages_of(r) == want]
