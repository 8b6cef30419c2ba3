"""The benchmark registry: metadata, lazy loaders, and pinned item digests (a benchmark's content
never changes without its version)."""

from __future__ import annotations

import pytest

from eval.benchmarks import get_benchmark, list_benchmarks, load_items
from eval.errors import UnknownBenchmarkError
from eval.heldout import items_digest

from .test_bfcl import needs_wheel

REGEN = ("items of {name!r} changed (digest {got}); if intended, bump its version in eval/benchmarks.py and set "
         "digest={got!r} (python -m eval.heldout prints the heldout-calls digest)")


def test_registry_metadata():
    names = [b.name for b in list_benchmarks()]
    assert names == sorted(names) and {"heldout-calls", "heldout-env", "bfcl"} <= set(names)
    for b in list_benchmarks():
        assert b.version and b.description and b.higher_is_better and "score" in b.metrics
        assert ":" in b.loader
    assert get_benchmark("heldout-env").kind == "env"
    with pytest.raises(UnknownBenchmarkError, match="known: bfcl, code-heldout-apis, code-indist, code-valid, heldout-calls, "
                                                    "heldout-env, heldout-servers, indist-calls, indist-env, valid-calls; "
                                                    "did you mean 'heldout-env'"):
        get_benchmark("heldout-en")


@pytest.mark.parametrize("name", ["heldout-calls", "indist-calls", "heldout-servers", "valid-calls",
                                  pytest.param("bfcl", marks=needs_wheel)])
def test_items_match_the_pinned_digest(name):
    info = get_benchmark(name)
    got = items_digest(load_items(name))
    assert got == info.digest, REGEN.format(name=name, got=got)


def test_protocol_benchmarks_have_their_sizes_servers_and_unseen_databases():
    from synth.servers.db import HELDOUT_DOMAINS, TRAIN_DOMAINS

    indist, held = load_items("indist-calls"), load_items("heldout-servers")
    assert sum(bool(i.ground_truth) for i in indist) >= 256 and {i.source for i in indist} == set(TRAIN_DOMAINS)
    assert sum(bool(i.ground_truth) for i in held) >= 200 and {i.source for i in held} == set(HELDOUT_DOMAINS)
    assert len({i.id for i in indist}) == len(indist) and len({i.id for i in held}) == len(held)
    # the same builder on training-seed databases gives other values: the databases are really new
    from eval.heldout import build_heldout_calls
    base = build_heldout_calls(calls_per_domain=26, parallel_per_domain=6, irrelevant_per_domain=2,
                               domains=tuple(TRAIN_DOMAINS), seed=20_260_102, id_prefix="indist")
    assert [i.ground_truth for i in base] != [i.ground_truth for i in indist]
    for name in ("indist-calls", "heldout-servers"):
        assert "bpb" in get_benchmark(name).metrics


def test_items_are_built_once_per_process_and_callers_get_their_own_list():
    from eval import benchmarks

    first = load_items("heldout-calls")
    first.clear()  # a caller's list is its own
    again = load_items("heldout-calls")
    assert len(again) == 152 and again[0] is load_items("heldout-calls")[0]  # the same built items
    assert any(k[0] == "heldout-calls" for k in benchmarks._LOADED)


def test_the_validation_split_shares_no_item_with_either_test_benchmark():
    from eval.heldout import VALID_DB_SEED_BASE, shared_items
    from synth.servers.db import TRAIN_DOMAINS

    valid = load_items("valid-calls")
    indist, held = load_items("indist-calls"), load_items("heldout-servers")
    assert shared_items(valid, indist) == 0 and shared_items(valid, held) == 0
    assert shared_items(indist, indist) == len(indist)  # the check itself finds shared items
    assert {i.source for i in valid} == set(TRAIN_DOMAINS) and all(i.ground_truth for i in valid)
    assert len(valid) >= 120 and VALID_DB_SEED_BASE > 9_000_005  # its databases are not the test ones
