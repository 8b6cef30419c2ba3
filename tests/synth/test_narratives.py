"""The mid-training corpus: documents state only what happened, and all four gates hold for every kind."""

import json
from collections import Counter

import pytest

from synth.dataset import build_dataset
from synth.errors import RecipeError
from synth.models import Recipe
from synth.narratives import (MAX_DOCS_PER_SIGNATURE, Document, NarrativeSource, executed_flows, rule_coherence,
                              trajectory_narrative)
from synth.rollout import CallRecord, Trace, message

FLOW = "the {} from {} became the {} of {}"


def _fields(content: str) -> list[tuple[str, object]]:
    out = json.loads(content)
    pairs = []
    for k, v in out.items():
        if isinstance(v, list):
            pairs += [(f, x) for item in v if isinstance(item, dict) for f, x in item.items()]
        elif not isinstance(v, dict):
            pairs.append((k, v))
    return pairs


def _edges_from_messages(messages: list[dict]) -> set[tuple[str, str, str, str]]:
    """Provenance edges ``(field, src_tool, param, dst_tool)`` computed from the stored conversation alone:
    a successful call's argument equals a field of an earlier successful tool result."""
    results = {m["tool_call_id"]: m for m in messages if m["role"] == "tool"}
    seen: list[tuple[str, str]] = []  # (tool, content) of earlier successful results
    edges = set()
    for m in messages:
        if m["role"] == "tool" and not m["content"].startswith('{"error"'):
            seen.append((m["name"], m["content"]))
        for c in (m.get("tool_calls") or []) if m["role"] == "assistant" else []:
            res = results.get(c["id"])
            if res is None or res["content"].startswith('{"error"'):
                continue
            for param, v in json.loads(c["function"]["arguments"]).items():
                for tool, content in seen:
                    edges |= {(f, tool, param, c["function"]["name"]) for f, x in _fields(content)
                              if x == v and type(x) is type(v)}
    return edges


@pytest.mark.parametrize("seed,kw", [(0, {}), (1, {"error_rate": 0.5}), (2, {"max_chain_len": 6, "defect_rate": 0.1}),
                                     (3, {"support_depth": 4, "coverage_quota": 0.2})])
def test_every_named_flow_is_an_executed_edge(tmp_path, seed, kw):
    """Property over ~200 trajectories: each flow a narrative names is an edge between executed calls."""
    build_dataset(Recipe(task_count=48, tool_diversity=24, narratives=True, seed=seed, **kw), tmp_path)
    rows = {json.loads(r["meta"])["task_id"]: r for r in map(json.loads, (tmp_path / "train.jsonl").open())}
    docs = [json.loads(x) for x in (tmp_path / "narratives.jsonl").read_text().splitlines()]
    narratives = [d for d in docs if d["kind"] == "trajectory"]
    assert narratives
    named = 0
    for d in narratives:
        messages = rows[f"t{d['task_index']:06d}"]["messages"]
        edges = _edges_from_messages(messages)
        called = [c["function"]["name"] for m in messages if m["role"] == "assistant" for c in m["tool_calls"] or []]
        for flow in _flows_in(d["text"]):
            named += 1
            assert flow in edges, (flow, d["text"])
            assert flow[1] in called and flow[3] in called
    assert named > 0


def _flows_in(text: str):
    import re
    return re.findall(r"the (\w+) from (\w+) became the (\w+) of (\w+)", text)


def _rec(i, tool, args, ok, output=None, error=None):
    return CallRecord(f"call_{i}", tool, args, ok, output, error, i, False)


def _trace(records, query="find tickets"):
    msgs = [message("system", "s"), message("user", query)]
    for r in records:
        msgs.append(message("assistant", "", tool_calls=[{"id": r.id, "type": "function", "function": {
            "name": r.tool, "arguments": json.dumps(r.args)}}]))
        msgs.append(message("tool", json.dumps(r.output) if r.ok else '{"error": "timeout"}', tool_call_id=r.id,
                            name=r.tool))
    msgs.append(message("assistant", "done"))
    return Trace(messages=msgs, records=records)


