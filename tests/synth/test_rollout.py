"""The scripted policy: error injection rate, recovery, honest failures, whole conversations."""

from __future__ import annotations

import random

from synth.backends import InProcessBackend
from synth.dataset import bundled_spec
from synth.plans import Plan, bind_chain
from synth.rules import ADMIT
from synth.rollout import execute
from synth.tasks import instantiate, render_query
from synth.servers.db import make_database


def _plan(seed: int) -> Plan:
    spec = bundled_spec("travel")
    chain, _ = bind_chain(spec, ("search_flights", "get_flight", "book_flight"))
    rng = random.Random(seed)
    calls = instantiate(chain, make_database("travel", 0), rng)
    plan = Plan(task_id="t", server="travel", db_id="travel:s0:v0", instance=(0, 0), calls=calls,
                structure=chain.structure, signature=chain.signature, task_kind="chain", seed=seed)
    plan.query, _ = render_query(plan, spec, rng)
    return plan


def test_injected_error_rate_within_tolerance():
    be, attempts, injected = InProcessBackend(), 0, 0
    for seed in range(400):
        trace = execute(_plan(seed), be, random.Random(seed), error_rate=0.2)
        attempts += len(trace.records)
        injected += sum(r.injected is not None for r in trace.records)
    rate = injected / attempts
    assert attempts > 1000 and abs(rate - 0.2) < 0.03


def test_no_errors_when_rate_zero_and_arguments_flow():
    trace = execute(_plan(1), InProcessBackend(), random.Random(1), error_rate=0.0)
    assert [r.tool for r in trace.records] == ["search_flights", "get_flight", "book_flight"]
    assert all(r.ok for r in trace.records)
    first_id = trace.records[0].output["flights"][0]["flight_id"]
    assert trace.records[1].args["flight_id"] == first_id == trace.records[2].args["flight_id"]
    roles = [m["role"] for m in trace.messages]
    assert roles[:2] == ["system", "user"] and roles[-1] == "assistant" and roles.count("tool") == 3
    assert all(set(m) == {"role", "content", "tool_calls", "tool_call_id", "name"} for m in trace.messages)


def test_recovery_retry_and_honest_failure():
    retried = honest = 0
    for seed in range(60):
        trace = execute(_plan(seed), InProcessBackend(), random.Random(seed), error_rate=0.6)
        for i, m in enumerate(trace.messages):
            if m["role"] == "tool" and m["content"].startswith('{"error"'):
                nxt = next(x for x in trace.messages[i + 1:] if x["role"] == "assistant")
                if nxt["tool_calls"] and m["name"] in [c["function"]["name"] for c in nxt["tool_calls"]]:
                    retried += 1
        if trace.abandoned:
            assert any(a in trace.messages[-1]["content"].lower() for a in ADMIT)
            honest += 1
    assert retried > 20 and honest > 5


def test_injected_errors_are_tool_side_and_only_on_emulated_calls():
    class Real(InProcessBackend):
        def emulated(self, server, tool):
            return tool != "search_flights"  # pretend search_flights runs on a real server

    kinds = set()
    for seed in range(60):
        plan = _plan(seed)
        trace = execute(plan, Real(), random.Random(seed), error_rate=0.5)
        for r in trace.records:
            assert r.tool != "search_flights" or r.injected is None  # never on a real call
            if r.injected:
                kinds.add(r.injected)
                first = next(x for x in trace.records if x.tool == r.tool)
                assert r.args == first.args  # the assistant's call is intact: the tool side failed
    assert kinds == {"timeout", "unreachable"}
