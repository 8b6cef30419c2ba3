"""Bundled server databases (pinned interface 2)."""

from __future__ import annotations

import json

import pytest

from synth.errors import RecipeError
from synth.servers.db import DOMAINS, HELDOUT_DOMAINS, N_VARIANTS, TRAIN_DOMAINS, db_instances, make_database


def test_domains_and_heldout():
    assert len(DOMAINS) >= 8
    assert 1 <= len(HELDOUT_DOMAINS) < len(DOMAINS)
    assert set(HELDOUT_DOMAINS) <= set(DOMAINS)
    assert not set(HELDOUT_DOMAINS) & set(TRAIN_DOMAINS)


@pytest.mark.parametrize("domain", DOMAINS)
def test_deterministic_json_tables(domain):
    a, b = make_database(domain, 7, 1), make_database(domain, 7, 1)
    assert a == b and a is not b
    assert json.loads(json.dumps(a)) == a
    assert all(isinstance(rows, list) for rows in a.values())
    assert sum(len(rows) for rows in a.values()) > 10


def test_seed_and_variant_change_the_instance():
    base = make_database("travel", 0, 0)
    assert make_database("travel", 1, 0) != base
    v1 = make_database("travel", 0, 1)
    assert v1 != base
    assert "updated_at" in v1["flights"][0] and "updated_at" not in base["flights"][0]
    ids = {make_database("travel", 0, v)["flights"][0]["flight_id"][:3] for v in range(N_VARIANTS)}
    assert len(ids) == N_VARIANTS  # id formats differ per schema variant


def test_db_instances_distinct():
    inst = db_instances(6, base_seed=2)
    assert len(set(inst)) == 6 and {v for _, v in inst} == set(range(N_VARIANTS))


def test_bad_input():
    with pytest.raises(RecipeError, match="unknown server domain 'nope'"):
        make_database("nope", 0)
    with pytest.raises(RecipeError, match="variant"):
        make_database("travel", 0, -1)
    with pytest.raises(RecipeError, match="db_diversity"):
        db_instances(0, 0)
