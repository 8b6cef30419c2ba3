"""synth/answers.py: the scripted final answer states every field the request asks for, in the asked language
and length, and admits what failed (issue 31, item 5). Checked with the judge's own readings (synth/rules.py)."""

from __future__ import annotations

import random

import pytest

from synth.answers import final_answer
from synth.rules import SHORT_WORDS, answer_language, requested_fields

ORDER = {"order_id": "ORD-1042", "status": "shipped", "total": "42.50", "carrier": "DHL"}
PHRASE = {"refund_order": "refund the order"}


@pytest.mark.parametrize("seed", range(8))
def test_every_requested_field_is_stated_whatever_the_frame(seed):
    query = "What is the status and the carrier of order ORD-1042?"
    assert set(requested_fields(query, [ORDER])) == {"status", "carrier"}  # the request names two fields
    text = final_answer(query, [("get_order", ORDER)], [], PHRASE, random.Random(seed))
    assert "shipped" in text and "DHL" in text
    assert not text.startswith("Here is what I found:")  # the old fixed opener


def test_a_short_answer_keeps_its_words_and_the_admission_of_what_failed():
    query = "Check order ORD-1042 and refund it; keep it short."
    big = {f"note_{i}": f"value number {i} of a long record" for i in range(20)}
    text = final_answer(query, [("get_order", {**ORDER, **big})], [("refund_order", "timeout")], PHRASE,
                        random.Random(0))
    assert len(text.split()) <= SHORT_WORDS
    assert "refund the order" in text and "timed out" in text
    long = final_answer("Check order ORD-1042 and refund it.", [("get_order", {**ORDER, **big})],
                        [("refund_order", "timeout")], PHRASE, random.Random(0))
    assert len(long.split()) > len(text.split())  # without the constraint the facts are not cut


@pytest.mark.parametrize("language", ["French", "Spanish", "German"])
def test_an_answer_asked_in_another_language_is_in_it(language):
    query = f"What is the status of order ORD-1042? Please answer in {language}."
    text = final_answer(query, [("get_order", ORDER)], [], PHRASE, random.Random(1))
    assert "shipped" in text and answer_language(text) == language


def test_nothing_done_and_nothing_failed_says_so():
    assert final_answer("What is the status of order ORD-1042?", [], [], PHRASE, random.Random(0)) == \
        "I could not get any results."
