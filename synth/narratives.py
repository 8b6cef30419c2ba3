"""Mid-training documents (seed 001): tool-ecosystem docs, trajectory narratives, failure write-ups.

Three kinds of plain-text documents, written as ``narratives.jsonl`` (one ``{"kind", "server", "signature",
"task_index", "text"}`` object per line) and as the continued-pretraining corpus ``corpus.jsonl`` (one ``{"text"}`` per line):

``ecosystem``
    per server: its tool signatures (arguments and outputs), the argument flows of its transition graph
    ("the ``flight_id`` returned by ``search_flights`` can be passed as ``flight_id`` to ``book_flight``")
    and up to :data:`TYPICAL_CHAINS` typical chains;
``trajectory``
    per kept trajectory: the executed calls retold as prose, naming only the value flows that happened
    (:func:`executed_flows`);
``failure``
    per kept trajectory with a call that really failed: what went wrong and the correct move.

Every document passes four gates (seed 001), counted by reason in :class:`~synth.models.CorpusReport`:

1. **execution** (``not_executed``): trajectory and failure documents come only from executed,
   non-rejected trajectories whose actions are all derivable (``not_derivable``); failure write-ups only
   from calls that really failed; an ecosystem document only for a server with a successful call;
2. **judge** (``judge_below_threshold``): the trajectory's mean seven-dimension judge score >=
   ``Recipe.narrative_min_judge`` (0.7); an ecosystem document uses the mean over its server's kept
   trajectories;
3. **coherence** (``incoherent``): a score >= ``Recipe.narrative_min_coherence`` (4 of 5) from a
   :class:`CoherenceScorer`: :class:`LLMCoherence` when an LLM judge is configured, else the rule-based
   :func:`rule_coherence`. A scorer that fails drops the document (fail closed);
4. **signature dedup** (``signature_cap``): at most :data:`MAX_DOCS_PER_SIGNATURE` documents per tool-chain
   signature, across all kinds, in document order.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Protocol

from synth.models import CorpusReport
from synth.plans import Chain, ServerSpec
from synth.provenance import provenance, value_in
from synth.rollout import CallRecord, Trace

__all__ = ["MAX_DOCS_PER_SIGNATURE", "TYPICAL_CHAINS", "Flow", "NarrativeSource", "Document", "CoherenceScorer",
           "executed_flows", "chain_signature", "ecosystem_doc", "trajectory_narrative", "failure_writeup",
           "rule_coherence", "LLMCoherence", "narrative_documents"]

MAX_DOCS_PER_SIGNATURE = 3
"""Documents allowed per tool-chain signature, across all kinds (seed 001's dedup)."""

TYPICAL_CHAINS = 3
"""Distinct multi-step chains listed in an ecosystem document."""

_FLOW_RE = re.compile(r"the (\w+) from (\w+) became the (\w+) of (\w+)")
_CALL_RE = re.compile(r"Calling (\w+)\(")
_EDGE_RE = re.compile(r"- the (\w+) returned by (\w+) can be passed as (\w+) to (\w+)")
_TOOL_RE = re.compile(r"^- (\w+)\(", re.M)
_FAIL_RE = re.compile(r"^## .* in (\w+)$", re.M)


@dataclass(frozen=True)
class Flow:
    """One provenance edge between two executed calls: ``src`` output ``field`` became ``dst``'s ``param``."""

    src_call: str
    src_tool: str
    field: str
    dst_call: str
    dst_tool: str
    param: str

    def sentence(self) -> str:
        return f"the {self.field} from {self.src_tool} became the {self.param} of {self.dst_tool}"


@dataclass(frozen=True)
class NarrativeSource:
    """What the corpus needs from one synthesised task."""

    task_index: int
    server: str
    query: str
    trace: Trace
    accepted: bool
    """Whether the trajectory was kept in ``train.jsonl`` (passed the judge and every check)."""
    judge_mean: float | None
    """Mean seven-dimension judge score, None if it was never judged."""
    reason: str | None = None
    """Why it was not kept (``judge_failed``, ``judge_rejected``, ``filtered``); None when kept."""


@dataclass(frozen=True)
class Document:
    """One corpus document with the facts its gates are checked against."""

    kind: str
    server: str
    signature: str
    text: str
    task_index: int | None = None
    """Index of the task it retells (``meta.task_id`` is ``t`` plus six digits of it); None for ecosystem docs."""

    def json_line(self) -> str:
        return json.dumps({"kind": self.kind, "server": self.server, "signature": self.signature,
                           "task_index": self.task_index, "text": self.text}, ensure_ascii=False)


class CoherenceScorer(Protocol):
    """Scores a document's coherence from 1 (incoherent) to 5, or None when it could not score (fail closed)."""

    def __call__(self, doc: Document, source: NarrativeSource | None, spec: ServerSpec | None) -> int | None: ...


def _fields(output: Any) -> list[tuple[str, Any]]:
    """``(field, value)`` pairs of a tool output: top-level scalars and the fields of items of its lists."""
    if not isinstance(output, dict):
        return []
    pairs = []
    for k, v in output.items():
        if isinstance(v, list):
            pairs += [(f, x) for item in v if isinstance(item, dict) for f, x in item.items()]
        elif not isinstance(v, dict):
            pairs.append((k, v))
    return pairs


def executed_flows(trace: Trace) -> list[Flow]:
    """The value flows of a conversation, read from what was executed (never from the plan).

    For each successful call and each argument value not in the user's request, the latest earlier
    successful call whose output has a field with that exact value is its source. Values in the request
    have no source call (the request supplied them), as in :func:`synth.provenance.provenance`.
    """
    query = "\n".join(m["content"] for m in trace.messages if m["role"] == "user")
    flows: list[Flow] = []
    done: list[CallRecord] = []
    for r in trace.records:
        if not r.ok:
            continue
        for param, value in r.args.items():
            if value_in(value, query):
                continue
            for src in reversed(done):
                field = next((f for f, x in _fields(src.output) if x == value and type(x) is type(value)), None)
                if field is not None:
                    flows.append(Flow(src.id, src.tool, field, r.id, r.tool, param))
                    break
        done.append(r)
    return flows


def chain_signature(server: str, trace: Trace) -> str:
    """``server:tool>tool>...`` of the calls that succeeded, in execution order (retries collapse)."""
    tools: list[str] = []
    for r in trace.records:
        if r.ok and (not tools or tools[-1] != r.tool):
            tools.append(r.tool)
    return f"{server}:" + ">".join(tools)


def ecosystem_doc(spec: ServerSpec, chains: list[Chain]) -> str:
    """The tool-ecosystem document of one server: signatures, argument flows and typical chains."""
    lines = [f"# {spec.name} tools", "", "## Available tools"]
    for name, d in sorted(spec.docs.items()):
        args = ", ".join(f"{p}: {d.parameters['properties'].get(p, {}).get('type', 'any')}" for p in d.required)
        outs = ", ".join(d.output_fields) or "a result"
        lines.append(f"- {name}({args}) -> {outs}. {d.description}")
    edges = sorted(spec.graph.edges(data=True))
    if edges:
        lines += ["", "## How the tools connect"]
        for a, b, data in edges:
            f, p, _ = data["matches"][0]
            lines.append(f"- the {f} returned by {a} can be passed as {p} to {b}")
    for n, chain in enumerate(chains[:TYPICAL_CHAINS], 1):
        lines += ["", f"## Typical sequence {n}"]
        for k, step in enumerate(chain.steps, 1):
            src = [f"{p} from step {a[1] + 1} ({a[2]})" if a[0] == "ref" else f"{p} from the request"
                   for p, a in step.args]
            lines.append(f"{k}. {step.tool}" + (f" using {', '.join(src)}" if src else ""))
    return "\n".join(lines)


def trajectory_narrative(server: str, query: str, trace: Trace) -> str:
    """A prose retelling of one conversation: the calls in execution order and the flows that happened."""
    parts = [f"A user of the {server} service asked: \"{query}\""]
    for r in trace.records:
        args = ", ".join(f"{k}={json.dumps(v)}" for k, v in r.args.items())
        if r.ok:
            keys = ", ".join(sorted(r.output)[:4]) if isinstance(r.output, dict) and r.output else "a result"
            parts.append(f"Calling {r.tool}({args}) returned {keys}.")
        else:
            parts.append(f"Calling {r.tool}({args}) failed ({(r.error or 'error').replace('_', ' ')}).")
    flows = executed_flows(trace)
    if flows:
        parts.append("The key to the sequence is the data flow: " + "; ".join(f.sentence() for f in flows) + ".")
    parts.append("The answer reported only what the tools returned: " + (trace.messages[-1]["content"] or ""))
    return " ".join(parts)


def failure_writeup(trace: Trace) -> str | None:
    """A debugging note about the calls that really failed in a conversation, or None if none did."""
    notes = []
    for r in trace.records:
        if r.ok:
            continue
        if r.error == "invalid_argument":
            notes.append(f"## Common error: missing argument in {r.tool}\nThe call {r.tool}({json.dumps(r.args)}) "
                         f"left out a required argument and was rejected. Correct: pass every required argument "
                         f"of {r.tool}, taking ids from earlier results.")
        elif r.error in ("timeout", "unreachable"):
            notes.append(f"## Transient failure: {r.error} in {r.tool}\nThe service did not answer. Correct: retry "
                         "the same call; if it keeps failing, say so instead of guessing a result.")
        else:
            notes.append(f"## Tool error in {r.tool}\nThe tool rejected {json.dumps(r.args)}. Correct: check the "
                         "arguments against the tool's schema and the earlier results.")
    return "\n\n".join(notes) if notes else None


def _is_subsequence(xs: list[str], ys: list[str]) -> bool:
    it = iter(ys)
    return all(x in it for x in xs)


def rule_coherence(doc: Document, source: NarrativeSource | None, spec: ServerSpec | None) -> int:
    """Rule-based coherence, 1-5: five minus two points per failed check (never below 1).

    The checks, by kind:

    * trajectory -- *introduced*: every tool a flow names was called earlier in the text; *order*: the calls
      the text names are the executed calls in execution order; *flows exist*: every flow the text names is
      an edge of :func:`executed_flows` of the trace.
    * failure -- *introduced*: every tool named failed in the trace; *order*: they are named in execution order.
    * ecosystem -- *introduced*: every tool named in a connection is listed among the server's tools;
      *flows exist*: every connection is an edge of the server's transition graph.
    """
    failed = 0
    if doc.kind == "trajectory" and source is not None:
        called = _CALL_RE.findall(doc.text)
        flows = {(f.field, f.src_tool, f.param, f.dst_tool) for f in executed_flows(source.trace)}
        named = _FLOW_RE.findall(doc.text)
        failed += any(t not in called or u not in called for _, t, _, u in named)
        failed += called != [r.tool for r in source.trace.records]
        failed += any(f not in flows for f in named)
    elif doc.kind == "failure" and source is not None:
        named = _FAIL_RE.findall(doc.text)
        fails = [r.tool for r in source.trace.records if not r.ok]
        failed += any(t not in fails for t in named)
        failed += not _is_subsequence(named, fails)
    elif doc.kind == "ecosystem" and spec is not None:
        listed = set(_TOOL_RE.findall(doc.text))
        edges = {(data["matches"][0][0], a, data["matches"][0][1], b) for a, b, data in spec.graph.edges(data=True)}
        named = _EDGE_RE.findall(doc.text)
        failed += any(a not in listed or b not in listed for _, a, _, b in named)
        failed += any(e not in edges for e in named)
    else:
        return 1
    return max(1, 5 - 2 * failed)


_COHERENCE_PROMPT = (
    "Below is a document written for a language model's pre-training corpus, and the tool-use conversation it "
    "retells (or the tool catalogue it describes). Rate its coherence from 1 to 5: 5 = every entity it names is "
    "introduced, its steps are in the order they happened, and every data flow it states really happened; "
    "1 = it states things that did not happen or contradicts itself.\n\nDocument:\n{doc}\n\nSource:\n{src}\n\n"
    'Reply with JSON only: {{"score": N}} where N is 1, 2, 3, 4 or 5.')


class LLMCoherence:
    """Coherence 1-5 from the LLM judge role: one rubric prompt per document; None when it fails (fail closed).

    ``client`` is any :class:`synth.chat.ChatClient` (the synthesis's :class:`~synth.llm.client.LLMClient`).
    """

    name = "llm"

    def __init__(self, client: Any, role: str = "judge"):
        self.client, self.role = client, role
        self.failures = 0
        """Documents the judge could not score (each one dropped)."""

    def __call__(self, doc: Document, source: NarrativeSource | None, spec: ServerSpec | None) -> int | None:
        from synth.chat import parse_score, transcript

        if source is not None:
            src = transcript(source.trace.messages)
        else:
            src = "\n".join(f"{d.name}: {d.description}" for d in (spec.docs.values() if spec else []))
        try:
            reply = self.client.chat(self.role, [{"role": "user", "content": _COHERENCE_PROMPT.format(
                doc=doc.text, src=src)}])
            score, _ = parse_score(reply.content or "")
        except Exception:  # noqa: BLE001 - a judge that fails never passes a document
            self.failures += 1
            return None
        return score


def _candidates(specs: dict[str, ServerSpec], pools: dict[str, list[Chain]], sources: list[NarrativeSource],
                rejected: Counter[str], min_judge: float):
    """Documents in corpus order with their source, after the execution and judge gates."""
    ran = {s.server for s in sources if s.accepted and any(r.ok for r in s.trace.records)}
    for name, spec in sorted(specs.items()):
        scores = [s.judge_mean for s in sources if s.server == name and s.accepted and s.judge_mean is not None]
        if name not in ran:
            rejected["ecosystem:not_executed"] += 1
        elif sum(scores) / len(scores) < min_judge:
            rejected["ecosystem:judge_below_threshold"] += 1
        else:
            chains = [c for c in pools.get(name, []) if len(c.steps) > 1]
            chains = list({c.signature: c for c in chains}.values())
            yield Document("ecosystem", name, f"ecosystem:{name}", ecosystem_doc(spec, chains)), None, spec
    for s in sorted(sources, key=lambda s: s.task_index):
        failures = any(not r.ok for r in s.trace.records)
        kinds = ["trajectory"] + (["failure"] if failures else [])
        if not s.accepted or not any(r.ok for r in s.trace.records):
            rejected.update(f"{k}:not_executed" for k in kinds)
            continue
        if s.judge_mean is None or s.judge_mean < min_judge:
            rejected.update(f"{k}:judge_below_threshold" for k in kinds)
            continue
        sig = chain_signature(s.server, s.trace)
        if all(p.derivable for p in provenance(s.trace.messages)):
            yield Document("trajectory", s.server, sig, trajectory_narrative(s.server, s.query, s.trace),
                           s.task_index), s, None
        else:
            rejected["trajectory:not_derivable"] += 1
        note = failure_writeup(s.trace)
        if note:
            yield Document("failure", s.server, sig, note, s.task_index), s, None


def narrative_documents(specs: dict[str, ServerSpec], pools: dict[str, list[Chain]], sources: list[NarrativeSource],
                        *, min_judge: float = 0.7, min_coherence: int = 4,
                        coherence: CoherenceScorer = rule_coherence,
                        approx_tokens=lambda t: len(t.split())) -> tuple[list[Document], CorpusReport]:
    """The gated corpus (ecosystem documents first, then per-task ones in task order) and its counts.

    ``approx_tokens(text) -> int`` counts the kept documents' tokens for the report.
    """
    rejected: Counter[str] = Counter()
    per_sig: Counter[str] = Counter()
    kept: list[Document] = []
    for doc, source, spec in _candidates(specs, pools, sources, rejected, min_judge):
        score = coherence(doc, source, spec)
        if score is None or score < min_coherence:
            rejected[f"{doc.kind}:incoherent"] += 1
            continue
        if per_sig[doc.signature] >= MAX_DOCS_PER_SIGNATURE:
            rejected[f"{doc.kind}:signature_cap"] += 1
            continue
        per_sig[doc.signature] += 1
        kept.append(doc)
    report = CorpusReport(documents=dict(sorted(Counter(d.kind for d in kept).items())),
                          rejected=dict(sorted(rejected.items())),
                          approx_tokens=sum(approx_tokens(d.text) for d in kept))
    return kept, report
