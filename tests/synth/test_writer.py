"""The LLM task writer: chain-conditioned and server-only queries, augmentations, three gates."""

from __future__ import annotations

import random
import re

import pytest

from synth.errors import SampleRejected
from synth.models import Recipe
from synth.roles import Roles
from synth.servers.db import make_database
from synth.taskplan import chain_pools, plan_tasks, server_specs
from synth.trajectories import Tally, write_task
from synth.writer import AUGMENTATIONS, TASK_GATES, LLMTaskWriter


@pytest.fixture(scope="module")
def plans():
    r = Recipe(tool_diversity=16, seed=1, defect_rate=0.0, task_count=40)
    specs = server_specs(r)
    out = {}
    for s in plan_tasks(r, chain_pools(r, specs)).slots:
        if s.kind not in out and (s.kind == "server" or len(s.chain.steps) >= 2):
            db = make_database(s.server, *s.instance)
            out[s.kind] = (write_task(r, s, specs[s.server], db, random.Random(0), Roles(), Tally()), specs[s.server])
    return out


def _model(scripted_chat, gate_scores=None):
    scores = gate_scores or {}

    def script(role, messages, tools):
        assert role == "task_writer"
        text = messages[-1]["content"]
        gate = next((g for g in TASK_GATES if TASK_GATES[g] in text), None)
        if gate:
            return f'{{"score": {scores.get(gate, 4)}}}'
        if text.startswith("Request: "):
            return '"' + text.split("\n")[0][len("Request: "):] + ' Thanks!"'
        return re.search(r"Draft: (.*)\n", text).group(1)
    return scripted_chat(script)


@pytest.mark.parametrize("kind", ["chain", "server"])
def test_queries_from_docs_and_chain_keep_values(plans, scripted_chat, kind):
    plan, spec = plans[kind]
    client = _model(scripted_chat)
    writer = LLMTaskWriter(client)
    seen_aug = set()
    for seed in range(12):
        query, aug = writer.write(plan, spec, random.Random(seed))
        assert aug[0] == "llm" and set(aug[1:]) <= set(AUGMENTATIONS)
        seen_aug.update(aug[1:])
        plan.query = query
        assert writer.gate(plan, spec) is None
    assert seen_aug == set(AUGMENTATIONS)
    first = client.requests[0][1][-1]["content"]
    assert all(t in first for t in {c.tool for c in plan.calls}) and ("single tool" in first) == (kind == "server")


def test_gates_reject_by_name_and_on_missing_values(plans, scripted_chat):
    plan, spec = plans["chain"]
    plan.query = "Please do the thing."
    assert LLMTaskWriter(_model(scripted_chat)).gate(plan, spec) == "missing_value"
    query, _ = LLMTaskWriter(_model(scripted_chat)).write(plan, spec, random.Random(0))
    plan.query = query
    for gate in TASK_GATES:
        assert LLMTaskWriter(_model(scripted_chat, {gate: 2}), threshold=3).gate(plan, spec) == gate
    garbled = scripted_chat(lambda *a: "hmm, between 2 and 4")
    assert LLMTaskWriter(garbled).gate(plan, spec) == "gate_error:question_quality"


def test_unusable_reply_rejects_the_task(plans, scripted_chat):
    plan, spec = plans["chain"]

    class ReplyError(Exception):
        reason = "http_400"

    with pytest.raises(SampleRejected) as err:
        LLMTaskWriter(scripted_chat(lambda *a: ReplyError("bad request"))).write(plan, spec, random.Random(0))
    assert err.value.reason == "task_writer:http_400"
