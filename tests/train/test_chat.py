"""The chat template (pinned interface 3): tools in the system turn, tool calls, tool results, masks."""

from __future__ import annotations

import json
import re

import pytest

from train.chat import CHAT_TEMPLATE, GENERATION_PROMPT, normalize_messages, parse_tools, render

CALL_RE = re.compile(r"<tool_call>(.*?)</tool_call>")


def _calls(messages):
    return [(c["function"]["name"], json.loads(c["function"]["arguments"]))
            for m in messages if m.get("tool_calls") for c in m["tool_calls"]]


def test_tools_rendered_in_system_turn(rows):
    row = rows[0]
    text = render(row["messages"], row["tools"])
    system = text.split("<|im_end|>")[0]
    assert system.startswith("<|im_start|>system\n")
    assert row["messages"][0]["content"] in system
    for tool in json.loads(row["tools"]):
        assert json.dumps(tool["function"], ensure_ascii=False) in system


def test_tool_calls_round_trip_through_text(rows):
    for row in rows:
        text = render(row["messages"], row["tools"])
        found = [json.loads(s) for s in CALL_RE.findall(text.split("<|im_end|>", 1)[-1])]
        assert [(c["name"], c["arguments"]) for c in found] == _calls(row["messages"])
        for s in CALL_RE.findall(text.split("<|im_end|>", 1)[-1]):
            assert "\n" not in s  # one call, JSON on one line


def test_tool_results_wrapped_in_tool_turn(rows):
    row = rows[0]
    text = render(row["messages"], row["tools"])
    result = row["messages"][3]["content"]
    assert f"<|im_start|>tool\n<tool_response>{result}</tool_response><|im_end|>" in text


def test_multiline_arguments_become_one_line():
    msgs = [{"role": "assistant", "content": None, "tool_call_id": None, "name": None,
             "tool_calls": [{"id": "c", "type": "function",
                             "function": {"name": "f", "arguments": '{"a":\n 1, "b": "x"}'}}]}]
    out = normalize_messages(msgs)
    assert out[0]["tool_calls"][0]["function"]["arguments"] == '{"a": 1, "b": "x"}'
    assert "content" not in out[0] and "name" not in out[0]
    assert msgs[0]["tool_calls"][0]["function"]["arguments"].startswith('{"a":\n')  # input untouched


def test_generation_prompt_and_no_system_turn_without_tools():
    text = render([{"role": "user", "content": "hi"}], None, add_generation_prompt=True)
    assert text == "<|im_start|>user\nhi<|im_end|>\n" + GENERATION_PROMPT


def test_template_has_generation_markers():
    assert "{%- generation -%}" in CHAT_TEMPLATE and "{%- endgeneration -%}" in CHAT_TEMPLATE


@pytest.mark.parametrize("bad", ['{"not": "a list"}', "[{", 3])
def test_parse_tools_rejects_non_lists(bad):
    with pytest.raises(ValueError, match="tools"):
        parse_tools(bad)


def test_assistant_mask_covers_assistant_turns_only(rows, tokenizer):
    row = rows[-1]  # parallel calls, a tool error, a retry
    out = tokenizer.apply_chat_template(normalize_messages(row["messages"]), tools=parse_tools(row["tools"]),
                                        tokenize=True, return_dict=True, return_assistant_tokens_mask=True)
    ids, mask = out["input_ids"], out["assistant_masks"]
    learned = tokenizer.decode([i for i, b in zip(ids, mask, strict=True) if b])
    masked = tokenizer.decode([i for i, b in zip(ids, mask, strict=True) if not b])
    for m in row["messages"]:
        if m["role"] == "assistant" and m["content"]:
            assert m["content"] in learned
        if m["role"] in ("user", "tool"):
            assert m["content"] in masked and m["content"] not in learned
    assert "<tool_response>" not in learned and "<|im_start|>" not in learned
    assert learned.count("<tool_call>") == 3 and learned.count("<|im_end|>") == 3
