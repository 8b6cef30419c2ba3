"""The per-task phases of synthesis: write the task, roll it out, judge it, label it.

Phase 4, :func:`write_task`: concrete values from the task's database instance, defects
(:func:`pick_defects`), the query from the task writer and its gates, at most :data:`TASK_ATTEMPTS`
draws. Phase 5, :func:`roll_out`: the policy's trajectory, the fail-closed judge, the provenance labels
and the row. A role that rejects a sample (:class:`~synth.errors.SampleRejected`) has it counted under
its reason; a server that dies drops the rest of its instance's tasks (``server_error``). Each task ends as an :class:`Accepted` record or as a reason counted in :class:`Tally`.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from synth.backends import Backend
from synth.errors import SampleRejected, ServerError
from synth.judge import RuleJudge, judge_trajectory
from synth.models import RejectedRow, Recipe
from synth.narratives import NarrativeSource
from synth.plans import Call, Plan, ServerSpec, deepen
from synth.provenance import ActionProvenance, provenance
from synth.roles import Roles
from synth.rollout import Trace
from synth.servers.db import db_id
from synth.taskplan import TaskSlot
from synth.tasks import instantiate
from synth.transforms import pick_transforms, shown_transformed, transformed_arguments

__all__ = ["TASK_ATTEMPTS", "JUDGE_TIMEOUT_S", "Accepted", "Tally", "pick_defects", "write_task",
           "roll_out", "called_chain", "executed_structure"]

TASK_ATTEMPTS = 3
"""Draws of query values per task before a task that fails the task gate is rejected."""

JUDGE_TIMEOUT_S = 120.0
"""Seconds a non-default judge may take per trajectory before the sample is rejected."""


@dataclass(frozen=True)
class Accepted:
    """A kept trajectory: its JSON row and what the manifest measures from it."""

    index: int
    """Task index (rows are written in index order)."""
    row: str
    """The ``train.jsonl`` line (without newline)."""
    meta: dict[str, Any]
    """The row's ``meta`` (a :class:`~synth.models.TrajectoryMeta` as a dict)."""
    prov: list[ActionProvenance]
    """Provenance of each visible call."""
    trace: Trace
    """The conversation and call records."""
    hops: int
    """Largest support distance in the trajectory, in hops."""


@dataclass
class Tally:
    """Counters over the tasks of one synthesis."""

    rejections: Counter[str] = field(default_factory=Counter)
    """Rejected tasks per reason."""
    stats: Counter[str] = field(default_factory=Counter)
    """``trajectories`` judged, ``defects_planned``, ``defects_repaired``, ``server_error:S``."""
    judge_failures: int = 0
    """Judged trajectories whose judge failed."""
    seen_queries: set[tuple[str, str]] = field(default_factory=set)
    """``(server, query)`` of accepted tasks (the novelty gate)."""
    dead: set[tuple[str, tuple[int, int]]] = field(default_factory=set)
    """``(server, instance)`` pairs whose server died; their remaining tasks are rejected."""
    rejected: list[tuple[int, str]] = field(default_factory=list)
    """``(task index, rejected.jsonl line)`` of every rejected task (:class:`~synth.models.RejectedRow`)."""

    def merge(self, other: "Tally") -> None:
        """Add another tally's counts and rows (the tasks of another server)."""
        self.rejections.update(other.rejections)
        self.stats.update(other.stats)
        self.judge_failures += other.judge_failures
        self.seen_queries |= other.seen_queries
        self.dead |= other.dead
        self.rejected.extend(other.rejected)

    def reject(self, index: int, server: str, stage: str, reason: str, detail: str | None = None,
               messages: list[dict] | None = None, scores: dict[str, float] | None = None, *,
               query: str | None = None, gates: dict[str, float] | None = None,
               more: list[str] | None = None) -> None:
        """Count a rejected task under ``reason`` and keep its :class:`~synth.models.RejectedRow` (with the
        request and the gate scores when there are any; ``more`` are further reasons it broke)."""
        self.rejections[reason] += 1
        if query is None and messages:
            query = next((m["content"] for m in messages if m["role"] == "user"), None)
        row = RejectedRow(task_id=f"t{index:06d}", server=server, stage=stage, reasons=[reason, *(more or [])],
                          detail=None if detail is None else detail[:300], messages=messages, judge=scores or {},
                          query=query, gates=gates or {})
        self.rejected.append((index, row.model_dump_json()))


