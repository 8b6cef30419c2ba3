"""Held-out extrapolation: which runs the fit sees, and how well it predicts the rest.

How ``--holdout`` relates to the stored ``split`` column
-------------------------------------------------------
The design (grid/) and ``import-runs`` write each run's ``split`` before any result
exists, with the rule ``top-flops:F`` (``grid.split.heldout_mask`` over planned FLOPs).
That decision is kept wherever it applies:

- ``top-flops:F`` (the default, ``F = 0.25``): when the stored column holds held-out
  runs and ``F`` is the fraction it was made with (the experiment config's
  ``design.heldout_fraction``; ``0.25``, the importer's default, for experiments
  without a config), the stored column is used as is -- runs that failed are just
  absent. Otherwise (another ``F``, or nothing stored) the rule is recomputed over
  the done runs' measured FLOPs (ties at the threshold all held out).
- ``split``: the stored column, whatever rule made it.
- ``none``: every done run is fitted; no held-out metrics.
- ``rungs:K``: rolling validation up the ladder (:mod:`fit.rolling`): fit the ``K``
  smallest model sizes and predict the next one, then fit ``K + 1`` and predict the
  next, up to the largest. The stored fit is the last step (every size but the largest
  fitted, the largest held out); ``FitResult.rolling`` has each step's error.

The source used is recorded in ``FitResult.holdout_source``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np

from fit.errors import FitInputError
from fit.laws import Law
from fit.models import FitResult, HeldoutMetrics, HeldoutPoint, Points
from fit.predict import predict_points

__all__ = ["parse_holdout", "apply_holdout", "heldout_metrics", "model_sizes", "seed_mean_error", "DEFAULT_HOLDOUT"]

DEFAULT_HOLDOUT = "top-flops:0.25"
_RULE = re.compile(r"^top-flops:([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)$")
_RUNGS = re.compile(r"^rungs:([0-9]+)$")


def parse_holdout(rule: str) -> tuple[str, float | None]:
    """``"top-flops:0.25"`` -> ``("top-flops", 0.25)``; ``"rungs:2"`` -> ``("rungs", 2)``;
    ``"none"``, ``"split"`` -> ``(rule, None)``."""
    if rule in ("none", "split"):
        return rule, None
    r = _RUNGS.match(rule)
    if r:
        k = int(r.group(1))
        if k < 1:
            raise FitInputError(f"--holdout rungs:K needs K >= 1 fitted model sizes, got {rule!r}")
        return "rungs", float(k)
    m = _RULE.match(rule)
    if not m:
        raise FitInputError(f"--holdout must be top-flops:F (0 <= F < 1), rungs:K, split or none; got {rule!r}")
    f = float(m.group(1))
    if not 0.0 <= f < 1.0:
        raise FitInputError(f"--holdout top-flops fraction must be in [0, 1), got {f:g}")
    return "top-flops", f


def apply_holdout(points: Points, rule: str, stored_fraction: float | None = 0.25) -> tuple[Points, str]:
    """Set each point's split by ``rule``; returns the points and where the split came from.

    ``stored_fraction`` is the fraction the stored split column was made with (None if unknown).
    """
    from grid import heldout_mask

    kind, frac = parse_holdout(rule)
    n = points.n
    stored = list(points.split) if points.split else ["fit"] * n
    if kind == "none" or frac == 0.0:
        return points.model_copy(update={"split": ["fit"] * n}), "none"
    if kind == "split":
        return points.model_copy(update={"split": stored}), "stored split column"
    if kind == "rungs":
        sizes = model_sizes(points, int(frac))
        return (points.model_copy(update={"split": ["heldout" if n == sizes[-1] else "fit"
                                                    for n in points.inputs["N"]]}),
                f"rolling over {len(sizes)} model sizes (last step)")
    if "heldout" in stored and stored_fraction is not None and math.isclose(frac, stored_fraction):
        return points.model_copy(update={"split": stored}), "stored split column"
    if not points.flops or not all(math.isfinite(f) for f in points.flops):
        raise FitInputError(f"--holdout {rule} needs the training FLOPs of every run; some are missing "
                            "(use --holdout none, or import train_flops / model_params and train_tokens)")
    mask = heldout_mask(points.flops, frac)
    return (points.model_copy(update={"split": ["heldout" if h else "fit" for h in mask]}),
            "recomputed over done runs")


def model_sizes(points: Points, k: int) -> list[float]:
    """The distinct model sizes of ``points``, ascending; FitInputError unless there are at least ``k + 1``."""
    if "N" not in points.inputs:
        raise FitInputError("--holdout rungs:K needs the model size (N) of every run")
    sizes = sorted(set(float(n) for n in points.inputs["N"]))
    if len(sizes) < k + 1:
        raise FitInputError(f"--holdout rungs:{k} needs at least {k + 1} model sizes (fit {k}, predict the next); "
                            f"the runs have {len(sizes)} ({', '.join(f'{n:.3g}' for n in sizes)})")
    return sizes


def heldout_metrics(fit: FitResult, law: Law, test: Points, *, train_flops: Sequence[float] = (),
                    level: float = 0.90, seed: int = 0) -> HeldoutMetrics:
    """MAE, maximum error, RMSE, interval coverage and extrapolation factor on ``test``.

    Errors are in the target's unit (score points, or loss). Coverage is the share of
    held-out runs inside their ``level`` prediction interval (only with bootstrap draws).
    The extrapolation factor is ``max(heldout FLOPs) / max(fitted FLOPs)``.
    """
    X = test.X()
    y = test.y_array()
    pred, lo, hi = predict_points(fit, X, level=level, seed=seed, law=law)
    err = np.abs(pred - y)
    has_pi = bool(fit.bootstrap) or bool(fit.forms) or bool(fit.extrapolation_sd)
    coverage = float(np.mean((y >= lo) & (y <= hi))) if has_pi else None
    factor = None
    if test.flops and train_flops and all(math.isfinite(f) for f in (*test.flops, *train_flops)):
        factor = float(max(test.flops) / max(train_flops))
    pts = [HeldoutPoint(run_id=test.run_ids[i] if test.run_ids else str(i), actual=float(y[i]),
                        predicted=float(pred[i]), lo=float(lo[i]) if has_pi else None,
                        hi=float(hi[i]) if has_pi else None,
                        flops=float(test.flops[i]) if test.flops else None) for i in range(test.n)]
    rel = err.mean() / max(float(np.abs(y).mean()), 1e-12)
    are, groups = seed_mean_error(y, pred, test.groups or [str(i) for i in range(test.n)])
    return HeldoutMetrics(n=test.n, mae=float(err.mean()), relative_mae=float(rel), max_error=float(err.max()),
                          rmse=float(np.sqrt((err ** 2).mean())), interval_coverage=coverage, interval_level=level,
                          extrapolation_factor=factor, are_seed_means=are, recipes=groups, points=pts)


def seed_mean_error(actual: np.ndarray, predicted: np.ndarray, groups: Sequence[str]) -> tuple[float | None, int]:
    """``(ARE on seed means, recipes)``: runs of a group (a recipe at one size, any seed) averaged, then
    ``mean_g |mean pred_g - mean actual_g| / |mean actual_g|`` (Choshen et al. 2024's absolute relative error)."""
    by: dict[str, list[int]] = {}
    for i, g in enumerate(groups):
        by.setdefault(g, []).append(i)
    errs = []
    for idx in by.values():
        a, p = float(np.mean(actual[idx])), float(np.mean(predicted[idx]))
        if abs(a) > 1e-12:
            errs.append(abs(p - a) / abs(a))
    return (float(np.mean(errs)) if errs else None), len(by)
