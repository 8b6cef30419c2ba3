"""Task instantiation, query rendering and augmentation."""

from __future__ import annotations

import random

from synth.plans import Plan, bind_chain, render_intent
from synth.selection import bundled_spec
from synth.servers.db import make_database
from synth.tasks import instantiate, render_query, sample_value


def test_sample_value_sources():
    db = make_database("travel", 0)
    rng = random.Random(0)
    cache: dict = {}
    o = sample_value("row:flights.origin", db, rng, cache)
    d = sample_value("row:flights.destination", db, rng, cache)
    assert any(f["origin"] == o and f["destination"] == d for f in db["flights"])  # one row per call
    assert 1 <= sample_value("int:1:3", db, rng, {}) <= 3
    assert sample_value("choice:a|b", db, rng, {}) in ("a", "b")
    assert len(sample_value("names", db, rng, {}).split()) == 2
    assert sample_value("row:reservations.guest", db, rng, {}) is None  # empty table: no value


def test_render_intent_forms():
    t = "book {flight_id|that flight} for {passenger}"
    assert render_intent(t, lambda p: ("q", {"flight_id": "FL-1", "passenger": "Ana"}[p])) == "book flight FL-1 for Ana"
    assert render_intent(t, lambda p: ("ref", None) if p == "flight_id" else ("q", "Ana")) == "book that flight for Ana"
    assert render_intent(t, lambda p: ("vague", None) if p == "passenger" else ("ref", None)) == \
        "book that flight for the usual passenger"
    assert render_intent("find the {name} folder", lambda p: ("vague", "my usual name")) == \
        "find my usual name folder"  # never "the the usual"


def _plan(seed):
    spec = bundled_spec("travel")
    chain, _ = bind_chain(spec, ("search_flights", "book_flight"))
    rng = random.Random(seed)
    calls = instantiate(chain, make_database("travel", 0), rng)
    plan = Plan("t", "travel", "travel:s0:v0", (0, 0), calls, chain.structure, chain.signature, "chain", seed)
    return plan, spec, rng


def test_query_states_values_and_is_deterministic():
    plan, spec, rng = _plan(3)
    q, aug = render_query(plan, spec, rng)
    assert plan.calls[0].args["origin"][1] in q and plan.calls[1].args["passenger"][1] in q
    assert "that flight" in q and "paraphrase" in aug
    plan2, spec2, rng2 = _plan(3)
    assert render_query(plan2, spec2, rng2) == (q, aug)
    queries = {render_query(*_plan(s))[0] for s in range(30)}
    assert len(queries) > 20  # augmentation and values vary by seed


def test_vague_value_left_out_of_query():
    plan, spec, rng = _plan(4)
    plan.calls[1].vague.add("passenger")
    q, _ = render_query(plan, spec, rng)
    assert plan.calls[1].args["passenger"][1] not in q and "the usual" not in q
