"""synth/envs/reward.py: the F1 reward's worked values (seed 000, Q4) and target matching."""

from __future__ import annotations

import pytest

from synth.envs.models import Target
from synth.envs.reward import answer_in_output, canonical_answer, f1_reward, match_targets, partial_credit
from toolscale.errors import UsageError


@pytest.mark.parametrize(("hit", "targets", "calls", "expected"), [
    (4, 4, 4, 1.0),    # all 4 targets in 4 calls: ~1
    (4, 4, 6, 0.8),    # all 4 in 6 calls: ~0.80
    (3, 4, 4, 0.75),   # 3 of 4 in 4 calls: 0.75
])
def test_seed_worked_values(hit, targets, calls, expected):
    assert f1_reward(hit, targets, calls) == pytest.approx(expected, abs=1e-12)


def test_f1_is_harmonic_mean_of_recall_and_call_precision():
    for hit, n, c in [(1, 3, 5), (2, 2, 7), (5, 6, 5)]:
        r, p = hit / n, hit / c
        assert f1_reward(hit, n, c) == pytest.approx(2 * p * r / (p + r))


def test_edge_cases():
    assert f1_reward(0, 4, 0) == 0.0
    assert f1_reward(0, 4, 9) == 0.0
    assert f1_reward(0, 0, 0) == 1.0   # nothing to do, nothing done
    assert f1_reward(0, 0, 2) == 0.0


@pytest.mark.parametrize("args", [(5, 4, 6), (3, 4, 2), (-1, 4, 4), (1.5, 4, 4), (True, 4, 4)])
def test_bad_counts_are_rejected_with_the_value(args):
    with pytest.raises(UsageError, match="f1_reward"):
        f1_reward(*args)


def test_answer_in_output_matches_values_not_digits():
    assert answer_in_output("600", '{"additional_fee": 600.0, "currency": "INR"}')
    assert not answer_in_output("60", '{"additional_fee": 600}')
    assert answer_in_output("RES987654", '{"reservation_id": "RES987654"}')
    assert answer_in_output("TXN123456789", "Payment successful. Transaction ID: TXN123456789")
    assert not answer_in_output("TXN12345678", "Payment successful. Transaction ID: TXN123456789")
    assert not answer_in_output("", "anything")
    assert canonical_answer(2.50) == "2.5" and canonical_answer(3.0) == "3"


def test_match_targets_counts_each_target_once():
    targets = [Target(node="q1", tool="find", arguments={}, answer="A1"),
               Target(node="q2", tool="fee", arguments={}, answer="600")]
    calls = [("find", '{"id": "A1"}'), ("find", '{"id": "A1"}'), ("fee", '{"fee": 600}'), ("other", "600")]
    assert match_targets(targets, calls) == [0, None, 1, None]
    hits = sum(h is not None for h in match_targets(targets, calls))
    assert f1_reward(hits, len(targets), len(calls)) == pytest.approx(2 * 2 / (2 + 4))


def test_partial_credit_scores_the_best_call_on_four_checks():
    t = [Target(node="q1", tool="get_order", arguments={"order_id": "OR-42"}, answer="3")]
    offered, prompt = ["get_order", "get_product"], "What is the quantity of the order whose order_id is OR-42?"

    def pc(*calls):
        return partial_credit(list(calls), offered, prompt, t)

    assert pc() == 0.0 and pc({"name": "", "arguments": "{oops"}) == 0.0
    assert pc({"name": {"get_order": 1}, "arguments": {"order_id": "OR-42"}}) == 0.0   # a name that is no string
    assert pc({"name": "get_ordr", "arguments": {"x": 1}}) == 0.25                       # parses only
    assert pc({"name": "get_product", "arguments": {"x": 1}}) == 0.5                     # + offered name
    assert pc({"name": "get_order", "arguments": {"order_id": "OR-7"}}) == 0.75          # + the target's keys
    assert pc({"name": "get_order", "arguments": '{"order_id": "or-42"}'}) == 1.0        # + copied from the prompt
    assert pc({"name": "get_ordr", "arguments": {}}, {"name": "get_order", "arguments": {"order_id": "OR-7"}}) == 0.75
