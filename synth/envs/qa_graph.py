"""QA dependency graphs: the DAG of sub-questions and the four structural checks, as code.

The seed (000, Q4) has an LLM check four properties of a decomposition; here they are deterministic checks
on the graph stored in the artifact:

1. **dependencies sound**: every ``depends_on`` names an existing other node, and the graph is acyclic;
2. **sub-questions atomic**: each node has a question and exactly one answer, and at most one tool call whose
   arguments are a JSON object; a reasoning node (no tool) derives from at least one other node;
3. **order executable**: a topological order exists and every golden argument is available when the node runs:
   it occurs in the prompt or equals the answer of one of the node's ancestors (a node with dependencies is
   ``serial``);
4. **together sufficient**: there is exactly one sink, every node is one of its ancestors, and its answer is
   the main answer.

They also check that the targets are exactly the tool nodes' golden calls, and that the longest chain of tool
hops does not exceed the hop budget H.
"""

from __future__ import annotations

from collections.abc import Sequence

import networkx as nx

from synth.envs.models import EnvSample, QANode
from synth.envs.reward import canonical_answer

__all__ = ["to_digraph", "structural_problems", "tool_hops", "value_available"]


def to_digraph(nodes: Sequence[QANode]) -> nx.DiGraph:
    """The DAG with an edge ``dep -> node`` for every dependency (unknown dependencies are skipped)."""
    g = nx.DiGraph()
    ids = {n.id for n in nodes}
    for n in nodes:
        g.add_node(n.id, node=n)
    for n in nodes:
        for d in n.depends_on:
            if d in ids:
                g.add_edge(d, n.id)
    return g


def tool_hops(g: nx.DiGraph) -> int:
    """Number of tool nodes on the longest path of the DAG (0 for an empty graph)."""
    best: dict[str, int] = {}
    for nid in nx.topological_sort(g):
        own = 1 if g.nodes[nid]["node"].tool else 0
        best[nid] = own + max((best[p] for p in g.predecessors(nid)), default=0)
    return max(best.values(), default=0)


def value_available(value: object, prompt: str, known: Sequence[str]) -> bool:
    """True when an argument value occurs in the prompt or equals one of the ``known`` answer strings."""
    text = canonical_answer(value)
    if not text:
        return True
    if text in known:
        return True
    return text.casefold() in prompt.casefold()


def _dependency_problems(nodes: Sequence[QANode]) -> list[str]:
    """Check 1, ids and edges: duplicate ids, self-dependencies, dependencies on unknown nodes."""
    problems: list[str] = []
    ids = [n.id for n in nodes]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        problems.append(f"graph: duplicate node ids {dup}")
    known_ids = set(ids)
    for n in nodes:
        for d in n.depends_on:
            if d == n.id:
                problems.append(f"dependencies: node {n.id} depends on itself")
            elif d not in known_ids:
                problems.append(f"dependencies: node {n.id} depends on unknown node {d!r}")
    return problems


def _cycle_problem(g: nx.DiGraph) -> str | None:
    """Check 1, acyclicity: the cycle as ``a -> b -> a``, or None for a DAG."""
    if nx.is_directed_acyclic_graph(g):
        return None
    cycle = nx.find_cycle(g)
    path = " -> ".join([u for u, _ in cycle] + [cycle[0][0]])
    return f"dependencies: cyclic dependency graph ({path})"


def _atomic_problems(nodes: Sequence[QANode]) -> list[str]:
    """Check 2 (and the serial mode of check 3): one question, one answer, a tool's golden arguments."""
    problems: list[str] = []
    for n in nodes:
        if not n.question.strip():
            problems.append(f"atomic: node {n.id} has no question")
        if n.answer is None or not str(n.answer).strip():
            problems.append(f"atomic: node {n.id} has no answer")
        if n.tool is not None and n.arguments is None:
            problems.append(f"atomic: tool node {n.id} has no golden arguments")
        if n.tool is None and not n.depends_on:
            problems.append(f"atomic: reasoning node {n.id} depends on no other node (nothing to derive it from)")
        if n.depends_on and n.mode != "serial":
            problems.append(f"order: node {n.id} has dependencies but is marked {n.mode!r} (expected 'serial')")
    return problems


