"""eval/diagnostics.py: bits per byte by span type, on seen and unseen tools, and the two baselines."""

from __future__ import annotations

import math

import pytest

from eval.diagnostics import Diagnostics, char_classes, diagnostic_metrics, token_classes, unigram_logprobs
from eval.models import BenchmarkInfo, CallItem, ContinuationScore

REF = '<tool_call>{"name": "get_order", "arguments": {"order_id": "O-17", "qty": 3}}</tool_call><|im_end|>'


def _spans(text: str, labels: list[str], label: str) -> list[str]:
    out, cur = [], ""
    for ch, lb in zip(text, labels):
        if lb == label:
            cur += ch
        elif cur:
            out.append(cur)
            cur = ""
    return out + ([cur] if cur else [])


def test_every_character_of_a_reference_call_gets_its_span_type():
    labels = char_classes(REF, prompt="Please get order O-17 for me.")
    assert _spans(REF, labels, "tool") == ["get_order"]
    assert _spans(REF, labels, "arg_copied") == ["O-17"]  # named in the request: a copy
    assert _spans(REF, labels, "arg_other") == ["3"]  # not in the request
    assert "".join(_spans(REF, labels, "json")).startswith('<tool_call>{"name": "')
    assert "<|im_end|>" in "".join(_spans(REF, labels, "json")) and "text" not in labels
    two = REF[:-len("<|im_end|>")] * 2 + "ok"
    labels = char_classes(two, prompt="")
    assert _spans(two, labels, "tool") == ["get_order", "get_order"] and _spans(two, labels, "text") == ["ok"]


def _decode(ids):  # a character-level "tokenizer": id = code point
    return "".join(chr(i) for i in ids)


def test_token_classes_share_each_tokens_bytes_among_its_characters_classes():
    ids = [ord(c) for c in REF]
    per = token_classes(ids, _decode, "O-17")
    assert len(per) == len(REF) and all(sum(c.values()) == 1 for c in per)
    assert token_classes([1, 2], lambda ids: "x" if len(ids) == 1 else "yz") is None  # no piecewise decoding


def test_diagnostic_metrics_split_bits_by_span_seen_tools_and_give_the_baselines():
    info = BenchmarkInfo(name="b", version="1", description="d", loader="m:f")
    seen = CallItem(id="a", category="multiple", source="shop", messages=[{"role": "user", "content": "order O-17"}],
                    functions=[], ground_truth=[{"get_order": {"order_id": ["O-17"]}}])
    unseen = seen.model_copy(update={"id": "b", "source": "hr"})
    ids = [ord(c) for c in REF]
    # 1 bit on every tool-name character, 0 elsewhere; the unseen item twice that
    lp = [-math.log(2) if lb == "tool" else 0.0 for lb in char_classes(REF, "order O-17")]
    scores = [ContinuationScore(logprob=sum(lp), n_tokens=len(ids), token_ids=ids, token_logprobs=lp),
              ContinuationScore(logprob=2 * sum(lp), n_tokens=len(ids), token_ids=ids,
                                token_logprobs=[2 * v for v in lp])]
    counts = [0] * 200
    for i in ids:
        counts[i] += 1
    diag = Diagnostics(seen_tools=frozenset({"shop.get_order"}), unigram=unigram_logprobs(counts), vocab_size=200)
    rows = {r.metric: r.score for r in diagnostic_metrics(info, [seen, unseen], scores, _decode, diag)}
    assert rows["bpb_tool"] == pytest.approx(1.5) and rows["bpb_json"] == 0.0 and rows["bpb_arg_copied"] == 0.0
    n = len(REF)
    assert rows["bpb_seen"] == pytest.approx(9 / n) and rows["bpb_unseen"] == pytest.approx(18 / n)
    assert rows["seen_share"] == 0.5
    assert rows["bpb_uniform"] == pytest.approx(math.log2(200))  # one byte per token here
    assert 0 < rows["bpb_unigram"] < rows["bpb_uniform"]  # the run's own token frequencies beat uniform
