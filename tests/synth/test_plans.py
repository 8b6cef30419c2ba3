"""Argument-flow verification, structures, dedup and support depth."""

from __future__ import annotations

import random
from collections import Counter

from synth.dataset import bundled_spec
from synth.models import ToolDoc
from synth.plans import (MAX_PER_SIGNATURE, ServerSpec, bind_chain, deepen, fan_in_chains, fan_out_chains, max_hops,
                         parallel_chains, sample_chains)


def _doc(name, required=(), outputs=()):
    props = {p: {"type": "string", "description": p} for p in required}
    return ToolDoc(server="hand", name=name, description=name,
                   parameters={"type": "object", "properties": props, "required": list(required)},
                   output_fields=list(outputs))


def _hand() -> ServerSpec:
    docs = [_doc("find_user", ["name"], ["user_id"]), _doc("find_room", ["building"], ["room_id"]),
            _doc("get_user", ["user_id"], ["user_id", "email"]),
            _doc("book", ["user_id", "room_id"], ["booking_id"]),
            _doc("needs_secret", ["user_id", "secret_token"], ["ok_id"])]
    sources = {"find_user": {"name": "names"}, "find_room": {"building": "choice:N|S"}}
    return ServerSpec("hand", {d.name: d for d in docs}, sources, {d.name: d.name for d in docs})


def test_argument_flow_rejects_missing_argument():
    spec = _hand()
    chain, reason = bind_chain(spec, ("find_user", "needs_secret"))
    assert chain is None and reason == "underivable_argument:needs_secret.secret_token"
    chain, reason = bind_chain(spec, ("get_user",))       # user_id only comes from an earlier output
    assert chain is None and reason == "underivable_argument:get_user.user_id"
    chain, reason = bind_chain(spec, ("find_user", "get_user"))
    assert reason is None and chain.steps[1].args == (("user_id", ("ref", 0, "user_id")),)
    assert chain.structure == "chain" and chain.turns == (1, 2)


def test_incoherent_step_dropped():
    chain, reason = bind_chain(_hand(), ("find_user", "find_room"))
    assert chain is None and reason == "incoherent_step:find_room"


def test_fan_in_fan_out_parallel():
    spec = _hand()
    pool = [bind_chain(spec, t)[0] for t in [("find_user",), ("find_room",), ("find_user", "get_user")]]
    fi = fan_in_chains(spec, pool)
    assert fi and all(c.structure == "fan-in" and c.steps[-1].tool == "book" for c in fi)
    assert fi[0].turns[-1] == max(fi[0].turns)
    fo = fan_out_chains(spec, pool)
    assert all(c.structure == "fan-out" for c in fo)
    par = parallel_chains(spec)
    assert par and all(c.structure == "parallel" and set(c.turns) == {1} for c in par)


def test_dedup_at_most_three_per_signature():
    spec = bundled_spec("travel")
    dropped: Counter[str] = Counter()
    pool = sample_chains(spec, random.Random(0), 4, 2000, dropped)
    sigs = Counter(c.signature for c in pool)
    assert pool and max(sigs.values()) <= MAX_PER_SIGNATURE
    assert len({c.key for c in pool}) == len(pool)
    assert dropped["duplicate_chain"] > 0
    assert any(k.startswith("underivable_argument:") for k in dropped)


def test_deepen_reaches_and_bounds_depth():
    spec = bundled_spec("travel")
    chain, _ = bind_chain(spec, ("search_flights", "book_flight"))
    for depth in (1, 2, 3, 4):
        deep, k = deepen(chain, spec, depth, random.Random(depth))
        assert max_hops(deep.steps, deep.turns) == depth and k == depth - 1
