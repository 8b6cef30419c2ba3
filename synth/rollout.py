"""The scripted policy: executes a plan against a backend and writes the whole conversation.

Turn by turn, the policy issues the plan's calls of that turn as parallel tool calls, reads the results,
and fills later arguments from earlier outputs (``("ref", j, field)``: ``output[field]``, else the
field of the first item of the output's first list). Tool errors are injected with probability
``error_rate`` per call attempt (seed 000: 20% in ASTRA's emulated calls), one of

* ``timeout`` / ``unreachable`` (weights 0.4 / 0.3): the call never reaches the server;
* ``invalid_argument`` (0.3): the call is sent without one required argument, and the server's own
  validation rejects it.

Recovery: the failed calls are retried in a dedicated assistant turn (the invalid one with the argument
restored), at most :data:`MAX_RETRIES` times; a call that still fails is abandoned, its dependents are
not attempted, and the final answer says honestly what could not be done. Genuine tool errors (not
injected) are not retried. Hidden calls (skipped-lookup defects) run silently: their results feed later
arguments but never appear in the conversation.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

from synth.errors import ToolCallError
from synth.plans import Call, Plan

__all__ = ["ERROR_KINDS", "ERROR_WEIGHTS", "MAX_RETRIES", "CallRecord", "Trace", "execute", "message",
           "system_prompt"]

ERROR_KINDS = ("timeout", "unreachable", "invalid_argument")
ERROR_WEIGHTS = (0.4, 0.3, 0.3)
MAX_RETRIES = 2
_ERROR_TEXT = {"timeout": "the request timed out after 30 s", "unreachable": "the service is unreachable"}


@dataclass
class CallRecord:
    """One visible call attempt."""

    id: str
    tool: str
    args: dict[str, Any]
    ok: bool
    output: dict | None
    error: str | None
    plan_idx: int
    retry: bool
    injected: str | None = None


@dataclass
class Trace:
    """A rollout's conversation and call records."""

    messages: list[dict]
    records: list[CallRecord] = field(default_factory=list)
    abandoned: list[str] = field(default_factory=list)
    """Tools that were not completed (failed after retries, blocked, or genuinely rejected)."""
    injected: list[str] = field(default_factory=list)
    ids_by_plan: dict[int, list[str]] = field(default_factory=dict)
    """Visible call ids of each plan call (first attempt first)."""
    transformed: list[tuple[Any, str]] = field(default_factory=list)
    """``(canonical value, kind)`` of every value a tool output shows transformed (:mod:`synth.transforms`)."""


def message(role: str, content: str, tool_calls: list | None = None, tool_call_id: str | None = None,
            name: str | None = None) -> dict:
    """A chat message with every key present (pinned interface 1)."""
    return {"role": role, "content": content, "tool_calls": tool_calls, "tool_call_id": tool_call_id, "name": name}


def system_prompt(server: str) -> str:
    return (f"You are a careful assistant with access to the {server} tools. Call tools to complete the "
            "user's request, use only values the user gave or a tool returned, and report failures honestly.")


def _extract(output: dict | None, fld: str) -> Any:
    if not output:
        return None
    if fld in output:
        return output[fld]
    for v in output.values():
        if isinstance(v, list) and v and isinstance(v[0], dict) and fld in v[0]:
            return v[0][fld]
    return None


def _fact(tool: str, out: dict) -> str:
    lists = [(k, v) for k, v in out.items() if isinstance(v, list)]
    if lists:
        k, items = lists[0]
        if not items:
            return f"{tool} found no {k}"
        first = items[0]
        desc = ", ".join(f"{f} {first[f]}" for f in sorted(first)[:3]) if isinstance(first, dict) else str(first)
        return f"{tool} found {out.get('count', len(items))} {k} (first: {desc})"
    desc = ", ".join(f"{k} {v}" for k, v in sorted(out.items())[:4] if not isinstance(v, dict | list))
    return f"{tool} returned {desc}"


