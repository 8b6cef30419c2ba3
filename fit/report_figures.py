"""The report's answer-shaped figures: where the law goes out to the target size, where it misses, whether its
intervals hold, and what the allocation buys.

Each function takes the :class:`fit.models.ExperimentFit` a report is about (and what else it needs) and returns
PNG bytes, or None when the figure does not apply. Simulated data is labelled in every title.

- :func:`extrapolation_figure`: the metric against training FLOPs, fitted and held-out runs, and the law's
  prediction with its 90% band along a path of model sizes out to the target size (every axis at the level of
  the largest fitted run's recipe, tokens per parameter as in the largest fitted run).
- :func:`residual_panels_figure`: residuals (actual - predicted, metric units) against model size and each axis.
- :func:`coverage_figure`: the share of held-out runs inside their central prediction interval, at several
  nominal levels (a calibrated law sits on the diagonal).
- :func:`allocation_figure`: spend per axis and the predicted score of the plan and of the diversity-only
  baseline across budgets (stored or computed allocations).
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from fit.laws import law_of
from fit.models import ExperimentFit
from fit.predict import predict_points, required_inputs

__all__ = ["extrapolation_figure", "residual_panels_figure", "coverage_figure", "allocation_figure",
           "COVERAGE_LEVELS"]

COVERAGE_LEVELS = (0.5, 0.68, 0.8, 0.9, 0.95)
"""Nominal levels of the coverage figure."""


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _png(fig) -> bytes:
    plt = _plt()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def _tag(result: ExperimentFit) -> str:
    return " [SIMULATED]" if result.fit.simulated else ""


def _predicted(result: ExperimentFit) -> np.ndarray:
    f = result.fit
    law = law_of(f)
    X = {k: np.asarray(v, dtype=float) for k, v in result.points.inputs.items() if k in required_inputs(f, law)}
    return np.atleast_1d(law.predict(f.params, X)).astype(float)


def extrapolation_figure(result: ExperimentFit, target_n: float | None = None) -> bytes | None:
    """The metric against training FLOPs with the law's 90% band out to ``target_n`` parameters."""
    pts, f = result.points, result.fit
    if "N" not in pts.inputs or not pts.flops or not all(math.isfinite(x) for x in pts.flops):
        return None
    need = required_inputs(f)
    split = pts.split_array()
    fitted = np.flatnonzero(split == "fit")
    if fitted.size == 0:
        return None
    n = np.asarray(pts.inputs["N"], dtype=float)
    c = np.asarray(pts.flops, dtype=float)
    top = fitted[np.argmax(c[fitted])]
    ref = {k: float(np.asarray(pts.inputs[k], dtype=float)[top]) for k in need if k in pts.inputs}
    tpp = c[top] / (6.0 * n[top] ** 2)  # the largest fitted run's tokens per parameter, from its FLOPs
    n_hi = max(float(target_n or 0.0), float(n.max()))
    grid = np.geomspace(float(n[fitted].min()), n_hi * 1.02, 60)
    X = {k: np.full(grid.size, v) for k, v in ref.items()}
    X["N"] = grid
    if "D" in need:
        X["D"] = tpp * grid
    if "U" in need and "U" not in X:
        return None
    try:
        pred, lo, hi = predict_points(f, X, level=0.90)
    except Exception:  # noqa: BLE001 - a figure never fails the report
        return None
    cx = 6.0 * grid * (tpp * grid)
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    ax.fill_between(cx, lo, hi, color="tab:blue", alpha=0.2, label="90% prediction band")
    ax.plot(cx, pred, color="tab:blue", label="law, largest fitted run's recipe")
    y = pts.y_array()
    ax.scatter(c[split == "fit"], y[split == "fit"], s=12, color="0.35", label="fitted runs")
    held = split == "heldout"
    if held.any():
        ax.scatter(c[held], y[held], s=30, marker="x", color="tab:red", label="held-out runs")
    if target_n:
        ax.axvline(float(cx[-1]), color="0.5", ls=":", label=f"target size N = {target_n:.3g}")
    ax.set_xscale("log")
    ax.set_xlabel("training FLOPs (6 N D)")
    ax.set_ylabel(f"{f.benchmark}/{f.metric}")
    ax.set_title(f"{f.law}: out to the target size{_tag(result)}")
    ax.legend(fontsize=7)
    return _png(fig)


