"""The observation -> action dependency graph of a trajectory (networkx).

Nodes are observations (``obs:<message index>``, attribute ``kind`` = ``user`` or ``tool``)
and actions (``act:<call id>``, attributes ``tool``, ``depth``, ``derivable``). Edges:

- ``obs -> act`` (``rel="supports"``, ``match`` = strongest match kind): the observation
  holds an argument value of the action;
- ``act -> obs`` (``rel="produces"``): the action's tool output.

The *action graph* contracts observations: an edge ``b -> a`` when an output of ``b``
supports ``a``. Structures are read off the action graph (see :mod:`probes.coverage`).
"""

from __future__ import annotations

import networkx as nx

from probes.models import TrajectoryProvenance
from probes.provenance import ParsedRow

__all__ = ["dependency_graph", "action_graph"]


def dependency_graph(prov: TrajectoryProvenance, row: ParsedRow | None = None) -> nx.DiGraph:
    """Observation/action graph of one trajectory.

    Parameters
    ----------
    prov : TrajectoryProvenance
        From :func:`probes.provenance.trace_trajectory`.
    row : ParsedRow, optional
        The row, to add every observation node (also unused ones) and ``produces`` edges for
        tool outputs that support nothing.
    """
    g = nx.DiGraph()
    if row is not None:
        for j, m in enumerate(row.messages):
            if m.get("role") in ("user", "tool"):
                g.add_node(f"obs:{j}", kind=m["role"], message_index=j)
        by_id = {a.call_id: a for a in prov.actions}
        for j, m in enumerate(row.messages):
            if m.get("role") == "tool" and m.get("tool_call_id") in by_id:
                g.add_edge(f"act:{m['tool_call_id']}", f"obs:{j}", rel="produces")
    for a in prov.actions:
        g.add_node(f"act:{a.call_id}", kind="action", tool=a.tool, depth=a.depth, derivable=a.derivable,
                   message_index=a.message_index)
        best: dict[int, str] = {}
        rank = {"exact": 3, "structured": 2, "normalised": 1}
        for arg in a.arguments:
            for s in arg.sources:
                if s not in best or rank.get(arg.match, 0) > rank.get(best[s], 0):
                    best[s] = arg.match
        for s, match in best.items():
            if f"obs:{s}" not in g:
                g.add_node(f"obs:{s}", message_index=s)
            g.add_edge(f"obs:{s}", f"act:{a.call_id}", rel="supports", match=match)
    return g


def action_graph(prov: TrajectoryProvenance) -> nx.DiGraph:
    """Actions only: edge ``b -> a`` when an output of ``b`` supports ``a`` (a DAG, in call order)."""
    g = nx.DiGraph()
    for a in prov.actions:
        g.add_node(a.call_id, depth=a.depth, derivable=a.derivable, tool=a.tool, message_index=a.message_index)
    for a in prov.actions:
        for p in a.parents:
            if p in g:
                g.add_edge(p, a.call_id)
    return g
