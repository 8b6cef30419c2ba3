"""Tool transition graphs on a hand-made server."""

from __future__ import annotations

import random

from synth.tool_graph import match_score, random_walk, tool_graph
from synth.models import ToolDoc


def _doc(name, required=(), outputs=(), desc=None, types=None):
    props = {p: {"type": (types or {}).get(p, "string"), "description": (desc or {}).get(p, p)} for p in required}
    return ToolDoc(server="hand", name=name, description=f"{name} tool",
                   parameters={"type": "object", "properties": props, "required": list(required)},
                   output_fields=list(outputs))


HAND = [
    _doc("find_user", ["name"], ["user_id", "name"]),
    _doc("get_user", ["user_id"], ["user_id", "home_city", "manager_id"]),
    _doc("weather", ["city"], ["temp_c"]),
    _doc("approve", ["approver_id"], ["status"], desc={"approver_id": "the approving manager_id"}),
    _doc("count_things", ["count"], ["total"], types={"count": "integer"}),
]


def test_edges_and_weights():
    g = tool_graph(HAND)
    assert g.edges["find_user", "get_user"]["weight"] == 1.0          # exact name
    assert g.edges["get_user", "weather"]["weight"] == 0.8            # home_city -> city (suffix)
    assert g.edges["get_user", "approve"]["weight"] == 0.6            # manager_id named in the description
    assert not g.has_edge("find_user", "find_user")                   # no self loops
    assert not g.has_edge("weather", "count_things")                  # numbers match by exact name only
    assert ("user_id", "user_id", 1.0) in g.edges["find_user", "get_user"]["matches"]


def test_generic_names_do_not_link():
    assert match_score("name", "name") < 0.5
    assert match_score("status", "status") < 0.5
    assert match_score("order_id", "order_id") == 1.0


def test_random_walk_is_bounded_and_follows_edges():
    g = tool_graph(HAND)
    rng = random.Random(0)
    for _ in range(200):
        w = random_walk(g, rng, 3)
        assert 1 <= len(w) <= 3 and len(set(w)) == len(w)
        assert all(g.has_edge(a, b) for a, b in zip(w, w[1:]))
