"""Tool transition graphs: an edge A -> B when an output field of A can fill a required argument of B.

The match score of an output field ``f`` for a required parameter ``p`` (with description ``d`` and JSON
type ``t``) is

* 1.0 when ``f == p``;
* 0.8 when one name ends with ``"_" +`` the other (``arrival_city`` -> ``city``,
  ``account_id`` -> ``from_account_id``) and ``t`` is ``string``;
* 0.6 when ``f`` appears verbatim in ``d`` (``manager_id`` in "Approving manager's manager_id") and
  ``t`` is ``string``;
* 0 otherwise (numbers only match by exact name).

Generic field names (:data:`GENERIC_FIELDS`: ``name``, ``date``, ``status``...) score at most 0.3: a
room's ``name`` is no person's ``name``. Pairs scoring below :data:`MIN_SCORE` (0.5) make no edge.
The edge weight is the best score over B's required parameters. Chains are length-bounded random walks
whose next step is drawn with probability proportional to the edge weight (not exhaustive enumeration),
deduplicated by signature elsewhere (:mod:`synth.plans`).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import networkx as nx

from synth.models import ToolDoc

__all__ = ["GENERIC_FIELDS", "MIN_SCORE", "match_score", "edge_matches", "tool_graph", "random_walk", "entry_tools"]


GENERIC_FIELDS = frozenset({"name", "date", "title", "status", "text", "count", "type", "kind", "id", "result"})
"""Field names too generic to link tools on their own."""

MIN_SCORE = 0.5
"""Smallest match score that makes an edge."""


def match_score(field: str, param: str, param_type: str = "string", param_description: str = "") -> float:
    """How well an output field named ``field`` fills parameter ``param`` (see the module docstring)."""
    if field == param:
        return 0.3 if field in GENERIC_FIELDS else 1.0
    if param_type != "string" or not field or not param:
        return 0.0
    if param.endswith("_" + field) or field.endswith("_" + param):
        return 0.8
    if "_" in field and f" {field} " in f" {param_description} ".replace(",", " ").replace(".", " "):
        return 0.6
    return 0.0


def edge_matches(a: ToolDoc, b: ToolDoc, user: bool = False) -> list[tuple[str, str, float]]:
    """``(field of a, required param of b, score)`` for every scoring pair, best first (a user server's
    pairs by :func:`synth.observe.user_match`)."""
    props = b.parameters.get("properties", {})
    out = []
    for p in b.required:
        spec = props.get(p, {}) if isinstance(props.get(p), dict) else {}
        for f in a.output_fields:
            if user:
                from synth.observe import user_match

                s = user_match(f, p, str(spec.get("description", "")), b.description)
            else:
                s = match_score(f, p, str(spec.get("type", "string")), str(spec.get("description", "")))
            if s >= MIN_SCORE:
                out.append((f, p, s))
    out.sort(key=lambda m: (-m[2], m[1], m[0]))
    return out


def tool_graph(docs: Sequence[ToolDoc], user: bool = False) -> nx.DiGraph:
    """The transition graph of one server's tools (nodes: tool names with ``doc``; edges: ``weight``, ``matches``).

    Examples
    --------
    >>> a = ToolDoc(server="s", name="find", description="d", output_fields=["item_id"])
    >>> b = ToolDoc(server="s", name="get", description="d", parameters={"type": "object",
    ...     "properties": {"item_id": {"type": "string"}}, "required": ["item_id"]})
    >>> list(tool_graph([a, b]).edges(data="weight"))
    [('find', 'get', 1.0)]
    """
    g = nx.DiGraph()
    for d in docs:
        g.add_node(d.name, doc=d)
    for a in docs:
        for b in docs:
            if a.name == b.name:
                continue
            m = edge_matches(a, b, user)
            if m:
                g.add_edge(a.name, b.name, weight=max(s for _, _, s in m), matches=m)
    return g


def entry_tools(graph: nx.DiGraph, sourceable: dict[str, set[str]]) -> list[str]:
    """Tools whose required arguments can all come from the user query (``sourceable[tool]``)."""
    return sorted(n for n, d in graph.nodes(data="doc") if set(d.required) <= sourceable.get(n, set()))


def random_walk(graph: nx.DiGraph, rng: random.Random, max_len: int, start: str | None = None) -> tuple[str, ...]:
    """One walk of 1..``max_len`` distinct tools; each step is weighted by the edge weight."""
    nodes = sorted(graph.nodes)
    if not nodes:
        return ()
    cur = start if start is not None else rng.choice(nodes)
    length = rng.randint(1, max_len)
    walk = [cur]
    while len(walk) < length:
        nxt = [(n, graph.edges[cur, n]["weight"]) for n in sorted(graph.successors(cur)) if n not in walk]
        if not nxt:
            break
        total = sum(w for _, w in nxt)
        x, acc = rng.random() * total, 0.0
        for n, w in nxt:
            acc += w
            if x <= acc:
                cur = n
                break
        else:
            cur = nxt[-1][0]
        walk.append(cur)
    return tuple(walk)
