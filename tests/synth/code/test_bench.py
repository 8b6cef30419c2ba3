"""Items of the code benchmarks: fixed, fitting the proxies' context, held-out APIs only where promised."""

from __future__ import annotations

import json

from synth.code.bench import HELDOUT_ITEMS, INDIST_ITEMS, MAX_RENDERED_CHARS, code_items, rendered_chars
from synth.code.catalog import HELDOUT_APIS
from synth.code.workspace import TOOL_SCHEMAS


def test_item_sets_have_their_sizes_and_stay_apart():
    indist, held = code_items("indist"), code_items("heldout")
    assert len(indist) == INDIST_ITEMS and len(held) == HELDOUT_ITEMS
    assert not {i["source"] for i in indist} & set(HELDOUT_APIS)
    assert {i["source"] for i in held} <= set(HELDOUT_APIS) and len({i["source"] for i in held}) == len(HELDOUT_APIS)
    assert len({i["id"] for i in indist + held}) == len(indist) + len(held)
    assert any(i["dependent"] for i in indist) and any(not i["dependent"] for i in indist)


def test_items_end_before_their_write_and_fit_the_context():
    for item in code_items("indist")[:40]:
        last = item["messages"][-1]
        assert last["role"] == "tool" and last["name"] == "read_file"  # the spec was just read
        (truth,) = item["ground_truth"]
        content = truth["write_file"]["content"][0]
        assert "def " in content and item["tests"].count("def test_") >= 2
        ref = {"role": "assistant", "content": "", "tool_calls": [{"id": "x", "type": "function", "function": {
            "name": "write_file", "arguments": json.dumps({"path": item["path"], "content": content})}}],
            "tool_call_id": None, "name": None}
        assert rendered_chars([*item["messages"], ref], TOOL_SCHEMAS) <= MAX_RENDERED_CHARS + 40


def test_rendered_chars_matches_the_chat_template():
    from train.chat import render

    item = code_items("heldout")[3]
    assert rendered_chars(item["messages"], TOOL_SCHEMAS) == len(render(item["messages"], TOOL_SCHEMAS))
