"""The LLM tool emulator: stateful per trajectory, validated, retried, then rejected."""

from __future__ import annotations

import json

import pytest

from synth.emulator import LLMEmulator
from synth.errors import SampleRejected, ToolCallError
from synth.models import ToolDoc

DOCS = [ToolDoc(server="crm", name="find_customer", description="Find a customer by name",
                parameters={"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
                output_fields=["customer_id", "name"]),
        ToolDoc(server="crm", name="get_orders", description="Orders of a customer",
                parameters={"type": "object", "properties": {"customer_id": {"type": "string"}},
                            "required": ["customer_id"]}, output_fields=["orders"])]


def test_earlier_calls_are_in_context_and_reset_per_trajectory(scripted_chat):
    def script(role, messages, tools):
        assert role == "emulator" and tools is None
        if "find_customer(" in messages[-1]["content"].split("Call:")[-1]:
            return '{"customer_id": "CUS-1", "name": "Ada"}'
        return '```json\n{"orders": [{"order_id": "ORD-9"}]}\n```'
    client = scripted_chat(script)
    emu = LLMEmulator(client, DOCS)
    emu.begin("t1")
    assert emu.call("crm", (0, 0), "find_customer", {"name": "Ada"}) == {"customer_id": "CUS-1", "name": "Ada"}
    assert emu.call("crm", (0, 0), "get_orders", {"customer_id": "CUS-1"})["orders"][0]["order_id"] == "ORD-9"
    second_prompt = client.requests[1][1][-1]["content"]
    assert 'find_customer({"name": "Ada"}) -> {"customer_id": "CUS-1"' in second_prompt
    assert emu.call("crm", (0, 0), "find_customer", {"name": "Ada"})["customer_id"] == "CUS-1"
    assert len(client.requests) == 2  # a repeated call is answered from the trajectory's state
    emu.begin("t2")
    emu.call("crm", (0, 0), "find_customer", {"name": "Ada"})
    assert len(client.requests) == 3 and "(none)" in client.requests[2][1][-1]["content"]


def test_invalid_output_is_retried_with_the_reason_then_rejected(scripted_chat):
    replies = iter(['not json', '{"name": "Ada"}', '{"customer_id": "CUS-2", "name": "Ada"}'])
    client = scripted_chat(lambda *a: next(replies))
    emu = LLMEmulator(client, DOCS)
    assert emu.call("crm", (0, 0), "find_customer", {"name": "Ada"})["customer_id"] == "CUS-2"
    assert emu.retries == 2 and "missing output field(s) customer_id" in client.requests[2][1][-1]["content"]
    bad = scripted_chat(lambda *a: '{"name": "x"}')
    with pytest.raises(SampleRejected) as err:
        LLMEmulator(bad, DOCS, tries=2).call("crm", (0, 0), "find_customer", {"name": "Bo"})
    assert err.value.reason == "emulator:invalid_output" and len(bad.requests) == 2


def test_arguments_checked_before_any_request(scripted_chat):
    client = scripted_chat(lambda *a: json.dumps({"orders": []}))
    emu = LLMEmulator(client, DOCS)
    with pytest.raises(ToolCallError, match="missing required argument 'customer_id'"):
        emu.call("crm", (0, 0), "get_orders", {})
    with pytest.raises(ToolCallError, match="unknown tool 'nope'"):
        emu.call("crm", (0, 0), "nope", {})
    assert client.requests == []
