"""Tool-call parsing of model text: well-formed calls, and malformed text never crashing."""

from __future__ import annotations

import pytest

from eval.models import ToolCall
from eval.parsing import format_tool_call, parse_output, parse_tool_calls


def test_one_call_and_content():
    out = parse_output('Sure. <tool_call>{"name": "get_weather", "arguments": {"city": "Oslo", "days": 3}}</tool_call>')
    assert out.calls == [ToolCall(name="get_weather", arguments={"city": "Oslo", "days": 3})]
    assert out.content == "Sure."
    assert out.malformed == []
    assert out.attempted


def test_several_calls_in_order_and_string_arguments():
    text = ('<tool_call>{"name": "a", "arguments": {}}</tool_call>\n'
            '<tool_call>{"name": "b", "arguments": "{\\"x\\": [1, 2]}"}</tool_call>')
    assert parse_tool_calls(text) == [{"name": "a", "arguments": {}}, {"name": "b", "arguments": {"x": [1, 2]}}]


def test_plain_answer_is_no_attempt():
    out = parse_output("The capital of Norway is Oslo.")
    assert out.calls == [] and out.malformed == [] and not out.attempted
    assert out.content == "The capital of Norway is Oslo."


@pytest.mark.parametrize("text, reason", [
    ('<tool_call>{"name": "f", "arguments": {"x": 1}', "unterminated"),
    ('<tool_call>{"name": "f", "arguments": {"x": 1}</tool_call>', "invalid JSON"),
    ('<tool_call>["f", 1]</tool_call>', "expected a JSON object"),
    ('<tool_call>{"arguments": {}}</tool_call>', "name"),
    ('<tool_call>{"name": 3, "arguments": {}}</tool_call>', "name"),
    ('<tool_call>{"name": "f", "arguments": [1]}</tool_call>', "must be an object"),
    ('<tool_call>{"name": "f", "arguments": "not json"}</tool_call>', "not valid JSON"),
    ('<tool_call>{"name": "f", "arguments": {"x": NaN}}</tool_call>', "invalid JSON"),
    ('<tool_call></tool_call>', "empty"),
    ('x</tool_call>', "closing"),
    ('<tool_call><tool_call>{"name": "f"}</tool_call>', "opened inside"),
])
def test_malformed_is_recorded_not_raised(text, reason):
    out = parse_output(text)
    assert out.attempted
    assert any(reason in m for m in out.malformed), out.malformed


@pytest.mark.parametrize("text", [None, "", "<tool_call>" * 50, "[" * 5000, "<tool_call>" + "[" * 100000 + "</tool_call>",
                                  "\x00\xff garbage <tool_ca", "}}}</tool_call><tool_call>{"])
def test_garbage_never_raises(text):
    out = parse_output(text)
    assert out.calls == []


def test_format_round_trips():
    call = ToolCall(name="library.search", arguments={"q": "ünïcode", "n": 2, "f": 1.5, "flag": True, "l": [1, "a"]})
    assert parse_output(format_tool_call(call)).calls == [call]
    assert "\n" not in format_tool_call(call)
