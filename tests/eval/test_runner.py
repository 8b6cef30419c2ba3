"""evaluate(): item selection, aggregation, and the gold pseudo-model scoring 1.0."""

from __future__ import annotations

import math

import pytest

from eval.benchmarks import get_benchmark
from eval.errors import UnknownBenchmarkError
from eval.models import CallItem, ContinuationScore, MatchResult
from eval.runner import call_metrics, evaluate, mean_stderr, select_items
from toolscale.errors import UsageError

from .test_bfcl import needs_wheel


def _items(n_per_cat=5):
    return [CallItem(id=f"{c}{i}", category=c, messages=[{"role": "user", "content": "q"}],
                     functions=[{"name": "f", "parameters": {"type": "object", "properties": {}}}],
                     ground_truth=[] if c == "irrelevance" else [{"f": {}}])
            for c in ("simple", "parallel", "irrelevance") for i in range(n_per_cat)]


def test_select_items_stratified_and_seeded():
    items = _items()
    chosen = select_items(items, 6, seed=1)
    assert sorted(i.category for i in chosen) == ["irrelevance"] * 2 + ["parallel"] * 2 + ["simple"] * 2
    assert select_items(items, 6, seed=1) == chosen
    assert select_items(items, 6, seed=2) != chosen
    assert select_items(items, None) == items
    assert len(select_items(items, 100)) == 15
    with pytest.raises(UsageError, match="limit must be a positive integer, got 0"):
        select_items(items, 0)


def test_mean_stderr():
    assert mean_stderr([1.0, 0.0, 1.0, 0.0]) == (0.5, pytest.approx(math.sqrt(1 / 3 / 4)))
    assert mean_stderr([1.0]) == (1.0, 0.0)


def test_call_metrics_category_mean_and_likelihoods():
    items = _items(2)
    results = [MatchResult(valid=v, field_match=0.5) for v in (True, True, False, False, True, False)]
    scores = [ContinuationScore(logprob=-4.0, n_tokens=2)] * 6
    rows = {m.metric: m for m in call_metrics(get_benchmark("bfcl"), items, results, scores)}
    assert rows["score"].score == pytest.approx((1.0 + 0.0 + 0.5) / 3)
    assert rows["score"].n_items == 6 and rows["score"].version == get_benchmark("bfcl").version
    assert rows["acc_simple"].score == 1.0 and rows["acc_parallel"].score == 0.0
    assert rows["field_match"].score == 0.5
    assert rows["call_logprob"].score == -4.0 and rows["call_logprob"].n_items == 4  # irrelevance left out
    assert rows["loss"].score == 2.0 and not rows["loss"].higher_is_better
    flat = {m.metric: m for m in call_metrics(get_benchmark("heldout-calls"), items, results)}
    assert flat["score"].score == pytest.approx(0.5)
    assert "loss" not in flat


@needs_wheel
def test_gold_scores_one_on_bfcl():
    rows = evaluate("gold", "bfcl", limit=60, seed=3)
    head = rows[0]
    assert head.metric == "score" and head.score == 1.0 and head.n_items == 60
    assert {m.metric for m in rows} >= {"field_match", "acc_simple", "acc_irrelevance"}
    assert all(m.score == 1.0 for m in rows)


def test_unknown_benchmark():
    with pytest.raises(UnknownBenchmarkError, match="unknown benchmark 'bfcl4'.*did you mean 'bfcl'"):
        evaluate("gold", "bfcl4")