def residual_panels_figure(result: ExperimentFit) -> bytes | None:
    """Residuals (actual - predicted) against model size and each axis; held-out runs marked."""
    pts, f = result.points, result.fit
    names = [k for k in required_inputs(f) if k in pts.inputs and k not in ("D", "U")]
    if not names:
        return None
    try:
        r = pts.y_array() - _predicted(result)
    except Exception:  # noqa: BLE001 - a figure never fails the report
        return None
    split = pts.split_array()
    plt = _plt()
    cols = min(3, len(names))
    rows = math.ceil(len(names) / cols)
    fig, axs = plt.subplots(rows, cols, figsize=(3.6 * cols, 2.8 * rows), squeeze=False, layout="constrained")
    for k, name in enumerate(names):
        ax = axs[k // cols][k % cols]
        x = np.asarray(pts.inputs[name], dtype=float)
        for part, style in (("fit", dict(s=10, color="0.35")), ("heldout", dict(s=26, marker="x", color="tab:red"))):
            m = split == part
            if m.any():
                ax.scatter(x[m], r[m], label=part, **style)
        ax.axhline(0.0, color="0.6", lw=0.8)
        if name == "N" or (x > 0).all() and x.max() / max(x.min(), 1e-300) > 20:
            ax.set_xscale("log")
        ax.set_xlabel("model size N" if name == "N" else name)
        ax.set_ylabel("residual" if k % cols == 0 else "")
    for k in range(len(names), rows * cols):
        axs[k // cols][k % cols].axis("off")
    axs[0][0].legend(fontsize=7)
    fig.suptitle(f"Residuals by size and by axis{_tag(result)}", fontsize=10)
    return _png(fig)


def coverage_figure(result: ExperimentFit) -> bytes | None:
    """Observed against nominal coverage of the held-out runs' central prediction intervals."""
    pts, f = result.points, result.fit
    final = np.asarray(pts.final, dtype=bool) if pts.final else np.ones(pts.n, dtype=bool)
    held = (pts.split_array() == "heldout") & final
    if held.sum() < 2 or not (f.bootstrap or f.forms or f.extrapolation_sd):
        return None
    need = required_inputs(f)
    X = {k: np.asarray(v, dtype=float)[held] for k, v in pts.inputs.items() if k in need}
    y = pts.y_array()[held]
    observed = []
    try:
        for level in COVERAGE_LEVELS:
            _, lo, hi = predict_points(f, X, level=level)
            observed.append(float(np.mean((y >= lo) & (y <= hi))))
    except Exception:  # noqa: BLE001 - a figure never fails the report
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(4.2, 4.2))
    ax.plot([0, 1], [0, 1], color="0.6", ls="--", lw=0.8, label="calibrated")
    ax.plot(COVERAGE_LEVELS, observed, marker="o", color="tab:blue", label=f"held-out runs (n = {int(held.sum())})")
    ax.set_xlim(0.4, 1.0)
    ax.set_ylim(0.0, 1.02)
    ax.set_xlabel("nominal level")
    ax.set_ylabel("share of held-out runs inside")
    ax.set_title(f"Held-out coverage{_tag(result)}", fontsize=10)
    ax.legend(fontsize=7)
    return _png(fig)


def allocation_figure(plans: Sequence[dict[str, Any]], *, unit: str = "usd", metric: str = "score",
                      simulated: bool = False, at: str = "") -> bytes | None:
    """Spend per axis (stacked) and the predicted metric of the plan and the baseline across budgets.

    ``plans``: dicts with ``budget``, ``spend`` (axis -> spend), ``score``, ``interval`` (or None),
    ``baseline`` and ``unspent``, one per budget, all for one model; ``at`` names it in the titles
    (``N = 1.4e+09, D = 2e+10``: :meth:`fit.models.AllocationBasis.label`).
    """
    plans = sorted((p for p in plans if p.get("spend") is not None), key=lambda p: p["budget"])
    if not plans:
        return None
    plt = _plt()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained")
    axes = sorted({k for p in plans for k in p["spend"]})
    x = np.arange(len(plans))
    bottom = np.zeros(len(plans))
    for name in axes:
        v = np.array([p["spend"].get(name, 0.0) for p in plans])
        a1.bar(x, v, bottom=bottom, label=name)
        bottom += v
    unspent = np.array([p.get("unspent", 0.0) for p in plans])
    if unspent.any():
        a1.bar(x, unspent, bottom=bottom, color="none", edgecolor="0.5", hatch="//", label="unspent")
    a1.set_xticks(x, [f"{p['budget']:.3g}" for p in plans], rotation=30)
    a1.set_xlabel(f"budget ({unit})")
    a1.set_ylabel(f"spend ({unit})")
    tag = f" ({at})" if at else ""
    a1.set_title(f"Spend per axis{tag}", fontsize=10)
    a1.legend(fontsize=7)
    b = [p["budget"] for p in plans]
    a2.plot(b, [p["score"] for p in plans], marker="o", label="plan")
    iv = [p.get("interval") for p in plans]
    if all(i is not None for i in iv):
        a2.fill_between(b, [i[0] for i in iv], [i[1] for i in iv], alpha=0.2, label="plan, 90% predictive")
    a2.plot(b, [p["baseline"] for p in plans], marker="s", ls="--", label="diversity-only baseline")
    a2.set_xscale("log")
    a2.set_xlabel(f"budget ({unit})")
    a2.set_ylabel(metric)
    a2.set_title(f"The plan across budgets{tag}", fontsize=10)
    a2.legend(fontsize=7)
    if simulated:
        fig.suptitle("[SIMULATED]", fontsize=9)
    return _png(fig)
