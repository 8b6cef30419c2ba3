"""Plots of allocation plans (matplotlib, Agg backend)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from allocator.models import AllocationPlan, VerificationReport

__all__ = ["sweep_plot", "verification_plot"]


def sweep_plot(plans: Sequence[AllocationPlan], path: str | Path, metric: str = "score") -> Path:
    """Two panels over budget: spend share per axis (stacked) and the predicted ``metric`` vs the baseline."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    budgets = [p.budget.value for p in plans]
    keys = sorted({k for p in plans for k in p.plan.spend})
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    shares = [[p.plan.spend.get(k, 0.0) / max(p.plan.total_cost, 1e-12) for p in plans] for k in keys]
    ax1.stackplot(budgets, shares, labels=keys)
    _budget_axis(ax1, budgets)
    ax1.set_xlabel(f"budget ({plans[0].budget.unit})")
    ax1.set_ylabel("share of spend")
    ax1.set_title("where the budget goes")
    ax1.legend(fontsize=8, loc="upper left")
    ax2.plot(budgets, [p.plan.predicted_score for p in plans], "o-", label="recommended plan")
    ax2.plot(budgets, [p.baseline.predicted_score for p in plans], "s--", label="diversity-only baseline")
    ivs = [p.interval for p in plans]
    if all(iv is not None for iv in ivs):
        ax2.fill_between(budgets, [iv[0] for iv in ivs], [iv[1] for iv in ivs], alpha=0.2, label="90% interval")
    _budget_axis(ax2, budgets)
    ax2.set_xlabel(f"budget ({plans[0].budget.unit})")
    ax2.set_ylabel(f"predicted {plans[0].benchmark}/{metric}")
    ax2.set_title(f"predicted {metric}")
    ax2.legend(fontsize=8)
    return _save(fig, path)


def _save(fig, path: str | Path) -> Path:
    """Lay out, write ``path`` (110 dpi, parent folders made) and close the figure."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def _short(x: float) -> str:
    """``2000 -> 2k``, ``3068 -> 3.1k``, ``1.5e6 -> 1.5M``, ``500 -> 500``."""
    for div, suffix in ((1e6, "M"), (1e3, "k")):
        if abs(x) >= div:
            v = x / div
            return f"{v:.2g}{suffix}" if v < 10 else f"{v:.0f}{suffix}"
    return f"{x:.3g}"


def _budget_axis(ax, budgets: Sequence[float]) -> None:
    """Log budget axis ticked at the swept budgets only (matplotlib's minor labels overlap on short ranges)."""
    from matplotlib.ticker import FixedLocator, NullFormatter, NullLocator

    ax.set_xscale("log")
    ax.xaxis.set_major_locator(FixedLocator(list(budgets)))
    ax.xaxis.set_major_formatter(lambda v, _pos: _short(v))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_minor_formatter(NullFormatter())


def verification_plot(report: VerificationReport, path: str | Path) -> Path:
    """Predicted (x, with its 90% interval) against realised (y, seed mean with its 90% CI, and each seed) per plan."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.6, 5.0))
    values = []
    for arm, marker in zip(report.arms, ("o", "s", "^")):
        x = arm.predicted_score
        values.append(x)
        xerr = None
        if arm.predicted_interval:
            xerr = [[x - arm.predicted_interval[0]], [arm.predicted_interval[1] - x]]
            values += list(arm.predicted_interval)
        seeds = [s for s in arm.realised_scores if s is not None]
        if arm.realised_mean is not None:
            yerr = None
            if arm.realised_ci:
                yerr = [[arm.realised_mean - arm.realised_ci[0]], [arm.realised_ci[1] - arm.realised_mean]]
                values += list(arm.realised_ci)
            ax.errorbar([x], [arm.realised_mean], xerr=xerr, yerr=yerr, fmt=marker, capsize=4,
                        label=f"{arm.name} ({len(seeds)} seed{'s' if len(seeds) != 1 else ''})")
            ax.scatter([x] * len(seeds), seeds, s=12, alpha=0.5, color="grey")
            values += seeds
    if values:
        lo, hi = min(values), max(values)
        pad = 0.08 * (hi - lo or abs(hi) or 1.0)
        ax.plot([lo - pad, hi + pad], [lo - pad, hi + pad], "k:", lw=1, label="realised = predicted")
    ax.set_xlabel(f"predicted {report.benchmark}/{report.metric}")
    ax.set_ylabel(f"realised {report.benchmark}/{report.metric}")
    gain = "n/a" if report.realised_gain is None else f"{report.realised_gain:+.3g}"
    ax.set_title(f"{report.budget} at {report.model_size}: realised gain {gain}, predicted "
                 f"{report.predicted_gain:+.3g}", fontsize=9)
    ax.legend(fontsize=8)
    return _save(fig, path)