def execute(plan: Plan, backend: Any, rng: random.Random, error_rate: float, system: str | None = None) -> Trace:
    """Roll out ``plan`` (see the module docstring); raises :class:`~synth.errors.ServerError` if the server
    dies, which the caller counts as a dropped task."""
    trace = Trace(messages=[message("system", system or system_prompt(plan.server)), message("user", plan.query)])
    outputs: dict[int, dict] = {}
    tool_of = {c.idx: c.tool for c in plan.calls}
    hidden = {c.idx for c in plan.calls if c.hidden}
    n_ids = 0
    first = True
    ordered = plan.ordered()
    shown = _transformed_fields(plan)
    t_rng = random.Random(f"{plan.seed}:transform") if shown else None
    for turn in sorted({c.turn for c in plan.calls}):
        ready: list[tuple[Call, dict]] = []
        for c in (c for c in ordered if c.turn == turn):
            args, blocked = {}, False
            for p, a in c.args.items():
                v = a[1] if a[0] == "q" else _extract(outputs.get(a[1]), a[2])
                if v is None:
                    blocked = True
                    break
                args[p] = v
            if blocked:
                trace.abandoned.append(c.tool)
                continue
            if c.hidden:
                try:
                    outputs[c.idx] = backend.call(plan.server, plan.instance, c.tool, args)
                except ToolCallError:
                    pass
                continue
            ready.append((c, args))
        if not ready:
            continue
        pending = [(c, args, None) for c, args in ready]
        attempt = 0
        while pending:
            calls_json, batch = [], []
            for c, args, prev_err in pending:
                n_ids += 1
                cid = f"call_{n_ids}"
                trace.ids_by_plan.setdefault(c.idx, []).append(cid)
                injected = None
                if rng.random() < error_rate:
                    injected = rng.choices(ERROR_KINDS, ERROR_WEIGHTS)[0]
                sent = args
                if injected == "invalid_argument":
                    drop = sorted(args)[rng.randrange(len(args))] if args else None
                    sent = {k: v for k, v in args.items() if k != drop}
                    if drop is None:
                        injected = "timeout"
                calls_json.append({"id": cid, "type": "function",
                                   "function": {"name": c.tool, "arguments": json.dumps(sent)}})
                batch.append((cid, c, args, sent, injected))
            content = _rationale(plan, [b[1] for b in batch], pending, first, tool_of, hidden, args_of=batch)
            first = False
            trace.messages.append(message("assistant", content, tool_calls=calls_json))
            retry: list[tuple[Call, dict, str]] = []
            for cid, c, args, sent, injected in batch:
                out, err = None, None
                if injected in ("timeout", "unreachable"):
                    err = _ERROR_TEXT[injected]
                else:
                    try:
                        out = backend.call(plan.server, plan.instance, c.tool, sent)
                    except ToolCallError as e:
                        err = str(e)
                if injected:
                    trace.injected.append(injected)
                ok = err is None
                trace.records.append(CallRecord(cid, c.tool, sent, ok, out, None if ok else (injected or "tool_error"),
                                                c.idx, attempt > 0, injected))
                body = json.dumps(_display(out, c.idx, shown, t_rng, trace), sort_keys=True) if ok else json.dumps(
                    {"error": injected or "tool_error", "message": err})
                trace.messages.append(message("tool", body, tool_call_id=cid, name=c.tool))
                if ok:
                    outputs[c.idx] = out
                elif injected and attempt < MAX_RETRIES:
                    retry.append((c, args, injected))
                else:
                    trace.abandoned.append(c.tool)
            pending = retry
            attempt += 1
    trace.messages.append(message("assistant", _final_answer(trace)))
    return trace


def _transformed_fields(plan: Plan) -> dict[tuple[int, str], str]:
    """``(supplier idx, field) -> planned kind`` for output fields some consumer reads transformed.

    Every consumer of such a field then sees it transformed (one displayed form per output).
    """
    out: dict[tuple[int, str], str] = {}
    for c in plan.calls:
        for p, a in c.args.items():
            if a[0] == "ref" and p in c.transforms:
                out.setdefault((a[1], a[2]), c.transforms[p])
    return out


def _display(out: dict | None, idx: int, shown: dict[tuple[int, str], str], rng: random.Random | None,
             trace: Trace) -> dict | None:
    """The tool output as the conversation shows it: fields consumers read transformed are replaced by
    :func:`synth.transforms.display` at the place :func:`_extract` reads them (``out`` is not modified)."""
    fields = [(f, k) for (j, f), k in shown.items() if j == idx]
    if not out or not fields or rng is None:
        return out
    from synth.transforms import applicable, display

    view = json.loads(json.dumps(out))
    for fld, planned in sorted(fields):
        holder = view if fld in view else next((v[0] for v in view.values() if isinstance(v, list) and v
                                                and isinstance(v[0], dict) and fld in v[0]), None)
        if holder is None:
            continue
        value = holder[fld]
        kinds = applicable(value)
        if not kinds:
            continue
        kind = planned if planned in kinds else kinds[rng.randrange(len(kinds))]
        holder[fld] = display(value, kind, rng)
        trace.transformed.append((value, kind))
    return view


def _rationale(plan: Plan, calls: list[Call], pending, first: bool, tool_of: dict[int, str], hidden: set[int],
               args_of) -> str:
    names = [c.tool for c in calls]
    if pending and pending[0][2] is not None:
        parts = []
        for c, args, err in pending:
            if err == "invalid_argument":
                parts.append(f"{c.tool} was rejected because I left out a required argument; retrying with "
                             "all arguments")
            else:
                parts.append(f"{c.tool} failed ({err.replace('_', ' ')}); retrying")
        return "; ".join(parts) + "."
    if first:
        visible = []
        for c in plan.ordered():
            if not c.hidden and c.tool not in visible:
                visible.append(c.tool)
        return "To do this I will call " + ", then ".join(visible) + f". First: {', '.join(names)}."
    uses = []
    for cid, c, args, sent, inj in args_of:
        for p, a in c.args.items():
            if a[0] == "ref" and a[1] not in hidden:
                uses.append(f"{p} {args[p]} from {tool_of[a[1]]}")
    if uses:
        return f"Using {'; '.join(uses)}, I'll call {', '.join(names)}."
    return f"Next I'll call {', '.join(names)}."


def _final_answer(trace: Trace) -> str:
    facts = [_fact(r.tool, r.output) for r in trace.records if r.ok and r.output is not None]
    text = ("Here is what I found: " + "; ".join(facts) + ".") if facts else "I could not get any results."
    if trace.abandoned:
        uniq = list(dict.fromkeys(trace.abandoned))
        text += f" I could not complete {', '.join(uniq)}: the tool failed or a value it needed was unavailable."
    return text
