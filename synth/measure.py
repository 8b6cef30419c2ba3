"""The measured side of a manifest: what the accepted trajectories actually are.

* ``tool_diversity``: distinct ``server.tool`` called in accepted trajectories;
* ``task_count``: accepted trajectories;
* ``db_diversity``: mean over servers of the distinct database instances used;
* ``coverage_quota``: the smallest share of a dependency structure, ``min_s n_s / n``;
* ``support_depth`` / ``mean_support_depth``: the largest / mean per-trajectory support hops;
* ``derivable_share``: non-retry actions whose arguments are all in visible history / all such actions;
* ``repair_rate``: repaired / (repaired + still non-derivable) action ids (absent without any);
* ``error_rate``: injected errors / call attempts;
* ``acceptance_rate`` and ``judge_mean``.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

from synth.models import STRUCTURES

__all__ = ["summarize"]


def summarize(metas: list[dict], traces: list[Any], provs: list[Any], hops_max: list[int], *, judged: int,
              approx_tokens: Callable[[str], int]) -> tuple[dict[str, float], dict[str, int]]:
    """``(measured, counts)`` of the accepted trajectories (see the module docstring)."""
    n_acc = len(metas)
    used_tools = sorted({f"{m['server']}.{c}" for m, tr in zip(metas, traces) for c in
                         {rec.tool for rec in tr.records}})
    by_srv_db: dict[str, set[str]] = defaultdict(set)
    for m in metas:
        by_srv_db[m["server"]].add(m["db_id"])
    struct = Counter(m["structure"] for m in metas)
    n_nd = sum(len(m["nonderivable_calls"]) for m in metas)
    n_rep = sum(len(m["repaired_calls"]) for m in metas)
    planned_actions = [p for p in provs if not p.retry]
    attempts = sum(len(tr.records) for tr in traces)
    injected = sum(len(tr.injected) for tr in traces)
    tokens = sum(approx_tokens(" ".join((msg["content"] or "") + "".join(
        c["function"]["arguments"] for c in (msg["tool_calls"] or [])) for msg in tr.messages)) for tr in traces)
    measured: dict[str, float] = {
        "tool_diversity": float(len(used_tools)),
        "task_count": float(n_acc),
        "db_diversity": (sum(len(v) for v in by_srv_db.values()) / len(by_srv_db)) if by_srv_db else 0.0,
        "coverage_quota": min(struct.get(s, 0) for s in STRUCTURES) / n_acc if n_acc else 0.0,
        "support_depth": float(max(hops_max, default=0)),
        "mean_support_depth": sum(hops_max) / len(hops_max) if hops_max else 0.0,
        "derivable_share": (sum(p.derivable for p in planned_actions) / len(planned_actions)) if planned_actions else 1.0,
        "error_rate": injected / attempts if attempts else 0.0,
        "acceptance_rate": n_acc / judged if judged else 0.0,
        "judge_mean": sum(m["judge"]["mean"] for m in metas) / n_acc if n_acc else 0.0,
    }
    if n_nd + n_rep:
        measured["repair_rate"] = n_rep / (n_nd + n_rep)
    counts = {"trajectories": judged, "accepted": n_acc, "messages": sum(len(tr.messages) for tr in traces),
              "tool_calls": attempts, "injected_errors": injected, "tokens": tokens,
              "nonderivable_calls": n_nd, "repaired_calls": n_rep,
              "server_only_tasks": sum(m["task_kind"] == "server" for m in metas)}
    return measured, counts
