"""Laws of one experiment fitted two or more ways, side by side.

- By training stages (SFT against SFT+GRPO): the research plan asks whether the law survives a change of
  objective. ``toolscale report --compare-stages sft --compare-stages sft,grpo`` fits the same law to the
  runs of each stage set.
- By axes (requested quality knobs against the probe's measured groundedness): ``toolscale report
  --compare-axes tool_diversity,repair_rate --compare-axes tool_diversity,measured_groundedness`` fits the
  same runs with each axis set (issue 18: does measured quality explain the runs better than the knobs?).

Each writes one table: each parameter with its 95% interval, the BIC, and the held-out error, per fit.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from fit.models import FitSummary

__all__ = ["StageComparison", "comparison_markdown"]


class StageComparison(BaseModel):
    """Fits of one benchmark per stage set (``"sft"``, ``"sft+grpo"``), in the order asked."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    experiment: str
    """Experiment name."""
    benchmark: str
    """Benchmark fitted."""
    fits: dict[str, FitSummary]
    """Stage set (``+``-joined) or axis set (``,``-joined) -> its fit summary."""
    by: Literal["stages", "axes"] = "stages"
    """What differs between the fits: the runs' training stages, or the law's axes (same runs)."""


def _num(x: float | None) -> str:
    return "—" if x is None else f"{x:.4g}"


def comparison_markdown(cmp: StageComparison) -> str:
    """The comparison as a Markdown document: parameters (estimate [95% CI]) and held-out error per stage set."""
    labels = list(cmp.fits)
    names = sorted({p for f in cmp.fits.values() for p in f.params})
    what = "training stages" if cmp.by == "stages" else "axes"
    lines = [f"# Laws by {what}: {cmp.experiment} / {cmp.benchmark}", "",
             "| | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
    rows = [("law", [f.law for f in cmp.fits.values()]), ("runs fitted", [str(f.n_points) for f in cmp.fits.values()]),
            ("BIC", [_num(f.bic) for f in cmp.fits.values()])]
    for name in names:
        cells = []
        for f in cmp.fits.values():
            p = f.params.get(name)
            cells.append("—" if p is None else f"{_num(p.estimate)} [{_num(p.lo)}, {_num(p.hi)}]")
        rows.append((name, cells))
    rows += [("held-out runs", [str(f.heldout_n) for f in cmp.fits.values()]),
             ("held-out MAE", [_num(f.heldout_mae) for f in cmp.fits.values()]),
             ("held-out relative MAE", [_num(f.heldout_relative_mae) for f in cmp.fits.values()]),
             ("90% interval coverage", [_num(f.interval_coverage) for f in cmp.fits.values()])]
    lines += [f"| {k} | " + " | ".join(v) + " |" for k, v in rows]
    if cmp.by == "stages":
        lines += ["", "Intervals are 95% bootstrap intervals of each fit. A parameter whose intervals do not overlap "
                      "differs between the objectives: the law does not carry over unchanged."]
    else:
        lines += ["", "The same runs, fitted with each axis set (95% bootstrap intervals). A lower BIC and held-out "
                      "error mean those axes explain the runs better; equal figures mean the data cannot tell the "
                      "axis sets apart."]
    return "\n".join(lines) + "\n"
