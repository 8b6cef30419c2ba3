"""The per-task phases: defects, the task gate, the judged rollout."""

from __future__ import annotations

import random

from synth.judge import RuleJudge
from synth.models import Recipe
from synth.roles import Roles, TemplateTaskWriter
from synth.servers.db import make_database
from synth.taskplan import chain_pools, plan_tasks, server_specs
from synth.trajectories import Tally, pick_defects, roll_out, write_task
from synth.backends import InProcessBackend
from synth.tasks import instantiate


def _first_slot(recipe):
    specs = server_specs(recipe)
    tasks = plan_tasks(recipe, chain_pools(recipe, specs))
    slot = next(s for s in tasks.slots if len(s.chain.steps) >= 2)
    return specs[slot.server], slot


def test_defects_marked_and_undone_by_repair():
    r = Recipe(tool_diversity=16, seed=1)
    spec, slot = _first_slot(r)
    db = make_database(slot.server, *slot.instance)
    calls = instantiate(slot.chain, db, random.Random(0))
    pick_defects(calls, random.Random(0), defect_rate=1.0, repair_rate=0.0)
    assert any(c.defect for c in calls) and not any(c.repaired for c in calls)
    assert any(c.hidden or c.vague for c in calls)
    calls = instantiate(slot.chain, db, random.Random(0))
    pick_defects(calls, random.Random(0), defect_rate=1.0, repair_rate=1.0)
    assert all(c.repaired for c in calls if c.defect) and not any(c.hidden or c.vague for c in calls)


def test_the_same_query_twice_is_gated_as_duplicate():
    r = Recipe(tool_diversity=16, seed=1, defect_rate=0.0)
    spec, slot = _first_slot(r)
    db = make_database(slot.server, *slot.instance)

    class Fixed(TemplateTaskWriter):
        def write(self, plan, spec, rng):
            return "Look up the employee, please.", []

    tally = Tally()
    first = write_task(r, slot, spec, db, random.Random(5), Roles(task_writer=Fixed()), tally)
    assert first is not None and (slot.server, first.query) in tally.seen_queries
    again = write_task(r, slot, spec, db, random.Random(6), Roles(task_writer=Fixed()), tally)
    assert again is None and tally.rejections == {"task_gate:duplicate_query": 1}


def test_roll_out_labels_an_accepted_row_and_rejects_below_threshold():
    r = Recipe(tool_diversity=16, seed=1, defect_rate=0.0, error_rate=0.0)
    spec, slot = _first_slot(r)
    db = make_database(slot.server, *slot.instance)
    tally = Tally()
    plan = write_task(r, slot, spec, db, random.Random(1), Roles(), tally)
    acc, judged = roll_out(r, slot, plan, spec, InProcessBackend(), Roles(), "[]", tally)
    assert acc is not None and judged.accepted and acc.meta["task_id"] == plan.task_id
    assert acc.meta["judge"]["mean"] >= r.judge_threshold and tally.stats["trajectories"] == 1
    strict = r.model_copy(update={"judge_threshold": 1.0})

    class Low(RuleJudge):
        def score(self, messages):
            return {k: 0.1 for k in super().score(messages)}

    acc, judged = roll_out(strict, slot, plan, spec, InProcessBackend(), Roles(judge=Low()), "[]", tally)
    assert acc is None and not judged.accepted and tally.rejections["below_threshold"] == 1
