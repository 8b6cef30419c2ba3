"""Plots of allocation plans (matplotlib, Agg backend)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from allocator.models import AllocationPlan

__all__ = ["sweep_plot"]


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
    ax1.set_xscale("log")
    ax1.set_xlabel(f"budget ({plans[0].budget.unit})")
    ax1.set_ylabel("share of spend")
    ax1.set_title("where the budget goes")
    ax1.legend(fontsize=8, loc="upper left")
    ax2.plot(budgets, [p.plan.predicted_score for p in plans], "o-", label="recommended plan")
    ax2.plot(budgets, [p.baseline.predicted_score for p in plans], "s--", label="diversity-only baseline")
    ivs = [p.interval for p in plans]
    if all(iv is not None for iv in ivs):
        ax2.fill_between(budgets, [iv[0] for iv in ivs], [iv[1] for iv in ivs], alpha=0.2, label="90% interval")
    ax2.set_xscale("log")
    ax2.set_xlabel(f"budget ({plans[0].budget.unit})")
    ax2.set_ylabel(f"predicted {plans[0].benchmark}/{metric}")
    ax2.set_title(f"predicted {metric}")
    ax2.legend(fontsize=8)
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
