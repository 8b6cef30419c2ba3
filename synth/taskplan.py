"""The planning phases of synthesis: server views -> chain pools -> task slots (no tool is called here).

Phase 1, :func:`server_specs`: the bundled training servers plus document-only and live user servers,
cut to ``tool_diversity`` tools by :func:`synth.selection.select_tools`.

Phase 2, :func:`chain_pools`: per server, ``30 x tools x max_chain_len`` seeded random walks verified by
:func:`synth.plans.sample_chains`; chains deeper than ``support_depth`` are dropped and counted.

Phase 3, :func:`plan_tasks`: ``task_count`` slots, ``ceil(coverage_quota x task_count)`` reserved per
structure (at most a quarter each), the rest natural; each slot gets a server (weighted by its tool
count), a chain (or a one-call server-only task, :data:`SERVER_TASK_SHARE` of natural ones) and a
database instance (round-robin per server).
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from synth.errors import RecipeError
from synth.models import STRUCTURES, Recipe, ToolDoc
from synth.plans import (Chain, ServerSpec, Step, fan_in_chains, fan_out_chains, max_hops, parallel_chains,
                         sample_chains, schedule)
from synth.selection import document_spec, select_tools, user_spec
from synth.servers import catalog
from synth.servers.db import db_instances

__all__ = ["SERVER_TASK_SHARE", "ChainPools", "TaskSlot", "TaskSet", "server_specs", "chain_pools", "plan_tasks",
           "sample_single"]

SERVER_TASK_SHARE = 0.15
"""Share of natural tasks generated from a server alone (one entry tool) rather than from a chain."""


@dataclass
class ChainPools:
    """Verified chains per server, with the drop counts and a cache of structure-targeted candidates."""

    specs: dict[str, ServerSpec]
    """The servers planned over (name -> view)."""
    pools: dict[str, list[Chain]]
    """Chains kept per server (within ``support_depth``)."""
    dropped: Counter[str]
    """Chains dropped, per reason (argument flow, dedup, ``exceeds_support_depth``)."""
    n_walks: int
    """Random walks sampled over all servers."""
    support_depth: int
    """The recipe's ``support_depth``, in hops."""
    _targeted: dict[tuple[str, str], list[Chain]] = field(default_factory=dict)

    def templates(self, server: str, structure: str) -> list[Chain]:
        """Chains of ``server`` with dependency ``structure`` (built once per pair, within ``support_depth``)."""
        key = (server, structure)
        if key not in self._targeted:
            spec, pool = self.specs[server], self.pools[server]
            if structure == "fan-out":
                cands = fan_out_chains(spec, pool)
            elif structure == "fan-in":
                cands = fan_in_chains(spec, pool)
            elif structure == "parallel":
                cands = parallel_chains(spec)
            else:
                cands = [c for c in pool if c.structure == "chain" and len(c.steps) >= 2]
            self._targeted[key] = [c for c in cands if max_hops(c.steps, c.turns) <= self.support_depth]
        return self._targeted[key]


@dataclass(frozen=True)
class TaskSlot:
    """One planned task: which chain on which server and database instance."""

    index: int
    """Position in the recipe's task order (the task id is ``t{index:06d}``)."""
    server: str
    """Server the task runs on."""
    chain: Chain
    """The verified chain (a one-step chain for a server-only task)."""
    kind: str
    """``chain`` (chain-conditioned) or ``server`` (server-only)."""
    instance: tuple[int, int]
    """Database instance ``(seed, variant)``."""


@dataclass(frozen=True)
class TaskSet:
    """The planned tasks and what could not be planned."""

    slots: list[TaskSlot]
    """Tasks in index order."""
    notes: Counter[str]
    """Slots that fell back or were dropped, per reason (``quota_unavailable:S``, ``no_valid_chain``)."""


