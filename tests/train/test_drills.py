"""Copy drills for the RL warm start: distances measured on the episodes, fresh ids repeated at those distances."""

from __future__ import annotations

import json
import random
import re

import pytest

from train.chat import render
from train.drills import DRILL_PREFIX, IDS_PER_DRILL, copied_values, copy_distances, drill_rows, shaped_like


def _msg(role, content="", tool_calls=None):
    return {"role": role, "content": content, "tool_calls": tool_calls, "tool_call_id": None, "name": None}


def _call(name, **arguments):
    return [{"id": "c1", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}]


def _row(question, value, filler_words):
    """A question naming ``value`` among ``filler_words`` words, then a call that copies it, then an answer."""
    words = " ".join(f"w{i}" for i in range(filler_words))
    return {"messages": [_msg("user", f"Where is order {value}? {words}"),
                         _msg("assistant", tool_calls=_call("get_order", order_id=value, mode="full")),
                         _msg("assistant", "Done.")], "tools": "[]", "meta": "{}"}


@pytest.fixture(scope="module")
def episodes():
    return [_row("q", f"OR-{1000 + 37 * i}", 3 + 9 * i) for i in range(6)]


@pytest.fixture(scope="module")
def tok(episodes):
    from train.tokenizer import train_tokenizer

    return train_tokenizer([render(r["messages"], r["tools"]) for r in episodes] * 8, 300)


def _tokens_before(tok, text, char):
    """Tokens of ``text[:char]``: an independent count (the prefixes here end on word boundaries)."""
    return len(tok(text[:char], add_special_tokens=False)["input_ids"])


def test_copied_values_are_the_calls_string_arguments(episodes):
    assert copied_values(episodes[0]) == ["OR-1000", "full"]
    assert copied_values({"messages": [_msg("assistant", tool_calls=_call("f", n=12, s="ab"))]}) == []


def test_copy_distance_is_the_tokens_from_the_question_to_the_call(episodes, tok):
    for row in episodes:
        text = render(row["messages"], row["tools"])
        value = copied_values(row)[0]
        want = _tokens_before(tok, text, text.rindex(value)) - _tokens_before(tok, text, text.index(value))
        assert copy_distances(row, tok) == [want]   # "full" appears nowhere before the call: not a copy
    far = [copy_distances(r, tok)[0] for r in episodes]
    assert far == sorted(far) and far[-1] - far[0] >= 40   # longer questions, longer copies


def test_shaped_like_keeps_the_shape_and_draws_fresh_characters():
    rng = random.Random(0)
    fresh = [shaped_like("OR-1502_ab", rng) for _ in range(20)]
    assert all(re.fullmatch(r"[A-Z]{2}-\d{4}_[a-z]{2}", f) for f in fresh)
    assert len(set(fresh)) == 20


def test_drill_rows_repeat_fresh_ids_at_the_episodes_distances(episodes, tok):
    drills = drill_rows(episodes, tok, turns=3, seed=1)
    assert len(drills) == len(episodes)
    distances = sorted(d for r in episodes for d in copy_distances(r, tok))
    gaps = []
    for row in drills:
        assert json.loads(row["meta"])["task_id"].startswith(DRILL_PREFIX) and row["tools"] == "[]"
        assert [m["role"] for m in row["messages"]] == ["user", "assistant"] * 3
        text = render(row["messages"], row["tools"])
        for user, reply in zip(row["messages"][::2], row["messages"][1::2], strict=True):
            ids = reply["content"]
            assert user["content"].startswith(ids) and len(ids.split()) == IDS_PER_DRILL
            assert all(re.fullmatch(r"[A-Z]{2}-\d{4}|[a-z]{4}", i) for i in ids.split())
            assert not set(ids.split()) & {v for r in episodes for v in copied_values(r)} - {"full"}
            at = text.index(ids)
            gap = _tokens_before(tok, text, text.index(ids, at + 1)) - _tokens_before(tok, text, at)
            bare = render([_msg("user", ids), _msg("assistant", ids)])
            unpadded = _tokens_before(tok, bare, bare.rindex(ids)) - _tokens_before(tok, bare, bare.index(ids))
            # at a measured distance (within decoding's token or two), or right after a list longer than it
            assert min(abs(gap - d) for d in distances) <= 2 or (gap == unpadded and unpadded > distances[0])
            gaps.append(gap)
    assert len(set(gaps)) >= 4   # the distances are drawn, not one offset
    assert drill_rows(episodes, tok, turns=3, seed=1) == drills
    assert drill_rows(episodes, tok, turns=3, seed=2) != drills


def test_drill_rows_at_long_distances_carry_episode_text_between_list_and_repeat(tok):
    far = [_row("q", "OR-4242", 120)]
    (row,) = drill_rows(far, tok, turns=2, seed=0)
    user = row["messages"][0]["content"]
    assert "\n" in user and len(user.split("\n", 1)[1].split()) > 40   # the filler is a slice of the episode


def test_drill_rows_refuse_what_they_cannot_drill(episodes, tok):
    with pytest.raises(ValueError, match="turns >= 1"):
        drill_rows(episodes, tok, turns=0)
    silent = [{"messages": [_msg("user", "hi"), _msg("assistant", "Done.")], "tools": "[]", "meta": "{}"}]
    with pytest.raises(ValueError, match="nothing to drill"):
        drill_rows(silent, tok, turns=1)
