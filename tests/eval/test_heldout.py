"""heldout-calls: items built from the held-out bundled servers; valid, deterministic, gold scores 1.0."""

from __future__ import annotations

import copy
from collections import Counter

import pytest

from eval.ast_match import gold_calls, match_item
from eval.heldout import build_heldout_calls
from eval.models import ParsedOutput, ToolCall
from eval.runner import evaluate
from synth.servers.catalog import call_tool
from synth.servers.db import HELDOUT_DOMAINS, TRAIN_DOMAINS, make_database


@pytest.fixture(scope="module")
def items():
    return build_heldout_calls()


def test_categories_domains_and_determinism(items):
    assert Counter(i.category for i in items) == {"multiple": 96, "parallel": 24, "irrelevance": 32}
    assert {i.source for i in items} == set(HELDOUT_DOMAINS)
    assert not {f["name"] for i in items for f in i.functions} & {
        "search_flights", "find_customer", "search_products"}  # no training-domain tools
    assert set(HELDOUT_DOMAINS).isdisjoint(TRAIN_DOMAINS)
    assert build_heldout_calls() == items
    assert len({i.id for i in items}) == len(items)


def test_reference_calls_are_valid_server_calls(items):
    for it in items:
        for call in gold_calls(it):
            db = make_database(it.source, 0)
            offered = {f["name"] for f in it.functions}
            assert call.name in offered
            try:
                call_tool(it.source, copy.deepcopy(db), call.name, call.arguments)
            except Exception as err:  # an id from another seed's database: argument shape must still be right
                assert "no " in str(err), (it.id, err)
        text = it.messages[-1]["content"]
        for answer in it.ground_truth:
            for allowed in next(iter(answer.values())).values():
                if allowed != [""]:
                    assert str(allowed[0]) in text, (it.id, allowed, text)  # every value is stated


def test_requests_are_plain_sentences(items):
    for it in items:
        text = it.messages[-1]["content"]
        assert "{" not in text and "}" not in text and "|" not in text, text
    assert it.messages[0]["role"] == "system"


def test_fallback_renderer_fills_both_placeholder_forms():
    from types import SimpleNamespace

    from eval.heldout import _request

    tool = SimpleNamespace(name="t", intent="renew loan {loan_id|that loan} for {member}")
    assert _request(tool, {"loan_id": "LN-1", "member": "Ana"}) == "renew loan LN-1 for Ana"
    assert _request(tool, {"member": "Ana"}) == "renew loan that loan for Ana"


def test_irrelevance_requests_belong_to_another_domain(items):
    for it in (i for i in items if i.category == "irrelevance"):
        assert match_item(it, ParsedOutput()).valid
        assert not match_item(it, ParsedOutput(calls=[ToolCall(name=it.functions[0]["name"])])).valid


def test_gold_scores_one_and_wrong_tool_scores_zero(items):
    rows = {m.metric: m for m in evaluate("gold", "heldout-calls")}
    assert rows["score"].score == 1.0 and rows["score"].n_items == len(items)
    wrong = [match_item(it, ParsedOutput(calls=[ToolCall(name="get_alert" if gold_calls(it)[0].name != "get_alert"
                                                         else "find_station", arguments=gold_calls(it)[0].arguments)]))
             for it in items if it.category == "multiple"]
    assert not any(r.valid for r in wrong)
    assert all(0 < r.field_match < 1 for r in wrong)


@pytest.mark.integration
def test_indist_env_mixes_the_shapes_on_training_servers_over_unseen_databases():
    """indist-env: the training servers, databases no run draws, single-hop, multi-hop and parallel in order;
    the gold policy scores 1 on each episode."""
    from eval.heldout import BENCHMARK_SEED, load_indist_env
    from eval.runner import evaluate
    from synth.servers.db import TRAIN_DOMAINS

    items = load_indist_env(n=3)
    shapes = [it.sample["structure"] for it in items]
    assert shapes == ["single-hop", "multi-hop", "parallel-multi-hop"]
    assert all(it.sample["domain"] in TRAIN_DOMAINS and it.sample["seed"] == BENCHMARK_SEED + 1 for it in items)
    assert not items[0].sample["distractors"] and items[2].sample["distractors"]
    rows = {m.metric: m.score for m in evaluate("gold", "indist-env", items=items)}
    assert rows["f1"] == 1.0 and rows["score"] == 1.0
