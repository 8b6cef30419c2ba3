"""The rubric judge: one prompt per dimension, parsed scores, fallback counted, fail-closed."""

from __future__ import annotations

from synth.judge import judge_trajectory
from synth.models import JUDGE_DIMENSIONS
from synth.rubric import RUBRICS, RubricJudge
from synth.rollout import message

CONV = [message("system", "s"), message("user", "Find Ada."),
        message("assistant", "", tool_calls=[{"id": "call_1", "type": "function",
                                              "function": {"name": "find", "arguments": '{"name": "Ada"}'}}]),
        message("tool", '{"id": "CUS-1"}', tool_call_id="call_1", name="find"),
        message("assistant", "Ada is CUS-1.")]


def _dim(messages):
    return next(d for d in JUDGE_DIMENSIONS if f"Dimension: {d}\n" in messages[-1]["content"])


def test_seven_prompts_each_with_its_rubric_and_scores_mapped(scripted_chat):
    score = {d: 1 + i % 5 for i, d in enumerate(JUDGE_DIMENSIONS)}
    client = scripted_chat(lambda role, m, t: f'{{"score": {score[_dim(m)]}}}')
    judge = RubricJudge(client)
    v = judge_trajectory(judge, CONV, threshold=0.0)
    assert len(client.requests) == 7 and {r[0] for r in client.requests} == {"judge"}
    for (_, m, _), d in zip(client.requests, JUDGE_DIMENSIONS):
        assert RUBRICS[d] in m[-1]["content"] and "CUS-1" in m[-1]["content"]
    assert v.accepted and v.scores == {d: (s - 1) / 4 for d, s in score.items()}
    assert judge.stats() == {"fallback_rate": 0.0, "failure_rate": 0.0}


def test_fallback_parse_counted_and_no_score_rejects(scripted_chat):
    judge = RubricJudge(scripted_chat(lambda role, m, t: "Score: 5. Clear." if _dim(m) == "conciseness"
                                      else '{"score": 5}'))
    v = judge_trajectory(judge, CONV, threshold=0.9)
    assert v.accepted and judge.stats()["fallback_rate"] == 1 / 7
    broken = RubricJudge(scripted_chat(lambda role, m, t: "I think it is fine." if _dim(m) == "final_answer"
                                       else '{"score": 5}'))
    v = judge_trajectory(broken, CONV, threshold=0.0)
    assert not v.accepted and v.judge_failed and v.reason == "judge_error:JudgeError"
    assert broken.stats()["failure_rate"] == 1.0


def test_a_failed_request_rejects(scripted_chat):
    judge = RubricJudge(scripted_chat(lambda *a: TimeoutError("judge endpoint timed out")))
    v = judge_trajectory(judge, CONV, threshold=0.0)
    assert not v.accepted and v.reason == "judge_error:TimeoutError" and judge.stats()["failure_rate"] == 1.0