def test_a_call_that_never_succeeded_gets_no_flow():
    """The old bug: a flow into ``close_ticket`` was told although close_ticket never ran."""
    t = _trace([_rec(1, "find_ticket", {"q": "x"}, True, {"ticket_id": "T-9"}),
                _rec(2, "close_ticket", {"ticket_id": "T-9"}, False, error="timeout")])
    assert executed_flows(t) == []
    assert "became" not in trajectory_narrative("desk", "find tickets", t)
    t_ok = _trace(t.records + [_rec(3, "close_ticket", {"ticket_id": "T-9"}, True, {"closed": True})])
    assert [(f.field, f.src_tool, f.param, f.dst_tool) for f in executed_flows(t_ok)] == [
        ("ticket_id", "find_ticket", "ticket_id", "close_ticket")]


def test_values_from_the_request_have_no_source_call():
    t = _trace([_rec(1, "find_ticket", {"q": "T-9"}, True, {"ticket_id": "T-9"}),
                _rec(2, "close_ticket", {"ticket_id": "T-9"}, True, {"closed": True})], query="close T-9")
    assert executed_flows(t) == []


def test_rule_coherence_catches_invented_flows_and_order():
    t = _trace([_rec(1, "find_ticket", {"q": "x"}, True, {"ticket_id": "T-9"}),
                _rec(2, "close_ticket", {"ticket_id": "T-9"}, True, {"closed": True})])
    src = NarrativeSource(0, "desk", "find tickets", t, True, 0.9)
    good = trajectory_narrative("desk", "find tickets", t)
    assert rule_coherence(Document("trajectory", "desk", "s", good), src, None) == 5
    invented = good + " Also " + FLOW.format("owner", "find_ticket", "user", "close_ticket") + "."
    assert rule_coherence(Document("trajectory", "desk", "s", invented), src, None) == 1  # not executed, unrelated
    coincidence = good + " Also " + FLOW.format("ticket_id", "find_ticket", "ticket_id", "close_ticket") + "."
    assert rule_coherence(Document("trajectory", "desk", "s", coincidence), src, None) == 5
    swapped = good.replace("Calling find_ticket(", "Calling tmp(").replace("Calling close_ticket(", "Calling find_ticket(")
    swapped = swapped.replace("Calling tmp(", "Calling close_ticket(")
    assert rule_coherence(Document("trajectory", "desk", "s", swapped), src, None) <= 3
    unknown = good + " " + FLOW.format("x", "ghost_tool", "y", "other_tool")
    assert rule_coherence(Document("trajectory", "desk", "s", unknown), src, None) == 1


def test_gates_for_every_kind_with_counts_in_the_manifest(tmp_path):
    m = build_dataset(Recipe(task_count=96, tool_diversity=12, narratives=True, error_rate=0.4), tmp_path)
    docs = [json.loads(x) for x in (tmp_path / "narratives.jsonl").read_text().splitlines()]
    kept = Counter(d["kind"] for d in docs)
    assert m.corpus is not None and m.corpus.documents == dict(sorted(kept.items()))
    # signature dedup across all kinds
    assert max(Counter(d["signature"] for d in docs).values()) <= MAX_DOCS_PER_SIGNATURE
    assert m.corpus.rejected.get("trajectory:signature_cap", 0) + m.corpus.rejected.get("failure:signature_cap", 0) > 0
    # failure write-ups only from calls that really failed, in kept trajectories
    rows = {json.loads(r["meta"])["task_id"]: r for r in map(json.loads, (tmp_path / "train.jsonl").open())}
    for d in docs:
        if d["kind"] == "failure":
            messages = rows[f"t{d['task_index']:06d}"]["messages"]
            failed = {m["name"] for m in messages if m["role"] == "tool" and m["content"].startswith('{"error"')}
            for tool in __import__("re").findall(r"^## .* in (\w+)$", d["text"], __import__("re").M):
                assert tool in failed
    assert m.corpus.approx_tokens > 0
    corpus = [json.loads(x) for x in (tmp_path / "corpus.jsonl").read_text().splitlines()]
    assert [c["text"] for c in corpus] == [d["text"] for d in docs] and all(set(c) == {"text"} for c in corpus)
    assert m.files["corpus.jsonl"]


