"""The seven-dimension judge is fail-closed."""

from __future__ import annotations

import json
import math
import socket

import pytest

from synth.errors import LLMEndpointError
from synth.judge import LLMJudge, RuleJudge, judge_trajectory
from synth.models import JUDGE_DIMENSIONS
from synth.llm.scripted import ScriptedEndpoint, raw, reply
from synth.rollout import message


def _call(cid, name, **args):
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def good(final="Here is what I found: search_flights found 1 flights (first: flight_id FL-1234).") -> list[dict]:
    return [message("system", "s"), message("user", "Find flights from Oslo to Lima."),
            message("assistant", "To do this I will call search_flights.",
                    [_call("call_1", "search_flights", origin="Oslo", destination="Lima")]),
            message("tool", json.dumps({"count": 1, "flights": [{"flight_id": "FL-1234"}]}), tool_call_id="call_1",
                    name="search_flights"),
            message("assistant", final)]


def test_rule_judge_scores_a_clean_trajectory_high():
    scores = RuleJudge().score(good())
    assert set(scores) == set(JUDGE_DIMENSIONS) and all(v == 1.0 for v in scores.values())
    assert judge_trajectory(RuleJudge(), good(), 0.7).accepted


def test_failed_call_scores_zero_success_not_half():
    conv = good("I could not complete search_flights: the tool failed.")
    conv[3] = message("tool", json.dumps({"error": "timeout", "message": "x"}), tool_call_id="call_1",
                      name="search_flights")
    s = RuleJudge().score(conv)
    assert s["tool_call_success"] == 0.0
    assert s["final_answer"] > 0  # honest failure answer is faithful
    conv[-1] = message("assistant", "Here is what I found: FL-1234.")  # claims success anyway
    assert RuleJudge().score(conv)["final_answer"] == 0.0


def test_unfaithful_final_answer_penalised():
    s = RuleJudge().score(good("The flight is FL-7777 at 99.50."))
    assert s["final_answer"] < 0.5


class Raising:
    def score(self, messages):
        raise RuntimeError("judge service down")


class Missing:
    def score(self, messages):
        return {d: 1.0 for d in JUDGE_DIMENSIONS[:-1]}


class NaN:
    def score(self, messages):
        return {d: math.nan for d in JUDGE_DIMENSIONS}


def test_judge_error_rejects_never_passes():
    for judge, reason in ((Raising(), "judge_error:RuntimeError"), (Missing(), "judge_error:missing_or_invalid:final_answer"),
                          (NaN(), "judge_error:missing_or_invalid:query_understanding")):
        v = judge_trajectory(judge, good(), threshold=0.0)
        assert not v.accepted and v.judge_failed and v.reason == reason and v.mean is None


def test_llm_judge_unreachable_endpoint_fails_cleanly_naming_the_url():
    with socket.socket() as s:  # a local port nobody listens on: connection refused, no network
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    with pytest.raises(LLMEndpointError, match=f"{url}/chat/completions .*unreachable"):
        judge_trajectory(LLMJudge(url, timeout_s=2), good(), 0.0)


def test_llm_judge_unusable_reply_rejects():
    with ScriptedEndpoint([raw("not json"), reply("no scores here"), reply('{"query_understanding": 1}')],
                          models=("judge",)) as ep:
        judge = LLMJudge(ep.url)
        reasons = [judge_trajectory(judge, good(), 0.0).reason for _ in range(3)]
        judge.client.close()
    assert reasons == ["judge_error:LLMReplyError", "judge_error:JSONDecodeError",
                       "judge_error:missing_or_invalid:query_planning"]


def test_judge_timeout_rejects():
    import time

    class Slow:
        def score(self, messages):
            time.sleep(2)
            return {d: 1.0 for d in JUDGE_DIMENSIONS}

    v = judge_trajectory(Slow(), good(), 0.0, timeout_s=0.2)
    assert not v.accepted and v.judge_failed and v.reason == "judge_error:TimeoutError"
    assert judge_trajectory(RuleJudge(), good(), 0.7, timeout_s=5).accepted


def test_the_audit_set_is_gated_per_defect_and_the_repair_axis_is_never_filtered():
    """The committed audit set (tests/fixtures/synth_audit.jsonl, 240 labelled trajectories): each defect
    kind is rejected by its own rule, and clean or non-derivable (repair-axis) trajectories are all kept."""
    from pathlib import Path

    from synth.audit import DEFECTS

    path = Path(__file__).parents[1] / "fixtures" / "synth_audit.jsonl"
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    assert len(rows) >= 200 and {r["label"] for r in rows} == {*DEFECTS, "clean", "nonderivable"}
    hits = {k: 0 for k in DEFECTS}
    flagged = {k: 0 for k in DEFECTS}
    for r in rows:
        v = judge_trajectory(RuleJudge(), r["messages"], 0.7)
        if r["label"] in ("clean", "nonderivable"):
            assert v.accepted, (r["label"], v.reason)
            continue
        for rule in set(v.failed_rules) & set(DEFECTS):
            flagged[rule] += 1
            hits[rule] += rule == r["label"]
    n = {k: sum(r["label"] == k for r in rows) for k in DEFECTS}
    for k in DEFECTS:
        assert hits[k] / n[k] >= 0.9 and hits[k] / flagged[k] >= 0.9, (k, hits[k], n[k], flagged[k])


def test_a_failed_only_trajectory_is_rejected_whatever_its_mean():
    conv = good("I could not complete the search: the service timed out.")
    conv[3] = message("tool", json.dumps({"error": "timeout", "message": "x"}), tool_call_id="call_1",
                      name="search_flights")
    v = judge_trajectory(RuleJudge(), conv, 0.0)
    assert not v.accepted and v.reason == "rule:all_calls_failed" and v.mean > 0.5


def test_a_stock_question_needs_the_stock_in_the_answer():
    conv = [message("system", "s"), message("user", "Check the stock of product PR-1234."),
            message("assistant", "", [_call("call_1", "get_product", product_id="PR-1234")]),
            message("tool", json.dumps({"product_id": "PR-1234", "price": 9.5, "stock": 17}), tool_call_id="call_1",
                    name="get_product"),
            message("assistant", "PR-1234 costs 9.5.")]
    assert judge_trajectory(RuleJudge(), conv, 0.7).failed_rules == ["answer_missing_fields"]
    conv[-1] = message("assistant", "PR-1234 has 17 units in stock.")
    assert judge_trajectory(RuleJudge(), conv, 0.7).accepted
