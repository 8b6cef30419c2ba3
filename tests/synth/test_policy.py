"""The LLM policy: tool calls through tools=, executed for real, injected errors, rejections by reason."""

from __future__ import annotations

import json
import random

import pytest

from synth.backends import InProcessBackend
from synth.errors import SampleRejected
from synth.models import Recipe
from synth.policy import LLMPolicy
from synth.roles import Roles
from synth.servers.db import make_database
from synth.taskplan import chain_pools, plan_tasks, server_specs
from synth.trajectories import Tally, write_task


@pytest.fixture(scope="module")
def task():
    r = Recipe(tool_diversity=16, seed=1, defect_rate=0.0)
    specs = server_specs(r)
    slot = next(s for s in plan_tasks(r, chain_pools(r, specs)).slots if s.kind == "server")
    spec = specs[slot.server]
    plan = write_task(r, slot, spec, make_database(slot.server, *slot.instance), random.Random(0), Roles(), Tally())
    call = plan.ordered()[0]
    return plan, spec, call.tool, {p: a[1] for p, a in call.args.items()}


def _model(scripted_chat, tool, args, raw=None):
    def script(role, messages, tools):
        assert role == "policy" and tools
        if messages[-1]["role"] == "tool":
            return "Here is the result: " + messages[-1]["content"]
        return scripted_chat.Reply("Let me look that up.", [scripted_chat.Call("x", tool, raw or json.dumps(args))],
                                   "tool_calls")
    return scripted_chat(script)


def test_calls_run_against_the_backend_and_results_reach_the_answer(task, scripted_chat):
    plan, spec, tool, args = task
    be = InProcessBackend()
    direct = be.call(plan.server, plan.instance, tool, args)
    client = _model(scripted_chat, tool, args)
    trace = LLMPolicy(client).rollout(plan, spec, InProcessBackend(), random.Random(0), error_rate=0.0)
    roles = [m["role"] for m in trace.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant"]
    assert json.loads(trace.messages[3]["content"]) == direct and trace.records[0].ok
    assert trace.messages[2]["tool_calls"][0]["id"] == "call_1" == trace.messages[3]["tool_call_id"]
    assert json.dumps(direct, sort_keys=True) in trace.messages[-1]["content"]
    sent = client.requests[0][1]
    assert all(None not in m.values() for m in sent)  # keys that are None are left off the wire


def test_injected_errors_are_kept_and_shown(task, scripted_chat):
    plan, spec, tool, args = task
    trace = LLMPolicy(_model(scripted_chat, tool, args)).rollout(plan, spec, InProcessBackend(),
                                                                random.Random(0), error_rate=1.0)
    assert len(trace.injected) == 1 and not trace.records[0].ok
    assert json.loads(trace.messages[3]["content"])["error"] == trace.injected[0]
    assert trace.abandoned == [tool]


@pytest.mark.parametrize("raw,reason", [
    ('{"name": "trunc', "policy:bad_arguments"),
    ('["a"]', "policy:bad_arguments"),
    ('{"no_such_arg": 1}', "policy:schema_violation"),
])
def test_bad_arguments_reject_with_reason(task, scripted_chat, raw, reason):
    plan, spec, tool, args = task
    with pytest.raises(SampleRejected) as err:
        LLMPolicy(_model(scripted_chat, tool, args, raw=raw)).rollout(plan, spec, InProcessBackend(),
                                                                     random.Random(0), 0.0)
    assert err.value.reason == reason


def test_unknown_tool_truncation_and_turn_limit_reject(task, scripted_chat):
    plan, spec, tool, args = task
    unknown = _model(scripted_chat, "drop_database", {})
    with pytest.raises(SampleRejected, match="unknown tool 'drop_database'") as err:
        LLMPolicy(unknown).rollout(plan, spec, InProcessBackend(), random.Random(0), 0.0)
    assert err.value.reason == "policy:unknown_tool"
    cut = scripted_chat(lambda *a: scripted_chat.Reply("Here is", [], "length"))
    with pytest.raises(SampleRejected) as err:
        LLMPolicy(cut).rollout(plan, spec, InProcessBackend(), random.Random(0), 0.0)
    assert err.value.reason == "policy:truncated"
    forever = scripted_chat(lambda *a: scripted_chat.Reply("", [scripted_chat.Call("c", tool, json.dumps(args))]))
    with pytest.raises(SampleRejected) as err:
        LLMPolicy(forever, max_turns=3).rollout(plan, spec, InProcessBackend(), random.Random(0), 0.0)
    assert err.value.reason == "policy:max_turns" and len(forever.requests) == 3


def test_client_errors_reject_or_propagate(task, scripted_chat):
    plan, spec, tool, args = task

    class ReplyError(Exception):
        reason = "malformed_reply"

    with pytest.raises(SampleRejected) as err:
        LLMPolicy(scripted_chat(lambda *a: ReplyError("bad JSON"))).rollout(plan, spec, InProcessBackend(),
                                                                         random.Random(0), 0.0)
    assert err.value.reason == "policy:malformed_reply"
    with pytest.raises(ConnectionError):
        LLMPolicy(scripted_chat(lambda *a: ConnectionError("down"))).rollout(plan, spec, InProcessBackend(),
                                                                          random.Random(0), 0.0)