def test_judge_gate(tmp_path):
    m = build_dataset(Recipe(task_count=32, tool_diversity=10, narratives=True, narrative_min_judge=0.95), tmp_path)
    rows = {json.loads(r["meta"])["task_id"]: json.loads(r["meta"]) for r in map(json.loads, (tmp_path / "train.jsonl").open())}
    docs = [json.loads(x) for x in (tmp_path / "narratives.jsonl").read_text().splitlines()]
    assert m.corpus.rejected.get("trajectory:judge_below_threshold", 0) > 0
    for d in docs:
        if d["task_index"] is not None:
            assert rows[f"t{d['task_index']:06d}"]["judge"]["mean"] >= 0.95


def test_rejected_or_unjudged_trajectories_give_no_documents():
    from synth.narratives import narrative_documents
    t = _trace([_rec(1, "find_ticket", {"q": "x"}, True, {"ticket_id": "T-9"}),
                _rec(2, "close_ticket", {"ticket_id": "T-9"}, False, error="timeout")], query="find x")
    sources = [NarrativeSource(0, "desk", "q", t, False, 0.9), NarrativeSource(1, "desk", "q", t, True, None)]
    docs, report = narrative_documents({}, {}, sources)
    assert docs == []
    assert report.rejected == {"failure:judge_below_threshold": 1, "failure:not_executed": 1,
                               "trajectory:judge_below_threshold": 1, "trajectory:not_executed": 1}
    docs, report = narrative_documents({}, {}, [NarrativeSource(2, "desk", "q", t, True, 0.9)],
                                       coherence=lambda d, s, sp: None)
    assert docs == [] and report.rejected == {"failure:incoherent": 1, "trajectory:incoherent": 1}


def test_corpus_loads_with_datasets(tmp_path):
    import datasets
    build_dataset(Recipe(task_count=16, tool_diversity=8, narratives=True), tmp_path)
    ds = datasets.load_dataset("json", data_files=str(tmp_path / "corpus.jsonl"), split="train")
    assert ds.column_names == ["text"] and len(ds) > 0


@pytest.mark.parametrize("value", [0, 6])
def test_coherence_threshold_outside_1_to_5(value):
    with pytest.raises(RecipeError, match="narrative_min_coherence"):
        Recipe.from_axes({}, narratives=True, narrative_min_coherence=value)


class _Reply:
    def __init__(self, content):
        self.content = content


class _Client:
    """A chat client that answers from a script (fault cases of the LLM coherence gate)."""

    def __init__(self, *answers):
        self.answers, self.prompts = list(answers), []

    def chat(self, role, messages, tools=None):
        self.prompts.append((role, messages[-1]["content"]))
        a = self.answers.pop(0)
        if isinstance(a, Exception):
            raise a
        return _Reply(a)


def test_llm_coherence_scores_and_fails_closed():
    from synth.narratives import LLMCoherence, narrative_documents

    t = _trace([_rec(1, "find_ticket", {"q": "x"}, True, {"ticket_id": "T-9"}),
                _rec(2, "close_ticket", {"ticket_id": "T-9"}, True, {"closed": True})], query="find x")
    src = [NarrativeSource(0, "desk", "find x", t, True, 0.9)]
    ok = LLMCoherence(_Client('{"score": 5}'))
    docs, report = narrative_documents({}, {}, src, coherence=ok)
    assert [d.kind for d in docs] == ["trajectory"] and report.rejected == {}
    role, prompt = ok.client.prompts[0]
    assert role == "judge" and "close_ticket" in prompt and docs[0].text in prompt
    for answer in ("looks fine to me", '{"score": 3}', ConnectionError("down")):
        judge = LLMCoherence(_Client(answer))
        docs, report = narrative_documents({}, {}, src, coherence=judge)
        assert docs == [] and report.rejected == {"trajectory:incoherent": 1}
    assert judge.failures == 1


