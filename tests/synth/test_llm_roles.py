"""Roles from the configured LLM roles, and a whole synthesis through them (scripted endpoint)."""

from __future__ import annotations

import json
import re

import pytest

from synth.dataset import synthesize
from synth.llm_roles import llm_roles
from synth.models import Recipe, ToolDoc
from synth.writer import TASK_GATES

DOCS = [ToolDoc(server="crm", name="find_customer", description="Find a customer by name",
                parameters={"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
        ToolDoc(server="crm", name="get_customer", description="The customer record of a customer id",
                parameters={"type": "object", "properties": {"customer_id": {"type": "string"}},
                            "required": ["customer_id"]}),
        ToolDoc(server="crm", name="list_segments", description="All customer segments",
                parameters={"type": "object", "properties": {}})]


def _everyone(scripted_chat, policy=None):
    def script(role, messages, tools):
        text = messages[-1]["content"] if messages[-1]["role"] != "tool" else ""
        if role == "task_writer":
            if any(r in text for r in TASK_GATES.values()) or "coherent task" in text:
                return '{"score": 4}'
            if text.startswith("Request: "):
                return text.split("\n")[0][len("Request: "):]
            return re.search(r"Draft: (.*)\n", text).group(1)
        if role == "emulator":
            call = text.split("Call: ")[-1]
            fields = re.search(r"Output fields: (.*)\n", text).group(1).split(", ")
            return json.dumps({f: f"{f.upper()}-77" for f in fields if f != "whatever the tool returns"} or
                              {"result": call})
        if role == "judge":
            return '{"score": 5}'
        return policy(messages, tools)
    return scripted_chat(script)


def test_unknown_role_refused(scripted_chat):
    with pytest.raises(ValueError, match="unknown LLM role 'critic'"):
        llm_roles(scripted_chat(lambda *a: ""), ["critic"])


def test_template_policy_with_llm_writer_emulator_judge(scripted_chat):
    client = _everyone(scripted_chat)
    roles = llm_roles(client, ["task_writer", "emulator", "judge"])
    r = synthesize(Recipe(task_count=16, tool_diversity=46, seed=2, error_rate=0.0), extra_docs=DOCS, roles=roles)
    m = r.manifest
    assert m.roles == {"task_writer": "llm", "policy": "template", "emulator": "llm", "judge": "llm"}
    assert m.counts["accepted"] > 0 and m.judge_failure_rate == 0.0 and m.judge_fallback_rate == 0.0
    assert {q[0] for q in client.requests} == {"task_writer", "emulator", "judge"}
    checks = [q for q in client.requests if "coherent task" in q[1][-1]["content"]]
    assert checks and m.role_stats["chain_check"]["requests"] == len(checks)  # ASTRA's chain check, per chain
    crm = [json.loads(row) for row in r.rows if json.loads(json.loads(row)["meta"])["server"] == "crm"]
    assert crm, "the document-only server got no accepted task"
    outs = [m2["content"] for row in crm for m2 in row["messages"] if m2["role"] == "tool"]
    assert any("-77" in o for o in outs)  # the emulator's outputs, not the hash emulator's


def test_llm_policy_failures_are_counted_never_kept(scripted_chat):
    def policy(messages, tools):
        name = tools[0]["function"]["name"]
        return scripted_chat.Reply("", [scripted_chat.Call("a", name, '{"x": ')], "tool_calls")
    roles = llm_roles(_everyone(scripted_chat, policy), ["policy", "judge"])
    m = synthesize(Recipe(task_count=12, tool_diversity=8, seed=1), roles=roles).manifest
    assert m.counts["accepted"] == 0 and m.rejections == {"policy:bad_arguments": m.counts["tasks_planned"]}
    assert m.roles["policy"] == "llm" and m.roles["task_writer"] == "template"


def test_servers_roll_out_in_parallel_with_the_same_bytes(scripted_chat, monkeypatch):
    import threading

    import synth.dataset as ds

    threads = set()

    def run(parallel):
        monkeypatch.setattr(ds, "MAX_SERVER_THREADS", 8 if parallel else 1)
        client = _everyone(scripted_chat)
        inner = client.script
        client.script = lambda *a: (threads.add(threading.current_thread().name), inner(*a))[1]
        roles = llm_roles(client, ["task_writer", "emulator", "judge"])
        return synthesize(Recipe(task_count=24, tool_diversity=46, seed=2, error_rate=0.1), extra_docs=DOCS,
                          roles=roles)

    seq = run(False)
    assert not any(t.startswith("synth-server") for t in threads)
    par = run(True)
    assert sum(t.startswith("synth-server") for t in threads) > 2 and len(par.manifest.servers) > 2
    assert par.rows == seq.rows and par.rejected == seq.rejected
    assert par.manifest.model_dump(exclude={"llm"}) == seq.manifest.model_dump(exclude={"llm"})
