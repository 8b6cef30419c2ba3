"""Copy drills for the RL warm start: fresh id lists repeated across a slice of an episode, and their loss."""

from __future__ import annotations

import json
import random
import re

import pytest

from train.chat import render
from train.drills import GAP, LIST_TOKENS, copied_values, shaped_like


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


def test_copied_values_are_the_calls_string_arguments(episodes):
    assert copied_values(episodes[0]) == ["OR-1000", "full"]
    assert copied_values({"messages": [_msg("assistant", tool_calls=_call("f", n=12, s="ab"))]}) == []


def test_shaped_like_keeps_the_shape_and_draws_fresh_characters():
    rng = random.Random(0)
    fresh = [shaped_like("OR-1502_ab", rng) for _ in range(20)]
    assert all(re.fullmatch(r"[A-Z]{2}-\d{4}_[a-z]{2}", f) for f in fresh)
    assert len(set(fresh)) == 20


def _drills(episodes, tok, **kw):
    from train.drills import CopyDrills

    return CopyDrills(episodes, tok, **{"sequences": 6, "seed": 1, **kw})


def test_a_drill_is_a_fresh_id_list_a_slice_of_an_episode_and_the_list_again(episodes, tok):
    drills = _drills(episodes, tok)
    streams = [tok(render(r["messages"], r["tools"]), add_special_tokens=False)["input_ids"] for r in episodes]
    gaps = []
    for seq in drills.batch(3):
        first, middle, repeat = seq[:LIST_TOKENS], seq[LIST_TOKENS:-LIST_TOKENS], seq[-LIST_TOKENS:]
        assert first == repeat
        ids = tok.decode(first).split()
        assert all(re.fullmatch(r"([A-Z]{2}-\d{0,4}|[a-z]{0,4})", i) for i in ids)   # shaped like OR-1000, full
        assert not set(ids) & {v for r in episodes for v in copied_values(r)}       # fresh, not the episodes'
        assert any(middle == s[a:a + len(middle)] for s in streams for a in range(len(s)))   # a real slice
        gaps.append(len(middle))
    assert all(GAP[0] <= g <= GAP[1] for g in gaps) and len(set(gaps)) >= 3
    assert drills.batch(3) == _drills(episodes, tok).batch(3)      # a step's drills depend on seed and step only
    assert drills.batch(4) != drills.batch(3) and _drills(episodes, tok, seed=2).batch(3) != drills.batch(3)


def test_the_drill_loss_is_the_batch_mean_and_records_each_half(episodes, tok):
    import torch
    import torch.nn.functional as F

    from toolscale.config import ModelSize
    from train.proxy import build_model

    model = build_model(ModelSize(name="d", hidden_size=16, num_layers=1, num_heads=2, vocab_size=len(tok),
                                  max_seq_len=256), seed=0)
    drills = _drills(episodes, tok, sequences=3)
    loss = drills.loss(model, 7)
    seqs = drills.batch(7)
    per_seq = []
    with torch.no_grad():
        for q in seqs:   # each sequence alone, no padding: an independent computation
            logits = model(input_ids=torch.tensor([q])).logits[0, :-1]
            per_seq.append(F.cross_entropy(logits, torch.tensor(q[1:]), reduction="none"))
    want = torch.cat(per_seq).mean()
    assert loss.requires_grad and float(loss.detach()) == pytest.approx(float(want), rel=1e-4)
    step, first, repeat = drills.nll[-1]
    assert step == 7
    assert first == pytest.approx(float(torch.cat([s[:LIST_TOKENS - 1] for s in per_seq]).mean()), rel=1e-4)
    assert repeat == pytest.approx(float(torch.cat([s[-LIST_TOKENS:] for s in per_seq]).mean()), rel=1e-4)
    summary = drills.summary()
    assert summary["steps_drilled"] == 1 and summary["repeat_nll"] == pytest.approx(repeat)


def test_drills_refuse_what_they_cannot_drill(episodes, tok):
    with pytest.raises(ValueError, match="sequences >= 1"):
        _drills(episodes, tok, sequences=0)
    silent = [{"messages": [_msg("user", "hi"), _msg("assistant", "Done.")], "tools": "[]", "meta": "{}"}]
    with pytest.raises(ValueError, match="nothing to drill"):
        _drills(silent, tok)
