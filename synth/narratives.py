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
   signature, across all kinds, in document order;
5. **content dedup** (``near_duplicate``): a document whose word 5-gram shingles (ids and numbers masked)
   have Jaccard similarity >= :data:`NEAR_DUPLICATE` with an earlier kept document of its kind is dropped;
6. **failure cap** (``failure_cap``): failure write-ups are at most ``max_failure_share`` (default
   :data:`FAILURE_SHARE`) of the kept documents; the latest ones are dropped first.

A trajectory that was never kept is counted under why: ``judge_failed`` (the judge could not score it),
``judge_rejected``, ``filtered``, or ``not_executed`` (no call succeeded). Each gate's passed and failed
documents are in :attr:`~synth.models.CorpusReport.gates`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Protocol

from synth.models import CorpusReport
from synth.plans import Chain, ServerSpec
from synth.provenance import provenance, value_in
from synth.rollout import CallRecord, Trace

__all__ = ["MAX_DOCS_PER_SIGNATURE", "NEAR_DUPLICATE", "FAILURE_SHARE", "GATES", "shingles", "TYPICAL_CHAINS", "Flow", "NarrativeSource", "Document", "CoherenceScorer",
           "executed_flows", "chain_signature", "ecosystem_doc", "trajectory_narrative", "failure_writeup",
           "rule_coherence", "LLMCoherence", "narrative_documents"]

MAX_DOCS_PER_SIGNATURE = 3
"""Documents allowed per tool-chain signature, across all kinds (seed 001's dedup)."""

NEAR_DUPLICATE = 0.8
"""Jaccard similarity of masked word 5-gram shingles at which a document is a near-duplicate."""

FAILURE_SHARE = 0.2
"""Default cap on the share of failure write-ups among kept documents."""

GATES: tuple[str, ...] = ("executed", "judge", "derivable", "coherence", "signature_cap", "near_duplicate",
                          "failure_cap")
"""The corpus gates in the order they apply."""

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
            keys = ", ".join(list(r.output)[:6]) if isinstance(r.output, dict) and r.output else "a result"
            parts.append(f"Calling {r.tool}({args}) returned {keys}.")
        else:
            parts.append(f"Calling {r.tool}({args}) failed ({(r.error or 'error').replace('_', ' ')}).")
    flows = executed_flows(trace)
    if flows:
        parts.append("The key to the sequence is the data flow: " + "; ".join(f.sentence() for f in flows) + ".")
    parts.append("The answer reported only what the tools returned: " + (trace.messages[-1]["content"] or ""))
    return " ".join(parts)


_TRANSIENT = ("The service did not answer. Correct: retry the same call; if it keeps failing, say so instead of "
              "guessing a result.",
              "Nothing came back from {tool}. The right move is one more identical attempt, and an honest report "
              "if that fails too.",
              "{tool} never reached its backend. Retrying unchanged is safe; inventing its result is not.")
_GENUINE = ("The tool rejected {args}: {msg}. Correct: check the arguments against the tool's schema and the "
            "earlier results.",
            "{tool} refused {args} with \"{msg}\". The fix is in the arguments, so retrying unchanged does not "
            "help; read the message and the earlier results.",
            "Calling {tool} with {args} failed: {msg}. A value the tool does not know was passed; take it from "
            "an earlier result instead.")


def failure_writeup(trace: Trace) -> str | None:
    """A debugging note about the calls that really failed in a conversation, or None if none did (the wording
    varies with the call; genuine tool errors quote the tool's message)."""
    notes = []
    messages = {m.get("tool_call_id"): m["content"] for m in trace.messages if m["role"] == "tool"}
    for r in trace.records:
        if r.ok:
            continue
        pick = int(hashlib.sha1(r.id.encode() + r.tool.encode()).hexdigest(), 16)
        if r.error in ("timeout", "unreachable"):
            text = _TRANSIENT[pick % len(_TRANSIENT)].format(tool=r.tool)
            notes.append(f"## Transient failure: {r.error} in {r.tool}\n{text}")
        else:
            try:
                msg = str(json.loads(messages.get(r.id, "{}")).get("message", "an error"))[:160]
            except ValueError:
                msg = "an error"
            text = _GENUINE[pick % len(_GENUINE)].format(tool=r.tool, args=json.dumps(r.args), msg=msg)
            notes.append(f"## Tool error in {r.tool}\n{text}")
    return "\n\n".join(notes) if notes else None


