"""synth/envs/qa_graph.py: the four structural checks as code."""

from __future__ import annotations

from pathlib import Path

from synth.envs.qa_graph import structural_problems, to_digraph, tool_hops
from synth.envs.io import load_envs

FIX = Path(__file__).parent / "fixtures"


def _sample():
    (s,) = load_envs(FIX / "astra_baggage_fixed.jsonl")
    return s


def _with_node(sample, nid, **update):
    return sample.model_copy(update={"nodes": [n.model_copy(update=update) if n.id == nid else n
                                               for n in sample.nodes]})


def test_sound_graph_has_no_problems_and_counts_hops():
    s = _sample()
    assert structural_problems(s) == []
    assert tool_hops(to_digraph(s.nodes)) == 4


def test_unknown_dependency_and_self_loop():
    s = _with_node(_sample(), "q2", depends_on=["q1", "q9"])
    assert any("unknown node 'q9'" in p for p in structural_problems(s))
    s = _with_node(_sample(), "q2", depends_on=["q2"])
    assert any("depends on itself" in p for p in structural_problems(s))


def test_cycle_is_named():
    s = _with_node(_sample(), "q1", depends_on=["q3"], mode="serial")
    (p,) = structural_problems(s)
    assert "cyclic dependency graph" in p and "q1" in p and "q3" in p


def test_atomic_order_and_sufficiency():
    s = _with_node(_sample(), "q3", answer="  ")
    assert any("node q3 has no answer" in p for p in structural_problems(s))
    s = _with_node(_sample(), "q2", mode="parallel")
    assert any("marked 'parallel'" in p for p in structural_problems(s))
    s = _sample().model_copy(update={"main_answer": "something else"})
    assert any(p.startswith("sufficient: final node q4") for p in structural_problems(s))
    s = _with_node(_sample(), "q2", arguments={"reservation_id": "RES-NOT-DERIVABLE"})
    assert any(p.startswith("order: argument reservation_id") for p in structural_problems(s))


def test_hop_budget_and_targets():
    s = _sample().model_copy(update={"hop_budget": 3})
    assert any("exceed the hop budget H=3" in p for p in structural_problems(s))
    s = _sample().model_copy(update={"targets": _sample().targets[:3]})
    assert any("tool nodes ['q4'] have no target" in p for p in structural_problems(s))
