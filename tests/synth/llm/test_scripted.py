"""Every fault of a scripted endpoint, through a whole synthesis with the LLM policy: each task ends as a
retry (then judged), a rejection counted under its reason (kept in rejected.jsonl), or the run fails cleanly
naming the URL with nothing written. No faulty reply is ever silently kept. The scripted answer calls no
tool, so a task that survives the faults is rejected by the judge's ``no_tool_call`` rule: never kept."""

from __future__ import annotations

import json
import time

import pytest

from synth.dataset import build_dataset
from synth.errors import LLMEndpointError
from synth.llm.scripted import ScriptedEndpoint, hang, raw, reply, status, tool_call
from synth.models import RejectedRow, Recipe

FINAL = "Done: here is what I found."

# kind -> (what the endpoint does on the task's k-th request, how the task must end)
KINDS: dict[str, str] = {
    "ok": "rule:no_tool_call",
    "429_once": "rule:no_tool_call",
    "500_once": "rule:no_tool_call",
    "timeout_once": "rule:no_tool_call",
    "malformed_once": "rule:no_tool_call",
    "malformed_always": "policy:malformed_reply",
    "http_400": "policy:http_400",
    "truncated": "policy:truncated",
    "bad_json_arguments": "policy:bad_arguments",
    "unknown_tool": "policy:unknown_tool",
    "schema_violation": "policy:schema_violation",
}


class FaultScript:
    """Gives each new task (by its user query) the next fault kind, round-robin; answers accordingly."""

    def __init__(self):
        self.kind_of: dict[str, str] = {}
        self.seen: dict[str, int] = {}

    def __call__(self, n: int, body: dict):
        query = next(m["content"] for m in body["messages"] if m["role"] == "user")
        kind = self.kind_of.setdefault(query, list(KINDS)[len(self.kind_of) % len(KINDS)])
        k = self.seen[query] = self.seen.get(query, 0) + 1
        first = k == 1
        tools = [t["function"] for t in body.get("tools", [])]
        needy = next((t for t in tools if t["parameters"].get("required")), tools[0])
        if kind == "429_once" and first:
            return status(429, retry_after=0.01)
        if kind == "500_once" and first:
            return status(500)
        if kind == "timeout_once" and first:
            return hang(3)
        if kind == "malformed_once" and first:
            return raw("{\"choices\": [")
        if kind == "malformed_always":
            return raw("<html>bad gateway</html>")
        if kind == "http_400":
            return status(400, message="context length exceeded")
        if kind == "truncated":
            return reply("", [tool_call(needy["name"], '{"' + needy["parameters"]["required"][0] + '": "x')],
                         finish_reason="length")
        if kind == "bad_json_arguments":
            return reply("", [tool_call(needy["name"], "{not json")])
        if kind == "unknown_tool":
            return reply("", [tool_call("no_such_tool", {})])
        if kind == "schema_violation":
            return reply("", [tool_call(needy["name"], {})])  # a required argument missing
        return reply(FINAL)


def _recipe(url: str, **llm) -> Recipe:
    policy = {"base_url": url, "model": "scripted", "timeout_s": 0.5, "max_tries": 3, "price_in": 1.0, **llm}
    return Recipe(task_count=44, tool_diversity=8, seed=5, error_rate=0.0, judge_threshold=0.0,
                  llm={"policy": policy})


@pytest.mark.integration
def test_each_fault_ends_as_a_retry_or_a_counted_rejection(tmp_path):
    """Every scripted fault (timeouts, bad JSON, 5xx...) ends as a retry or a counted rejection. About 10 s: the
    timeout faults wait out the client's real (shortened) timeouts."""
    script = FaultScript()
    with ScriptedEndpoint(script) as ep:
        m = build_dataset(_recipe(ep.url), tmp_path / "d", llm_cache=tmp_path / "cache")
    kept = [json.loads(x) for x in (tmp_path / "d" / "train.jsonl").read_text().splitlines()]
    rejected = [RejectedRow.model_validate_json(x) for x in (tmp_path / "d" / "rejected.jsonl").read_text().splitlines()]
    ended: dict[str, str] = {}
    for row in kept:
        query = next(msg["content"] for msg in row["messages"] if msg["role"] == "user")
        ended[query] = "kept"
        assert row["messages"][-1]["content"] == FINAL
    by_task = {r.task_id: r for r in rejected}
    assert len(by_task) == len(rejected) == m.counts["rejected"]
    assert all((r.stage == "rollout" and r.detail or r.stage == "judge" and r.messages) and r.query
               for r in rejected)
    # every task the policy saw ended as its kind requires; nothing was kept
    counts = {kind: sum(1 for q, k in script.kind_of.items() if k == kind) for kind in KINDS}
    assert all(counts[k] >= 2 for k in KINDS), counts
    assert m.counts["accepted"] == len(kept) == 0 and not ended
    for end in set(KINDS.values()):
        assert m.rejections.get(end) == sum(counts[k] for k, e in KINDS.items() if e == end), (end, m.rejections)
    u = m.llm["policy"]
    # one retry per *_once task, two per malformed_always task (three tries)
    assert u.retries == sum(counts[k] for k in ("429_once", "500_once", "timeout_once", "malformed_once")) \
        + 2 * counts["malformed_always"]
    assert u.failures == counts["malformed_always"] + counts["http_400"]
    assert m.roles["policy"] == "llm"


@pytest.mark.integration
def test_an_endpoint_that_keeps_failing_fails_the_run_naming_the_url_and_writes_nothing(tmp_path):
    for then in (status(503), hang(3)):
        with ScriptedEndpoint([reply(FINAL)] * 3, then=then) as ep:  # serves three requests, then fails
            t = time.perf_counter()
            with pytest.raises(LLMEndpointError, match=rf"{ep.url}/chat/completions \(role policy\)"):
                build_dataset(_recipe(ep.url, timeout_s=0.3, max_tries=2), tmp_path / "d",
                              llm_cache=tmp_path / "cache")
            assert time.perf_counter() - t < 10
        assert not (tmp_path / "d").exists()