def _order_problems(nodes: Sequence[QANode], g: nx.DiGraph, prompt: str) -> list[str]:
    """Check 3: every golden argument occurs in the prompt or is an answer of one of the node's ancestors."""
    problems: list[str] = []
    for n in nodes:
        if n.tool is None or not n.arguments:
            continue
        known = [canonical_answer(g.nodes[a]["node"].answer) for a in nx.ancestors(g, n.id)
                 if g.nodes[a]["node"].answer is not None]
        for key, value in n.arguments.items():
            if not value_available(value, prompt, known):
                problems.append(f"order: argument {key}={value!r} of node {n.id} is neither in the prompt nor "
                                f"an answer of an earlier node")
    return problems


def _sufficiency_problems(sample: EnvSample, g: nx.DiGraph) -> list[str]:
    """Check 4: one sink, every node one of its ancestors, and the sink answers the main question."""
    sinks = [nid for nid in g.nodes if g.out_degree(nid) == 0]
    if len(sinks) != 1:
        return [f"sufficient: expected one final node, found {len(sinks)} sinks {sorted(sinks)}"]
    problems: list[str] = []
    sink = sinks[0]
    dangling = sorted({n.id for n in sample.nodes} - nx.ancestors(g, sink) - {sink})
    if dangling:
        problems.append(f"sufficient: nodes {dangling} do not contribute to the final node {sink}")
    final = g.nodes[sink]["node"].answer
    if sample.main_answer is None or not str(sample.main_answer).strip():
        problems.append("sufficient: the main question has no answer")
    elif final is not None and canonical_answer(final) != canonical_answer(sample.main_answer):
        problems.append(f"sufficient: final node {sink} answers {final!r}, main answer is "
                        f"{sample.main_answer!r}")
    return problems


def _target_problems(sample: EnvSample) -> list[str]:
    """The targets are exactly the tool nodes' golden calls: one each, same tool, arguments and answer."""
    problems: list[str] = []
    tool_nodes = {n.id: n for n in sample.nodes if n.tool is not None}
    seen: set[str] = set()
    for t in sample.targets:
        n = tool_nodes.get(t.node)
        if n is None:
            problems.append(f"targets: target for {t.node!r} is not a tool node")
            continue
        if t.node in seen:
            problems.append(f"targets: node {t.node} has two targets")
        seen.add(t.node)
        if t.tool != n.tool or (n.arguments or {}) != t.arguments or (
                n.answer is not None and canonical_answer(n.answer) != canonical_answer(t.answer)):
            problems.append(f"targets: target of node {t.node} differs from the node's golden call")
    missing = sorted(set(tool_nodes) - seen)
    if missing:
        problems.append(f"targets: tool nodes {missing} have no target")
    return problems


def structural_problems(sample: EnvSample) -> list[str]:
    """Every structural defect of the sample's graph and targets, one line each (empty when sound).

    The checks run in the module docstring's order; a cyclic graph stops after check 1
    (the later checks need a topological order).
    """
    nodes = sample.nodes
    if not nodes:
        return ["graph: no sub-questions"]
    problems = _dependency_problems(nodes)
    g = to_digraph(nodes)
    cycle = _cycle_problem(g)
    if cycle is not None:
        return [*problems, cycle]
    problems += _atomic_problems(nodes)
    problems += _order_problems(nodes, g, sample.prompt)
    problems += _sufficiency_problems(sample, g)
    problems += _target_problems(sample)
    if sample.hop_budget > 0:
        hops = tool_hops(g)
        if hops > sample.hop_budget:
            problems.append(f"graph: {hops} tool hops exceed the hop budget H={sample.hop_budget}")
    return problems
