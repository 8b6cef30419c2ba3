"""synth/envs/distractors.py: local TF-IDF similarity and the three tiers."""

from __future__ import annotations

import random

from synth.envs.compile import lookup_tool
from synth.envs.distractors import candidate_pool, pick_distractors, similarity_matrix, tier_of
from synth.servers.db import make_database


def _s(name, desc, params=("x",)):
    return {"type": "function", "function": {"name": name, "description": desc, "parameters": {
        "type": "object", "properties": {p: {"type": "string", "description": p} for p in params}}}}


def test_similarity_orders_near_duplicates_first():
    gold = _s("get_order_by_order_id", "Look up one order by its order_id.", ("order_id",))
    near = _s("get_archived_order_by_order_id", "Look up one archived order by its order_id.", ("order_id",))
    far = _s("celsius_to_fahrenheit", "Convert a temperature.", ("celsius",))
    sims = similarity_matrix([gold, near, far], [gold])[:, 0]
    assert abs(sims[0] - 1.0) < 1e-9
    assert sims[1] > 0.6 and sims[2] < 0.4
    assert [tier_of(s) for s in (0.9, 0.85, 0.5, 0.4, 0.39)] == ["high", "medium", "medium", "medium", "low"]


def test_pick_respects_tiers_counts_and_unique_names():
    dbs = {d: make_database(d, 0, 0) for d in ("shop", "hr", "travel")}
    gold = [lookup_tool("shop", "orders", "order_id", dbs["shop"]["orders"])]
    pool = candidate_pool(dbs, gold=gold, archives={"shop": make_database("shop", 0, 1)})
    names = [c.name for c in pool]
    assert len(names) == len(set(names)) and "get_order" not in names and "get_archived_order" in names
    picked, short = pick_distractors([gold[0].schema()], pool, {"high": 1, "medium": 2, "low": 3},
                                     random.Random(0))
    tiers = [t for _, t, _ in picked]
    assert tiers.count("high") + short.get("high", 0) == 1
    assert tiers.count("medium") + short.get("medium", 0) == 2
    assert tiers.count("low") == 3
    for _, tier, sim in picked:
        assert tier == tier_of(sim)


def test_no_distractor_is_a_stub_under_an_sft_name():
    """Every candidate is a real tool: lookups (real rows, some under other domains' SFT names), archives and
    utilities; none answers "no matching record" whatever it is asked."""
    from synth.servers.catalog import SERVERS
    from synth.servers.db import DOMAINS

    dbs = {d: make_database(d, 0, 0) for d in DOMAINS}
    gold = [lookup_tool("travel", "flights", "flight_id", dbs["travel"]["flights"])]
    pool = candidate_pool(dbs, gold=gold, archives={"travel": make_database("travel", 0, 1)})
    sft_names = {t.name for s in SERVERS.values() for t in s.tools}
    assert all("no matching record" not in c.source.source for c in pool)
    assert {c.origin.split(":")[0] for c in pool} == {"archive", "lookup", "utility"}
    shared = [c for c in pool if c.name in sft_names]
    assert shared and all(c.origin.startswith("lookup:") for c in shared)      # e.g. shop's get_order
    assert "get_flight" not in {c.name for c in pool}                          # the gold tool's own name