def pick_defects(calls: list[Call], rng: random.Random, defect_rate: float, repair_rate: float) -> None:
    """Mark defects in place: per call with probability ``defect_rate`` a skipped lookup (its supplier runs
    hidden) or a memorised constant (the query omits the value); each undone with probability ``repair_rate``."""
    hidden_by: dict[int, int] = {}
    for c in calls:
        if rng.random() >= defect_rate:
            continue
        options = []
        refs = [a[1] for a in c.args.values() if a[0] == "ref"]
        for j in refs:
            sup = calls[j]
            if not sup.hidden and not sup.side and j not in hidden_by:
                options.append(("skipped_lookup", j))
        for p, a in sorted(c.args.items()):
            if a[0] == "q" and isinstance(a[1], str):
                options.append(("memorised_constant", p))
        if not options:
            continue
        kind, target = options[rng.randrange(len(options))]
        c.defect = kind
        repaired = rng.random() < repair_rate
        c.repaired = repaired
        if repaired:
            continue
        if kind == "skipped_lookup":
            calls[target].hidden = True
            hidden_by[target] = c.idx
        else:
            c.vague.add(target)


def write_task(recipe: Recipe, slot: TaskSlot, spec: ServerSpec, db: dict[str, list[dict]], rng: random.Random,
               roles: Roles, tally: Tally) -> Plan | None:
    """Phase 4: the task's plan with its query, or None (the reason counted in ``tally``)."""
    n_steps = len(slot.chain.steps)
    chain2, _ = deepen(slot.chain, spec, rng.randint(1, recipe.support_depth), rng)
    reason: str | None = None
    calls = None
    for _attempt in range(TASK_ATTEMPTS):
        calls = instantiate(chain2, db, rng, spec)
        if calls is None:
            break
        for c in calls[n_steps:]:
            c.side = True
        pick_defects(calls, rng, recipe.defect_rate, recipe.repair_rate)
        pick_transforms(calls, rng, recipe.transform_rate)
        inst = slot.instance
        cand = Plan(task_id=f"t{slot.index:06d}", server=slot.server,
                    db_id=_db_id(slot.server, spec.kind, inst),
                    instance=inst, calls=calls, structure=slot.chain.structure, signature=slot.chain.signature,
                    task_kind=slot.kind, seed=recipe.seed * 1_000_003 + slot.index)
        check = getattr(roles, "chain_check", None)
        if check is not None and (why := check(cand, spec)) is not None:
            tally.reject(slot.index, slot.server, "task", why, f"chain {slot.chain.signature}")
            return None
        try:
            cand.query, cand.augmentation = roles.task_writer.write(cand, spec, rng)
            reason = roles.task_writer.gate(cand, spec)
        except SampleRejected as err:
            tally.reject(slot.index, slot.server, "task", err.reason, str(err), getattr(err, "messages", None),
                         query=cand.query or None)
            return None
        if reason is None and (slot.server, cand.query) in tally.seen_queries:
            reason = "duplicate_query"
        if reason is None:
            tally.seen_queries.add((slot.server, cand.query))
            return cand
    last = getattr(roles.task_writer, "last_scores", None)
    tally.reject(slot.index, slot.server, "task", "no_values" if calls is None else f"task_gate:{reason}",
                 None if calls is None else f"gate {reason} rejected the request", query=None if calls is None else cand.query,
                 gates=last(cand) if callable(last) and calls is not None else None)
    return None


def _transformed_calls(plan: Plan, trace: Trace, prov: list[ActionProvenance]) -> dict[str, dict[str, str]]:
    """``call id -> {param: kind}`` of the calls exact matching misses only because values are shown
    transformed (:mod:`synth.transforms`); they stay derivable in the labels."""
    shown = shown_transformed(plan.calls, trace.transformed)
    if not shown:
        return {}
    sent = {r.id: r.args for r in trace.records}
    return {p.call_id: t for p in prov if not p.derivable and p.call_id in sent
            and (t := transformed_arguments(p.missing, sent[p.call_id], shown))}


def called_chain(trace: Trace) -> list[str]:
    """The tools of the visible calls made, in order, a retry of the same tool counted once."""
    out: list[str] = []
    for r in trace.records:
        if not (r.retry and out and out[-1] == r.tool):
            out.append(r.tool)
    return out


def executed_structure(trace: Trace) -> str:
    """The dependency structure of the calls made: each argument value not in the request comes from the
    earliest successful call whose output holds it (its origin); ``fan-in`` when a call took values from
    two calls, ``fan-out`` when one call fed two, ``parallel`` for two or more calls with no flow, else
    ``chain``."""
    from synth.provenance import value_in
    from synth.rules import output_pairs

    query = "\n".join(m["content"] for m in trace.messages if m["role"] == "user")
    done: list[Any] = []
    suppliers: dict[str, set[str]] = {}
    consumers: dict[str, set[str]] = {}
    for r in trace.records:
        if not r.ok:
            continue
        for value in r.args.values():
            if value_in(value, query):
                continue
            src = next((d for d in done if any(x == value for _, x in output_pairs(d.output))), None)
            if src is not None:
                suppliers.setdefault(r.id, set()).add(src.id)
                consumers.setdefault(src.id, set()).add(r.id)
        done.append(r)
    if any(len(s) >= 2 for s in suppliers.values()):
        return "fan-in"
    if any(len(c) >= 2 for c in consumers.values()):
        return "fan-out"
    if not suppliers and sum(not r.retry for r in trace.records) >= 2:
        return "parallel"
    return "chain"


