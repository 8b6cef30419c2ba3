"""What ``allocate`` said before a ``toolscale next`` proposal's runs were added: shown beside the new interval.

``grid design --augment`` keeps the whole proposal (a :class:`allocator.models.NextRuns`) in its group's
design record; once a refit includes some of the group's runs, :func:`earlier_proposal` returns the
interval the proposal was made from.
"""

from __future__ import annotations

import math
from typing import Any

from allocator.models import EarlierInterval
from grid.models import AUGMENT_KIND

__all__ = ["earlier_proposal"]


def earlier_proposal(reg: Any, experiment: str, benchmark: str, budget: float, fit_id: str
                     ) -> EarlierInterval | None:
    """The newest ``next`` proposal at ``budget`` whose runs were added (``grid design --augment``), made from a fit
    other than ``fit_id``, once some of its runs are done: what ``allocate`` said then. None otherwise."""
    for d in reversed(reg.designs(experiment)):
        s = d["summary"]
        prop = s.get("proposal") or {}
        if s.get("kind") != AUGMENT_KIND or prop.get("benchmark") != benchmark:
            continue
        if not math.isclose(float(prop.get("budget", {}).get("value", -1)), budget, rel_tol=1e-9):
            continue
        if prop.get("fit_id") == fit_id:
            return None
        group_runs = [r for r in reg.runs(experiment) if r.design_version == d["design_version"]]
        done = sum(r.status == "done" for r in group_runs)
        if not done:
            return None
        return EarlierInterval(group=d["design_version"], fit_id=prop["fit_id"], runs=len(group_runs),
                               runs_done=done, gain_over_baseline=prop["gain_over_baseline"],
                               gain_interval=prop.get("gain_interval"),
                               expected_width_after=prop["expected_width_after"],
                               decision=prop["decision"]["verdict"])
    return None
