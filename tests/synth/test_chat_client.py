"""Parsing shared by the LLM roles."""

from __future__ import annotations

import pytest

from synth.chat_client import parse_object, parse_score, transcript, wire_messages


@pytest.mark.parametrize("text,want", [
    ('{"score": 4}', (4, False)), ('Reasoning... {"score": 2.0}', (2, False)), ("Score: 3", (3, True)),
    ("I'd give it a 5.", (5, True)), ('{"score": 9} score 2', (2, True)),
])
def test_parse_score(text, want):
    assert parse_score(text) == want


@pytest.mark.parametrize("text", ["", "between 2 and 4", '{"score": 0}', "no idea", '{"score": true}'])
def test_parse_score_refuses(text):
    with pytest.raises(ValueError):
        parse_score(text)


def test_parse_object_and_wire_format():
    assert parse_object('```json\n{"a": 1}\n```') == {"a": 1}
    with pytest.raises(ValueError):
        parse_object("[1, 2]")
    msgs = [{"role": "user", "content": "hi", "tool_calls": None, "tool_call_id": None, "name": None}]
    assert wire_messages(msgs) == [{"role": "user", "content": "hi"}]
    assert transcript(msgs) == "[user] hi"