def _db_id(server: str, kind: str, inst: tuple[int, int]) -> str:
    if kind == "bundled":
        return db_id(server, *inst)
    return f"{server}:live" if kind == "live" else f"{server}:emulated:s{inst[0]}"


def roll_out(recipe: Recipe, slot: TaskSlot, plan: Plan, spec: ServerSpec, backend: Backend, roles: Roles,
             tools_json: str, tally: Tally) -> tuple[Accepted | None, NarrativeSource | None]:
    """Phase 5: roll out, judge and label one task; ``(accepted or None, judged or None)``."""
    try:
        trace = roles.policy.rollout(plan, spec, backend, random.Random(f"{recipe.seed}:exec:{slot.index}"),
                                     recipe.error_rate)
    except SampleRejected as err:
        tally.reject(slot.index, slot.server, "rollout", err.reason, str(err), getattr(err, "messages", None),
                     query=plan.query)
        return None, None
    except ServerError as err:
        tally.reject(slot.index, slot.server, "rollout", "server_error", str(err), query=plan.query)
        tally.dead.add((slot.server, slot.instance))
        tally.stats[f"server_error:{slot.server}"] += 1
        return None, None
    tally.stats["trajectories"] += 1
    prov = provenance(trace.messages)
    transformed = _transformed_calls(plan, trace, prov)
    nonderiv = [p.call_id for p in prov if not p.derivable and p.call_id not in transformed]
    repaired_ids = [cid for c in plan.calls if c.repaired for cid in trace.ids_by_plan.get(c.idx, [])]
    repaired_ids = [cid for cid in repaired_ids if cid not in nonderiv]
    judge = roles.judge
    verdict = judge_trajectory(judge, trace.messages, recipe.judge_threshold,
                               timeout_s=None if isinstance(judge, RuleJudge) else JUDGE_TIMEOUT_S)
    if verdict.judge_failed:
        tally.judge_failures += 1
    judge_mean = None if verdict.judge_failed else verdict.mean
    tally.stats["defects_planned"] += sum(c.defect is not None for c in plan.calls)
    tally.stats["defects_repaired"] += sum(c.repaired for c in plan.calls)
    scores = {} if verdict.mean is None else {**{k: round(v, 4) for k, v in verdict.scores.items()},
                                              "mean": round(verdict.mean, 4)}
    if not verdict.accepted:
        tally.reject(slot.index, slot.server, "judge", verdict.reason or "rejected", verdict.detail,
                     messages=trace.messages, scores=scores,
                     more=[f"rule:{r}" for r in verdict.failed_rules[1:]])
        return None, NarrativeSource(slot.index, slot.server, plan.query, trace, False, judge_mean,
                                     "judge_failed" if verdict.judge_failed else "judge_rejected")
    hops = max((p.hops for p in prov), default=0)
    if hops > recipe.support_depth:
        # a skipped lookup can leave only an older observation holding the value
        tally.reject(slot.index, slot.server, "filter", "exceeds_support_depth",
                     f"support depth {hops} > {recipe.support_depth}", trace.messages, scores)
        return None, NarrativeSource(slot.index, slot.server, plan.query, trace, False, judge_mean, "filtered")
    made = called_chain(trace)
    meta = {"task_id": plan.task_id, "server": slot.server, "db_id": plan.db_id,
            "chain": made, "signature": f"{slot.server}:" + ">".join(made), "structure": executed_structure(trace),
            "planned_chain": [c.tool for c in plan.ordered()],
            "nonderivable_calls": nonderiv, "repaired_calls": repaired_ids, "seed": plan.seed,
            "support_depth": hops, "injected_errors": trace.injected,
            "judge": scores,
            "task_kind": slot.kind, "augmentation": plan.augmentation}
    if transformed:
        meta["transformed_calls"] = transformed
    row = {"messages": trace.messages, "tools": tools_json, "meta": json.dumps(meta)}
    return (Accepted(slot.index, json.dumps(row, ensure_ascii=False), meta, prov, trace, hops),
            NarrativeSource(slot.index, slot.server, plan.query, trace, True, judge_mean))