def _related(field: str, param: str) -> bool:
    return field == param or param.endswith("_" + field) or field.endswith("_" + param)


def _unanswered(trace: Trace) -> bool:
    """Whether the trace's final answer leaves out a field its request asked for."""
    from synth.rules import requested_fields

    query = "\n".join(m["content"] for m in trace.messages if m["role"] == "user")
    want = requested_fields(query, [r.output for r in trace.records if r.ok])
    final = trace.messages[-1]["content"] or ""
    return any(not any(v in final for v in vals) for vals in want.values())


_MASK = re.compile(r"\b[A-Za-z]*[-_]?\d[\w.-]*\b")


def shingles(text: str, n: int = 5) -> set[int]:
    """Hashes of the word ``n``-grams of ``text`` with ids and numbers masked (near-duplicate detection)."""
    words = _MASK.sub("#", text.lower()).split()
    if len(words) < n:
        return {hash(" ".join(words))}
    return {int(hashlib.sha1(" ".join(words[i:i + n]).encode()).hexdigest()[:12], 16) for i in range(len(words) - n + 1)}


def _is_subsequence(xs: list[str], ys: list[str]) -> bool:
    it = iter(ys)
    return all(x in it for x in xs)


def rule_coherence(doc: Document, source: NarrativeSource | None, spec: ServerSpec | None) -> int:
    """Rule-based coherence, 1-5: five minus two points per failed check (never below 1).

    The checks, by kind:

    * trajectory -- *introduced*: every tool a flow names was called earlier in the text; *order*: the calls
      the text names are the executed calls in execution order; *flows exist*: every flow the text names is
      an edge of :func:`executed_flows` of the trace; *flows mean something*: each flow joins related names
      (equal, or one ending in the other: ``account_id`` -> ``from_account_id``), not a value that merely
      coincides (a ``count`` of 2 becoming a ``quantity`` of 2); *resolved*: no step the request asked
      for was abandoned and the retold answer states every field it asked for
      (:func:`synth.rules.requested_fields`) -- an unresolved story belongs in a failure write-up.
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
        failed += any(not _related(fld, param) for fld, _, param, _ in named)  # a coincidence, not a flow
        failed += _unanswered(source.trace) or bool(source.trace.abandoned)
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

    ``client`` is any :class:`synth.chat_client.ChatClient` (the synthesis's :class:`~synth.llm.client.LLMClient`).
    """

    name = "llm"

    def __init__(self, client: Any, role: str = "judge"):
        self.client, self.role = client, role
        self.failures = 0
        """Documents the judge could not score (each one dropped)."""

    def __call__(self, doc: Document, source: NarrativeSource | None, spec: ServerSpec | None) -> int | None:
        from synth.chat_client import parse_score, transcript

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
                rejected: Counter[str], gates: dict[str, Counter[str]], min_judge: float):
    """Documents in corpus order with their source, after the execution, judge and derivability gates."""
    def gate(name: str, ok: bool, kinds: list[str], reason: str = "") -> bool:
        gates[name]["passed" if ok else "failed"] += len(kinds)
        if not ok:
            rejected.update(f"{k}:{reason}" for k in kinds)
        return ok

    ran = {s.server for s in sources if s.accepted and any(r.ok for r in s.trace.records)}
    for name, spec in sorted(specs.items()):
        scores = [s.judge_mean for s in sources if s.server == name and s.accepted and s.judge_mean is not None]
        if gate("executed", name in ran, ["ecosystem"], "not_executed") and \
                gate("judge", sum(scores) / len(scores) >= min_judge, ["ecosystem"], "judge_below_threshold"):
            chains = [c for c in pools.get(name, []) if len(c.steps) > 1]
            chains = list({c.signature: c for c in chains}.values())
            yield Document("ecosystem", name, f"ecosystem:{name}", ecosystem_doc(spec, chains)), None, spec
    for s in sorted(sources, key=lambda s: s.task_index):
        failures = any(not r.ok for r in s.trace.records)
        kinds = ["trajectory"] + (["failure"] if failures else [])
        executed = any(r.ok for r in s.trace.records)
        why = "not_executed" if not executed else (s.reason or "not_executed")
        if not gate("executed", s.accepted and executed, kinds, why):
            continue
        if not gate("judge", s.judge_mean is not None and s.judge_mean >= min_judge, kinds, "judge_below_threshold"):
            continue
        sig = chain_signature(s.server, s.trace)
        if gate("derivable", all(p.derivable for p in provenance(s.trace.messages)), ["trajectory"],
                "not_derivable"):
            yield Document("trajectory", s.server, sig, trajectory_narrative(s.server, s.query, s.trace),
                           s.task_index), s, None
        note = failure_writeup(s.trace)
        if note:
            yield Document("failure", s.server, sig, note, s.task_index), s, None


