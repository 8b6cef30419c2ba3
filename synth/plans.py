"""Chains and plans: random walks -> argument-flow verification -> structured plans with concrete values.

A *chain* is a verified binding of a tool sequence: every required argument of every step is bound either
to the user query (``("q", source)``) or to an output field of an earlier step (``("ref", j, field)``).
:func:`bind_chain` is the argument-flow check ASTRA's paper describes (and its public code lacks): a step
with a required argument that neither an earlier output nor the query can supply drops the chain with the
reason ``underivable_argument:TOOL.PARAM``; a step that uses no earlier output drops it as
``incoherent_step:TOOL``.

Dependency structures (``meta.structure``), from the bindings' supplier -> consumer graph:

* ``fan-in``: some call takes arguments from two or more distinct earlier calls;
* ``fan-out``: some call's output feeds two or more later calls;
* ``parallel``: two or more calls and no dependencies at all;
* ``chain``: everything else (a single path, including single calls).

Every chain also passes the entity and destruction rules of :func:`synth.chaincheck.chain_problem`
(dropped chains are counted under its reason).

Calls are scheduled in assistant turns: ``turn(i) = 1 + max(turn(j) for suppliers j)`` (1 with none),
so independent calls share a turn as parallel tool calls. *Support depth* of an action is
``turn(action) - turn(supplier)``; :func:`deepen` inserts side calls to reach a target depth.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

import networkx as nx

from synth.chaincheck import chain_problem, entity, side_entities
from synth.tool_graph import entry_tools, random_walk, tool_graph
from synth.models import ToolDoc
from synth.observe import effect

__all__ = ["Arg", "Step", "Chain", "ServerSpec", "bind_chain", "structure_of", "schedule", "sample_chains",
           "fan_out_chains", "fan_in_chains", "parallel_chains", "deepen", "max_hops", "Call", "Plan", "MAX_PER_SIGNATURE",
           "render_intent"]

MAX_PER_SIGNATURE = 3
"""At most this many chains per signature (seed 001's dedup rule)."""

Arg = tuple
"""``("q", source)`` (from the user query) or ``("ref", j, field)`` (from step ``j``'s output)."""


@dataclass(frozen=True)
class Step:
    """One step of a chain: a tool and the binding of its required arguments."""

    tool: str
    args: tuple[tuple[str, Arg], ...]

    def refs(self) -> set[int]:
        return {a[1] for _, a in self.args if a[0] == "ref"}


@dataclass(frozen=True)
class Chain:
    """A verified chain: steps with bindings, its structure and its turn schedule."""

    server: str
    steps: tuple[Step, ...]
    structure: str
    turns: tuple[int, ...]

    @property
    def signature(self) -> str:
        """``server:tool>tool>...``."""
        return f"{self.server}:" + ">".join(s.tool for s in self.steps)

    @property
    def key(self) -> tuple:
        return (self.server, self.steps)


@dataclass
class ServerSpec:
    """A server as synthesis sees it: its offered tools, graph, and where query values come from.

    ``sources[tool][param]`` is the query source of a parameter (see :mod:`synth.servers.catalog`), absent
    when only an earlier output can supply it. ``intents[tool]`` is the task phrase with ``{param}`` or
    ``{param|phrase}`` placeholders.
    """

    name: str
    docs: dict[str, ToolDoc]
    sources: dict[str, dict[str, str]]
    intents: dict[str, str]
    kind: str = "bundled"
    phrasings: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """More phrasings per tool (the first is ``intents[tool]``); empty uses ``intents`` alone."""
    no_refs: frozenset[tuple[str, str]] = frozenset()
    """``(tool, param)`` pairs no earlier output may fill (a user server's given values win, a creating
    tool wants a new name)."""
    graph: nx.DiGraph = field(init=False)
    entries: list[str] = field(init=False)

    def __post_init__(self) -> None:
        self.graph = tool_graph(list(self.docs.values()), user=self.kind == "live")
        for a, b, data in list(self.graph.edges(data=True)):
            keep = [m for m in data["matches"] if (b, m[1]) not in self.no_refs]
            if keep:
                self.graph.edges[a, b].update(matches=keep, weight=max(x[2] for x in keep))
            else:
                self.graph.remove_edge(a, b)
        self.entries = entry_tools(self.graph, {t: set(s) for t, s in self.sources.items()})

    def supplier_field(self, a: str, b: str, param: str) -> str | None:
        """The best output field of tool ``a`` for parameter ``param`` of tool ``b``, or None."""
        if not self.graph.has_edge(a, b):
            return None
        for f, p, _ in self.graph.edges[a, b]["matches"]:
            if p == param:
                return f
        return None


def bind_chain(spec: ServerSpec, tools: tuple[str, ...], forced: dict[tuple[int, str], int] | None = None
               ) -> tuple[Chain | None, str | None]:
    """Verify the argument flow of a tool sequence and bind its arguments (nearest supplier first).

    Parameters
    ----------
    spec : ServerSpec
        The server.
    tools : tuple of str
        Tool names in call order.
    forced : dict, optional
        ``{(step, param): supplier_step}`` bindings to use instead of the nearest supplier.

    Returns
    -------
    (Chain or None, reason or None)
        The chain, or None with the reason it was dropped.
    """
    steps: list[Step] = []
    forced = forced or {}
    for i, t in enumerate(tools):
        doc = spec.docs[t]
        args: list[tuple[str, Arg]] = []
        for p in doc.required:
            arg: Arg | None = None
            order = [forced[(i, p)]] if (i, p) in forced else range(i - 1, -1, -1)
            for j in order:
                f = spec.supplier_field(tools[j], t, p)
                if f is not None:
                    arg = ("ref", j, f)
                    break
            if arg is None and p in spec.sources.get(t, {}):
                arg = ("q", spec.sources[t][p])
            if arg is None:
                return None, f"underivable_argument:{t}.{p}"
            args.append((p, arg))
        step = Step(t, tuple(args))
        if i > 0 and not step.refs() and not forced:
            return None, f"incoherent_step:{t}"
        steps.append(step)
    structure = structure_of(steps)
    return Chain(spec.name, tuple(steps), structure, schedule(steps)), None


def structure_of(steps: tuple[Step, ...] | list[Step]) -> str:
    """The dependency structure of bound steps (see the module docstring)."""
    consumers: Counter[int] = Counter()
    any_ref = False
    for s in steps:
        r = s.refs()
        if len(r) >= 2:
            return "fan-in"
        for j in r:
            consumers[j] += 1
            any_ref = True
    if any(c >= 2 for c in consumers.values()):
        return "fan-out"
    if not any_ref and len(steps) >= 2:
        return "parallel"
    return "chain"


def schedule(steps: tuple[Step, ...] | list[Step]) -> tuple[int, ...]:
    """Assistant turn of each step: ``1 + max(turn of its suppliers)``."""
    turns: list[int] = []
    for s in steps:
        turns.append(1 + max((turns[j] for j in s.refs()), default=0))
    return tuple(turns)


def sample_chains(spec: ServerSpec, rng: random.Random, max_len: int, n_walks: int,
                  dropped: Counter[str]) -> list[Chain]:
    """Random walks -> verified, deduplicated chains (at most :data:`MAX_PER_SIGNATURE` per signature).

    Identical chains (same steps and bindings) are kept once (``duplicate_chain``); further chains of a
    full signature count as ``signature_quota``. Reasons are added to ``dropped``.
    """
    kept: list[Chain] = []
    seen: set[tuple] = set()
    per_sig: Counter[str] = Counter()
    for _ in range(n_walks):
        walk = random_walk(spec.graph, rng, max_len)
        if not walk:
            break
        chain, reason = bind_chain(spec, walk)
        if chain is not None:
            reason = chain_problem(spec, chain.steps)
            chain = None if reason else chain
        if chain is None:
            dropped[reason or "unknown"] += 1
            continue
        if chain.key in seen:
            dropped["duplicate_chain"] += 1
            continue
        if per_sig[chain.signature] >= MAX_PER_SIGNATURE:
            dropped["signature_quota"] += 1
            continue
        seen.add(chain.key)
        per_sig[chain.signature] += 1
        kept.append(chain)
    return kept


def fan_out_chains(spec: ServerSpec, pool: list[Chain], limit: int = 24) -> list[Chain]:
    """Chains whose last step feeds two further, parallel steps (built on the verified pool)."""
    out: list[Chain] = []
    for base in pool:
        tools = tuple(s.tool for s in base.steps)
        last = len(tools) - 1
        nxt = [n for n in sorted(spec.graph.successors(tools[-1])) if n not in tools]
        for a_i, a in enumerate(nxt):
            for b in nxt[a_i + 1:]:
                seq = (*tools, a, b)
                forced = {}
                for k, t in ((last + 1, a), (last + 2, b)):
                    for p in spec.docs[t].required:
                        if spec.supplier_field(tools[-1], t, p) is not None:
                            forced[(k, p)] = last
                chain, _ = bind_chain(spec, seq, forced=forced)
                if chain and chain.structure == "fan-out" and chain_problem(spec, chain.steps) is None:
                    out.append(chain)
                if len(out) >= limit:
                    return out
    return out


def fan_in_chains(spec: ServerSpec, pool: list[Chain], limit: int = 24) -> list[Chain]:
    """Chains where one step takes required arguments from two distinct supplier sub-chains."""
    out: list[Chain] = []
    by_last: dict[str, list[Chain]] = {}
    for c in pool:
        by_last.setdefault(c.steps[-1].tool, []).append(c)
    for consumer in sorted(spec.docs):
        req = spec.docs[consumer].required
        if len(req) < 2:
            continue
        # one supplier sub-chain per parameter that some pooled chain's last tool can fill
        options: list[tuple[str, list[Chain]]] = []
        for p in req:
            subs = [c for t, cs in sorted(by_last.items()) if spec.supplier_field(t, consumer, p) for c in cs
                    if consumer not in {s.tool for s in c.steps} and len(c.steps) <= 2]
            subs.sort(key=lambda c: len(c.steps))
            if subs:
                options.append((p, subs))
        if len(options) < 2:
            continue
        for (p1, s1), (p2, s2) in ((options[0], options[1]),):
            for c1 in s1[:4]:
                for c2 in s2[:4]:
                    chain = _concat_fan_in(spec, consumer, (p1, c1), (p2, c2))
                    if chain is not None and chain_problem(spec, chain.steps) is None:
                        out.append(chain)
                    if len(out) >= limit:
                        return out
    return out


def _concat_fan_in(spec: ServerSpec, consumer: str, *parts: tuple[str, Chain]) -> Chain | None:
    steps: list[Step] = []
    last_of: dict[str, int] = {}
    for p, c in parts:
        off = len(steps)
        for s in c.steps:
            steps.append(Step(s.tool, tuple((n, ("ref", a[1] + off, a[2]) if a[0] == "ref" else a)
                                            for n, a in s.args)))
        last_of[p] = len(steps) - 1
    args: list[tuple[str, Arg]] = []
    for p in spec.docs[consumer].required:
        if p in last_of:
            args.append((p, ("ref", last_of[p], spec.supplier_field(steps[last_of[p]].tool, consumer, p))))
        elif p in spec.sources.get(consumer, {}):
            args.append((p, ("q", spec.sources[consumer][p])))
        else:
            return None
    steps.append(Step(consumer, tuple(args)))
    if structure_of(steps) != "fan-in":
        return None
    return Chain(spec.name, tuple(steps), "fan-in", schedule(steps))


def parallel_chains(spec: ServerSpec, limit: int = 24) -> list[Chain]:
    """Two or three independent query-only calls in one turn (entry tools, repeats allowed)."""
    out: list[Chain] = []
    entries = spec.entries
    combos = [(a, b) for i, a in enumerate(entries) for b in entries[i:]]
    combos += [(a, b, c) for i, a in enumerate(entries) for j, b in enumerate(entries[i + 1:], i + 1)
               for c in entries[j + 1:]]
    for combo in combos[:limit]:
        steps = [Step(t, tuple((p, ("q", spec.sources[t][p])) for p in spec.docs[t].required)) for t in combo]
        out.append(Chain(spec.name, tuple(steps), "parallel", schedule(steps)))
    return out


def deepen(chain: Chain, spec: ServerSpec, depth: int, rng: random.Random) -> tuple[Chain, int]:
    """Insert up to ``depth - 1`` side calls between one supplier and its consumer (support depth ``depth``).

    Fewer are inserted when other bindings spanning the insertion point would exceed ``depth``. Side calls are query-only entry tools other than the supplier's tool; each occupies its own turn.
    Returns the chain and the number of side calls inserted (0 when the chain has no dependency or the
    server has no usable entry tool).
    """
    if depth <= 1:
        return chain, 0
    pairs = [(j, i) for i, s in enumerate(chain.steps) for j in s.refs() if chain.turns[i] == chain.turns[j] + 1]
    if not pairs:
        return chain, 0
    j, _ = rng.choice(sorted(pairs))
    later = {entity(p) for s in chain.steps for p, a in s.args if a[0] == "ref"} - {""}
    # side calls are read-only lookups of other entities, so "that order" still means the chain's order
    side_tools = [t for t in spec.entries if t != chain.steps[j].tool and effect(spec.docs[t]) == "read"
                  and not side_entities(spec, t) & later]
    if not side_tools:
        return chain, 0
    t_sup = chain.turns[j]
    picks = [rng.choice(side_tools) for _ in range(depth - 1)]
    for k in range(depth - 1, 0, -1):
        turns = [t + k if t > t_sup else t for t in chain.turns]
        if max_hops(chain.steps, turns) <= depth:
            sides = [Step(t, tuple((p, ("q", spec.sources[t][p])) for p in spec.docs[t].required))
                     for t in picks[:k]]
            return Chain(chain.server, chain.steps + tuple(sides), chain.structure,
                         tuple(turns) + tuple(t_sup + 1 + n for n in range(k))), k
    return chain, 0


def max_hops(steps: tuple[Step, ...] | list[Step], turns: tuple[int, ...] | list[int]) -> int:
    """Largest ``turn(consumer) - turn(supplier)`` over the bindings (0 without any)."""
    return max((turns[i] - turns[j] for i, s in enumerate(steps) for j in s.refs()), default=0)


@dataclass
class Call:
    """A planned call with concrete query values (refs stay symbolic until the rollout)."""

    idx: int
    tool: str
    args: dict[str, Any]
    """``param -> ("q", value) | ("ref", j, field)``."""
    turn: int
    side: bool = False
    hidden: bool = False
    """Executed but not shown (a skipped-lookup defect)."""
    vague: set[str] = field(default_factory=set)
    """Query-bound params whose value the user query does not state (memorised-constant defect)."""
    defect: str | None = None
    repaired: bool = False
    transforms: dict[str, str] = field(default_factory=dict)
    """``param -> kind``: arguments the visible history shows only transformed (:mod:`synth.transforms`)."""
    listed: set[str] = field(default_factory=set)
    """Params whose schema type is ``array``: a single value is sent as a one-item list."""


@dataclass
class Plan:
    """A task's plan: calls in execution order, with the chain it came from."""

    task_id: str
    server: str
    db_id: str
    instance: tuple[int, int]
    calls: list[Call]
    structure: str
    signature: str
    task_kind: str
    seed: int
    query: str = ""
    augmentation: list[str] = field(default_factory=list)

    def ordered(self) -> list[Call]:
        """Calls sorted by turn, then index."""
        return sorted(self.calls, key=lambda c: (c.turn, c.idx))


_PH = re.compile(r"(the )?\{([a-z_]+)(?:\|([^}]*))?\}")


def render_intent(template: str, values: Callable[[str], tuple[str, str | None]]) -> str:
    """Fill ``{param}`` / ``{param|phrase}``; ``values(param) -> (kind, text)`` with kind q|ref|vague.

    A ``vague`` value (a memorised constant) reads as ``text`` when given (e.g. "my usual cuisine"), else
    "the usual PARAM"; an article before the placeholder is dropped so it never reads "the the".
    """
    def sub(m: re.Match) -> str:
        article, p, phrase = m.group(1) or "", m.group(2), m.group(3)
        kind, text = values(p)
        if kind == "q":
            if p.endswith("_id") and phrase:
                noun = re.sub(r"^(that|the|their)\s+", "", phrase)
                return f"{article}{noun} {text}"
            return f"{article}{text}"
        if kind == "vague":
            return text or f"the usual {p.replace('_', ' ')}"
        return article + (phrase or f"the {p.replace('_', ' ')} from before")
    return _PH.sub(sub, template)