def test_a_rule_coherence_check_fails_real_template_documents_and_gates_are_counted():
    """On a real synthesis with emulated tools (where errors are injected) the rule gate drops documents
    (unresolved stories: a step abandoned after its retries), every gate reports what passed and failed,
    and failure write-ups stay within their cap."""
    from synth.dataset import synthesize
    from synth.models import Recipe, ToolDoc

    def doc(name, req, desc):
        return ToolDoc(server="crm", name=name, description=desc, parameters={
            "type": "object", "properties": {p: {"type": "string"} for p in req}, "required": req})
    crm = [doc("find_customer", ["name"], "Find a customer by name"),
           doc("get_customer", ["customer_id"], "The customer record of a customer id"),
           doc("list_orders", ["customer_id"], "The orders of a customer id")]
    m = synthesize(Recipe(task_count=120, tool_diversity=3, narratives=True, defect_rate=0.0, error_rate=0.6,
                          seed=3, domains=("travel",)), extra_docs=crm).manifest
    c = m.corpus
    assert set(c.gates) == {"executed", "judge", "derivable", "coherence", "signature_cap", "near_duplicate",
                            "failure_cap"}
    assert sum(v for k, v in c.rejected.items() if k.endswith(":incoherent")) == c.gates["coherence"]["failed"]
    assert c.gates["coherence"]["failed"] > 0  # the rule gate can fail a template document
    assert c.documents.get("failure", 0) <= 0.2 * sum(c.documents.values())


def test_near_duplicates_differ_only_in_ids_and_numbers_and_the_failure_cap_keeps_the_share():
    """Content dedup (issue 31, item 7): masked 5-gram shingles make a retelling with other ids and amounts a
    near-duplicate of a kept document of its kind, while another story is kept; the failure cap drops the
    latest write-ups until they are at most the share."""
    from synth.narratives import FAILURE_SHARE, _cap_failures, _near_duplicate, shingles

    a = ("The agent looked up order ORD-1042 for the customer, found it shipped with DHL on 2024-03-02, "
         "and told the customer the total of 42.50 dollars before closing the ticket.")
    b = a.replace("ORD-1042", "ORD-7731").replace("2024-03-02", "2025-11-19").replace("42.50", "17.05")
    c = ("The agent searched flights from Oslo to Rome, booked the cheapest fare, and sent the itinerary "
         "to the traveller with the seat numbers and the baggage allowance.")
    assert shingles(a) == shingles(b) and len(shingles(a) & shingles(c)) == 0
    seen: dict = {}
    doc = lambda kind, text: Document(kind, "shop", "s", text)  # noqa: E731
    assert not _near_duplicate(doc("trajectory", a), seen)
    assert _near_duplicate(doc("trajectory", b), seen)  # the same story with other ids
    assert not _near_duplicate(doc("trajectory", c), seen)
    assert not _near_duplicate(doc("failure", b), seen)  # compared within its kind only
    kept = [doc("trajectory", f"t{i}") for i in range(8)] + [doc("failure", f"f{i}") for i in range(5)]
    rejected, counts = Counter(), Counter()
    out = _cap_failures(kept, FAILURE_SHARE, rejected, counts)
    failures = [d for d in out if d.kind == "failure"]
    assert [d.text for d in failures] == ["f0", "f1"]  # 2 / 10 = 20%: the latest write-ups go
    assert rejected == {"failure:failure_cap": 3} and counts == {"passed": 10, "failed": 3}
