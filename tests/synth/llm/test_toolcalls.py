"""Generated tool calls that cannot be executed get a countable reason, never a silent pass."""

from __future__ import annotations

from synth.llm.models import ChatReply, ReplyToolCall
from synth.llm.toolcalls import check_tool_calls, parse_arguments

TOOLS = [{"type": "function", "function": {"name": "get_user", "description": "d", "parameters": {
    "type": "object", "properties": {"user_id": {"type": "string"}, "limit": {"type": "integer"},
                                     "mode": {"enum": ["a", "b"]}},
    "required": ["user_id"], "additionalProperties": False}}}]


def reply(*calls: tuple[str, str], finish: str = "tool_calls") -> ChatReply:
    return ChatReply(role="policy", model="m", content="", finish_reason=finish, tokens_in=0, tokens_out=0,
                     cached=False, key="k", tool_calls=[ReplyToolCall(id=f"c{i}", name=n, arguments=a)
                                                        for i, (n, a) in enumerate(calls)])


def reasons(r: ChatReply) -> list[str]:
    return [p.reason for p in check_tool_calls(r, TOOLS)]


def test_valid_calls_pass():
    assert reasons(reply(("get_user", '{"user_id": "u1", "limit": 3, "mode": "a"}'))) == []


def test_each_fault_has_its_reason():
    assert reasons(reply(("get_usr", '{"user_id": "u1"}'))) == ["unknown_tool"]
    assert reasons(reply(("get_user", '{"user_id": "u'), finish="length")) == ["truncated_tool_call"]
    assert reasons(reply(("get_user", '{"user_id": "u'))) == ["malformed_arguments"]
    assert reasons(reply(("get_user", '["u1"]'))) == ["malformed_arguments"]
    for bad in ('{}', '{"user_id": 5}', '{"user_id": "u", "mode": "c"}', '{"user_id": "u", "extra": 1}'):
        assert reasons(reply(("get_user", bad))) == ["schema_violation"], bad


def test_details_name_the_problem_and_every_call_is_checked():
    probs = check_tool_calls(reply(("get_user", '{"user_id": 5}'), ("nope", "{}"), ("get_user", '{"user_id": "u"}')),
                             TOOLS)
    assert [(p.call_id, p.reason) for p in probs] == [("c0", "schema_violation"), ("c1", "unknown_tool")]
    assert "user_id" in probs[0].detail and "get_user" in probs[1].detail


def test_parse_arguments():
    call = ReplyToolCall(id="c", name="f", arguments=" ")
    assert parse_arguments(call) == {}
    assert parse_arguments(call.model_copy(update={"arguments": '{"a": 1}'})) == {"a": 1}
    assert parse_arguments(call.model_copy(update={"arguments": "1"})) is None
