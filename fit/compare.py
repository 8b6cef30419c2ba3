"""Laws of one experiment fitted on different run subsets, side by side (SFT against SFT+GRPO).

The research plan asks whether the law survives a change of objective. ``toolscale report
--compare-stages sft --compare-stages sft,grpo`` fits the same law to the runs of each stage set and
writes one table: each parameter with its 95% interval, and the held-out error, per stage set.
"""

from __future__ import annotations

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
    """Stage set (``+``-joined) -> its fit summary."""


def _num(x: float | None) -> str:
    return "—" if x is None else f"{x:.4g}"


def comparison_markdown(cmp: StageComparison) -> str:
    """The comparison as a Markdown document: parameters (estimate [95% CI]) and held-out error per stage set."""
    labels = list(cmp.fits)
    names = sorted({p for f in cmp.fits.values() for p in f.params})
    lines = [f"# Laws by training stages: {cmp.experiment} / {cmp.benchmark}", "",
             "| | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
    rows = [("law", [f.law for f in cmp.fits.values()]), ("runs fitted", [str(f.n_points) for f in cmp.fits.values()])]
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
    lines += ["", "Intervals are 95% bootstrap intervals of each fit. A parameter whose intervals do not overlap "
                  "differs between the objectives: the law does not carry over unchanged."]
    return "\n".join(lines) + "\n"
