"""Narrative mid-training documents (seed 001): tool-ecosystem docs, trajectory narratives, failure write-ups.

Three kinds of plain-text documents, one JSON object per line ``{"kind", "server", "text"}``:

``ecosystem``
    per server: its tools with arguments and outputs, the dependencies of its transition graph
    ("the ``flight_id`` output of ``search_flights`` fills ``flight_id`` of ``book_flight``") and a typical
    chain;
``trajectory``
    per accepted trajectory whose every action is derivable (at most :data:`MAX_PER_SIGNATURE` per chain signature, seed 001's dedup):
    the conversation retold as prose, keeping the argument flow and dropping the chat format;
``failure``
    per trajectory with a failed call or a non-derivable action: what went wrong and the correct move
    (retry after a timeout, include the missing argument, look the id up instead of inventing it).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from synth.plans import MAX_PER_SIGNATURE, Chain, Plan, ServerSpec
from synth.provenance import provenance

__all__ = ["narrative_documents", "ecosystem_doc", "trajectory_narrative", "failure_writeup"]


def ecosystem_doc(spec: ServerSpec, example: Chain | None) -> str:
    """The tool-ecosystem document of one server."""
    lines = [f"# {spec.name} tools", "", "## Available tools"]
    for name, d in sorted(spec.docs.items()):
        args = ", ".join(f"{p}: {d.parameters['properties'].get(p, {}).get('type', 'any')}" for p in d.required)
        outs = ", ".join(d.output_fields) or "a result"
        lines.append(f"- {name}({args}) -> {outs}. {d.description}")
    lines += ["", "## How the tools connect"]
    for a, b, data in sorted(spec.graph.edges(data=True)):
        f, p, _ = data["matches"][0]
        lines.append(f"- the {f} returned by {a} can be passed as {p} to {b}")
    if example is not None:
        lines += ["", "## A typical sequence"]
        for k, step in enumerate(example.steps, 1):
            src = [f"{p} from step {a[1] + 1} ({a[2]})" if a[0] == "ref" else f"{p} from the request"
                   for p, a in step.args]
            lines.append(f"{k}. {step.tool}" + (f" using {', '.join(src)}" if src else ""))
    return "\n".join(lines)


def trajectory_narrative(plan: Plan, trace: Any) -> str:
    """A prose retelling of one conversation."""
    parts = [f"A user of the {plan.server} service asked: \"{plan.query}\""]
    for r in trace.records:
        args = ", ".join(f"{k}={json.dumps(v)}" for k, v in r.args.items())
        if r.ok:
            keys = ", ".join(sorted(r.output)[:4]) if isinstance(r.output, dict) else "a result"
            parts.append(f"Calling {r.tool}({args}) returned {keys}.")
        else:
            parts.append(f"Calling {r.tool}({args}) failed ({r.error.replace('_', ' ')}).")
    flows = []
    for c in plan.ordered():
        for p, a in c.args.items():
            if a[0] == "ref" and not plan.calls[a[1]].hidden:
                flows.append(f"the {a[2]} from {plan.calls[a[1]].tool} became the {p} of {c.tool}")
    if flows:
        parts.append("The key to the sequence is the data flow: " + "; ".join(flows) + ".")
    parts.append("The answer reported only what the tools returned: " + trace.messages[-1]["content"])
    return " ".join(parts)


def failure_writeup(plan: Plan, trace: Any) -> str | None:
    """A debugging note about what went wrong in a conversation, or None if nothing did."""
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
    for p in provenance(trace.messages):
        if not p.derivable:
            notes.append(f"## Anti-pattern: unsupported value in {p.tool}\nThe call used {', '.join(p.missing)} "
                         "that neither the request nor any earlier result contained (a skipped lookup or a "
                         "memorised constant). Correct: look the value up with the tool that returns it first.")
    return "\n\n".join(notes) if notes else None


def narrative_documents(specs: dict[str, ServerSpec], pools: dict[str, list[Chain]],
                        rollouts: list[tuple[int, Plan, Any, bool]]) -> list[str]:
    """All narrative documents as JSON lines (ecosystem docs first, then per-trajectory ones in task order)."""
    out = []
    for name, spec in sorted(specs.items()):
        pool = [c for c in pools.get(name, []) if len(c.steps) > 1]
        out.append({"kind": "ecosystem", "server": name, "text": ecosystem_doc(spec, pool[0] if pool else None)})
    per_sig: Counter[str] = Counter()
    for _, plan, trace, accepted in rollouts:
        clean = all(p.derivable for p in provenance(trace.messages))
        if accepted and clean and per_sig[plan.signature] < MAX_PER_SIGNATURE:
            per_sig[plan.signature] += 1
            out.append({"kind": "trajectory", "server": plan.server, "text": trajectory_narrative(plan, trace)})
        note = failure_writeup(plan, trace)
        if note:
            out.append({"kind": "failure", "server": plan.server, "text": note})
    return [json.dumps(d, ensure_ascii=False) for d in out]
