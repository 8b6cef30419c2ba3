"""eval/token_cache.py: encodings cached per tokenizer are exactly what the backend computes without a cache."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from eval.backends import TransformersBackend  # noqa: E402
from eval.heldout import build_heldout_calls  # noqa: E402
from eval.prompts import item_request, reference_request  # noqa: E402
from eval.token_cache import TokenCache, request_key  # noqa: E402
from train.tokenizer import tokenizer_fingerprint  # noqa: E402

from .tiny_model import save_tiny_model  # noqa: E402


@pytest.fixture(scope="module")
def items():
    return build_heldout_calls(calls_per_domain=3, parallel_per_domain=1, irrelevant_per_domain=1)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory, items):
    return save_tiny_model(tmp_path_factory.mktemp("model"), items)


def test_cached_encodings_and_scores_equal_uncached_ones_and_are_read_back(tmp_path, model_dir, items):
    reqs = [reference_request(it) for it in items]
    prompts = [item_request(it) for it in items]
    plain = TransformersBackend(model_dir, threads=1)
    first = TransformersBackend(model_dir, threads=1, cache_dir=tmp_path)
    assert [s.model_dump() for s in first.score(reqs)] == [s.model_dump() for s in plain.score(reqs)]
    assert first.cache.misses == len(reqs) and first.cache.hits == 0
    first.generate(prompts[:2], max_new_tokens=4)
    again = TransformersBackend(model_dir, threads=1, cache_dir=tmp_path)  # a later run of the experiment
    for r in reqs:
        assert again._scored(r) == plain._scored(r)
    for p in prompts[:2]:
        assert again._prompt_ids(p) == plain._prompt_ids(p)
    assert again.cache.misses == 0 and again.cache.hits == len(reqs) + 2
    assert [s.model_dump() for s in again.score(reqs)] == [s.model_dump() for s in plain.score(reqs)]


def test_another_tokenizer_never_reads_these_entries(tmp_path, model_dir, items):
    from .tiny_model import save_tiny_model as save

    other_dir = save(tmp_path / "other", items[:4], vocab_size=300)
    a = TransformersBackend(model_dir, threads=1, cache_dir=tmp_path / "cache")
    b = TransformersBackend(other_dir, threads=1, cache_dir=tmp_path / "cache")
    assert tokenizer_fingerprint(a.tokenizer) != tokenizer_fingerprint(b.tokenizer)
    req = reference_request(items[0])
    a.score([req])
    b.score([req])
    assert b.cache.hits == 0 and b.cache.misses == 1  # its own file, its own entry
    assert len(list((tmp_path / "cache").glob("v1-*.json"))) == 2


def test_unreadable_file_is_an_empty_cache_and_is_rewritten(tmp_path, model_dir, items):
    backend = TransformersBackend(model_dir, threads=1, cache_dir=tmp_path)
    path = backend.cache.path
    path.write_text("{trunc", encoding="utf-8")
    fresh = TransformersBackend(model_dir, threads=1, cache_dir=tmp_path)
    assert fresh.cache.entries == {}
    fresh.score([reference_request(items[0])])
    assert len(json.loads(path.read_text(encoding="utf-8"))["entries"]) == 1


def test_two_writers_merge_their_entries(tmp_path):
    a, b = TokenCache(tmp_path, "f" * 16), TokenCache(tmp_path, "f" * 16)
    a.get("scored:1", lambda: [[1, 2], [[1, 2]], 3])
    b.get("scored:2", lambda: [[4], [[0, 1]], 1])
    assert a.save() == 1 and b.save() == 1
    merged = TokenCache(tmp_path, "f" * 16)
    assert set(merged.entries) == {"scored:1", "scored:2"}
    assert request_key("scored", "x") != request_key("prompt", "x")