def _near_duplicate(doc: Document, seen: dict[str, list[set[int]]]) -> bool:
    """Whether ``doc`` is a near-duplicate of a kept document of its kind (and remember it if not)."""
    mine = shingles(doc.text)
    for other in seen.setdefault(doc.kind, []):
        inter = len(mine & other)
        if inter and inter / len(mine | other) >= NEAR_DUPLICATE:
            return True
    seen[doc.kind].append(mine)
    return False


def narrative_documents(specs: dict[str, ServerSpec], pools: dict[str, list[Chain]], sources: list[NarrativeSource],
                        *, min_judge: float = 0.7, min_coherence: int = 4,
                        coherence: CoherenceScorer = rule_coherence, max_failure_share: float = FAILURE_SHARE,
                        approx_tokens=lambda t: len(t.split())) -> tuple[list[Document], CorpusReport]:
    """The gated corpus (ecosystem documents first, then per-task ones in task order) and its counts.

    ``approx_tokens(text) -> int`` counts the kept documents' tokens for the report.
    """
    if not 0.0 <= max_failure_share <= 1.0:
        raise ValueError(f"max_failure_share must be in [0, 1], got {max_failure_share}")
    rejected: Counter[str] = Counter()
    gates: dict[str, Counter[str]] = {g: Counter() for g in GATES}
    per_sig: Counter[str] = Counter()
    seen: dict[str, list[set[int]]] = {}
    kept: list[Document] = []
    for doc, source, spec in _candidates(specs, pools, sources, rejected, gates, min_judge):
        for name, bad, reason in (("coherence", lambda: (lambda x: x is None or x < min_coherence)(
                                      coherence(doc, source, spec)), "incoherent"),
                                  ("signature_cap", lambda: per_sig[doc.signature] >= MAX_DOCS_PER_SIGNATURE,
                                   "signature_cap"),
                                  ("near_duplicate", lambda: _near_duplicate(doc, seen), "near_duplicate")):
            if bad():
                gates[name]["failed"] += 1
                rejected[f"{doc.kind}:{reason}"] += 1
                break
            gates[name]["passed"] += 1
        else:
            per_sig[doc.signature] += 1
            kept.append(doc)
    kept = _cap_failures(kept, max_failure_share, rejected, gates["failure_cap"])
    report = CorpusReport(documents=dict(sorted(Counter(d.kind for d in kept).items())),
                          rejected=dict(sorted(rejected.items())),
                          approx_tokens=sum(approx_tokens(d.text) for d in kept),
                          gates={g: {"passed": c["passed"], "failed": c["failed"]} for g, c in gates.items()})
    return kept, report


def _cap_failures(kept: list[Document], share: float, rejected: Counter[str], counts: Counter[str]) -> list[Document]:
    """``kept`` with the latest failure write-ups dropped until they are at most ``share`` of the documents."""
    others = sum(d.kind != "failure" for d in kept)
    # f / (others + f) <= share  <=>  f <= share * others / (1 - share)
    allowed = len(kept) if share >= 1.0 else int(share * others / (1.0 - share) + 1e-9)
    out, n = [], 0
    for d in kept:
        if d.kind == "failure":
            if n >= allowed:
                rejected["failure:failure_cap"] += 1
                counts["failed"] += 1
                continue
            n += 1
        counts["passed"] += 1
        out.append(d)
    return out
