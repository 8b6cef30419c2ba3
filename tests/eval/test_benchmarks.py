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
    with pytest.raises(UnknownBenchmarkError, match="known: bfcl, heldout-calls, heldout-env; did you mean 'heldout-env'"):
        get_benchmark("heldout-en")


@pytest.mark.parametrize("name", ["heldout-calls", pytest.param("bfcl", marks=needs_wheel)])
def test_items_match_the_pinned_digest(name):
    info = get_benchmark(name)
    got = items_digest(load_items(name))
    assert got == info.digest, REGEN.format(name=name, got=got)
