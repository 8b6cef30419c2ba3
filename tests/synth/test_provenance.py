"""The cheap provenance check on hand-made conversations."""

from __future__ import annotations

import json

from synth.provenance import provenance
from synth.rollout import message


def _call(cid, name, **args):
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def _conv(second_args: dict) -> list[dict]:
    return [message("system", "s"), message("user", "Find flights from Oslo to Lima and book one for Ana Costa."),
            message("assistant", "", [_call("call_1", "search_flights", origin="Oslo", destination="Lima")]),
            message("tool", json.dumps({"flights": [{"flight_id": "FL-1234"}], "count": 1}), tool_call_id="call_1",
                    name="search_flights"),
            message("assistant", "", [_call("call_2", "book_flight", **second_args)]),
            message("tool", "{}", tool_call_id="call_2", name="book_flight"),
            message("assistant", "done")]


def test_copied_argument_is_derivable():
    p = provenance(_conv({"flight_id": "FL-1234", "passenger": "Ana Costa"}))
    assert [a.derivable for a in p] == [True, True]
    assert p[1].hops == 1 and p[0].hops == 0


def test_invented_constant_is_not_derivable():
    p = provenance(_conv({"flight_id": "FL-9999", "passenger": "Ana Costa"}))
    assert p[1].derivable is False and p[1].missing == ("flight_id",)


def test_numbers_match_whole_tokens_only():
    conv = _conv({"flight_id": "FL-1234", "passenger": "Ana Costa", "bags": 23})
    assert provenance(conv)[1].derivable is False  # "23" inside "FL-1234" does not count
