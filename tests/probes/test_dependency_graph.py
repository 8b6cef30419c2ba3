from __future__ import annotations

from probes.dependency_graph import action_graph, dependency_graph
from probes.provenance import parse_row, trace_trajectory


def test_dependency_graph_edges(handmade):
    row = parse_row(handmade[0])
    p = trace_trajectory(row)
    g = dependency_graph(p, row)
    assert g.has_edge("obs:1", "act:call_1") and g.edges["obs:1", "act:call_1"]["rel"] == "supports"
    assert g.has_edge("act:call_1", "obs:3") and g.edges["act:call_1", "obs:3"]["rel"] == "produces"
    assert g.has_edge("obs:3", "act:call_2")
    assert g.has_edge("obs:1", "act:call_2")  # seats=1 comes from the user turn
    assert not g.has_edge("obs:5", "act:call_1")
    assert g.nodes["act:call_2"]["depth"] == 2


def test_action_graph_contracts_observations(handmade):
    g = action_graph(trace_trajectory(handmade[0]))
    assert list(g.edges) == [("call_1", "call_2")]
    g = action_graph(trace_trajectory(handmade[1]))
    assert list(g.edges) == []  # the invented id links to nothing