def server_specs(recipe: Recipe, extra: dict[str, list[ToolDoc]] | None = None,
                 live: Collection[str] = (), user: Any = None) -> dict[str, ServerSpec]:
    """Phase 1: the servers and tools the recipe draws from.

    ``extra`` maps user server names to their docs; those named in ``live`` run live (kind ``live``,
    :func:`synth.selection.user_spec` over ``user``'s observations: a :class:`~synth.userservers.UserServers`),
    the others are document-only (kind ``document``, emulated).
    """
    extra_specs: dict[str, ServerSpec] = {}
    for s, docs in sorted((extra or {}).items()):
        if s in catalog.SERVERS:
            raise RecipeError(f"extra tool documents use the bundled server name {s!r}; rename the server")
        if s in live:
            command = getattr(user, "command_of", {}).get(s, "")
            observed = user.observed(s) if user is not None else {}
            extra_specs[s] = user_spec(s, docs, recipe.arg_values, command, observed)
        else:
            extra_specs[s] = document_spec(s, docs, recipe.arg_values, kind="document")
    return select_tools(recipe, extra_specs)


def chain_pools(recipe: Recipe, specs: dict[str, ServerSpec]) -> ChainPools:
    """Phase 2: verified chains per server (see the module docstring)."""
    dropped: Counter[str] = Counter()
    pools: dict[str, list[Chain]] = {}
    n_walks_total = 0
    for name, spec in sorted(specs.items()):
        n_walks = 30 * len(spec.docs) * recipe.max_chain_len
        n_walks_total += n_walks
        pool = sample_chains(spec, random.Random(f"{recipe.seed}:pool:{name}"), recipe.max_chain_len, n_walks,
                             dropped)
        deep = [c for c in pool if max_hops(c.steps, c.turns) > recipe.support_depth]
        dropped["exceeds_support_depth"] += len(deep)
        pools[name] = [c for c in pool if max_hops(c.steps, c.turns) <= recipe.support_depth]
    return ChainPools(specs, pools, dropped, n_walks_total, recipe.support_depth)


def _slots(recipe: Recipe) -> list[str]:
    n = recipe.task_count
    per = min(math.ceil(recipe.coverage_quota * n), n // len(STRUCTURES)) if recipe.coverage_quota > 0 else 0
    return [s for s in STRUCTURES for _ in range(per)] + ["natural"] * (n - per * len(STRUCTURES))


def plan_tasks(recipe: Recipe, pools: ChainPools) -> TaskSet:
    """Phase 3: one :class:`TaskSlot` per task that has a chain (see the module docstring)."""
    specs = pools.specs
    slots = _slots(recipe)
    alloc_rng = random.Random(f"{recipe.seed}:alloc")
    alloc_rng.shuffle(slots)
    servers = sorted(specs)
    weights = [len(specs[s].docs) for s in servers]
    instances = db_instances(recipe.db_diversity, recipe.seed)
    per_server: Counter[str] = Counter()
    notes: Counter[str] = Counter()
    tasks: list[TaskSlot] = []
    for i, slot in enumerate(slots):
        server = alloc_rng.choices(servers, weights)[0]
        chain, kind = None, "chain"
        if slot != "natural":
            rot = servers[servers.index(server):] + servers[:servers.index(server)]
            for s in rot:
                cands = pools.templates(s, slot)
                if cands:
                    server, chain = s, cands[alloc_rng.randrange(len(cands))]
                    break
            if chain is None:
                notes[f"quota_unavailable:{slot}"] += 1
        if chain is None:
            spec, pool = specs[server], pools.pools[server]
            if spec.entries and (not pool or alloc_rng.random() < SERVER_TASK_SHARE):
                chain = sample_single(spec, alloc_rng.choice(spec.entries))
                kind = "server"
            elif pool:
                chain = pool[alloc_rng.randrange(len(pool))]
        if chain is None:
            notes["no_valid_chain"] += 1
            continue
        k = per_server[server]
        per_server[server] += 1
        tasks.append(TaskSlot(i, server, chain, kind, instances[k % len(instances)]))
    return TaskSet(tasks, notes)


def sample_single(spec: ServerSpec, tool: str) -> Chain:
    """A one-call chain of an entry tool (a server-only task)."""
    step = Step(tool, tuple((p, ("q", spec.sources[tool][p])) for p in spec.docs[tool].required))
    return Chain(spec.name, (step,), "chain", schedule([step]))
