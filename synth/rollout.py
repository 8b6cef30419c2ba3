"""The scripted policy: executes a plan against a backend and writes the whole conversation.

Turn by turn, the policy issues the plan's calls of that turn as parallel tool calls, reads the results,
and fills later arguments from earlier outputs (``("ref", j, field)``: ``output[field]``, else the
field of the first item of the output's first list; a text result is read by
:func:`synth.observe.text_fields`). Tool errors are injected as ASTRA does (seed 000): only on
*emulated* calls (those the emulator role serves: document-only tools, and the user's write tools run
under the emulator; ``backend.emulated(server, tool)``), with probability ``error_rate`` per attempt, and
only on the tool side -- ``timeout`` or ``unreachable`` (:data:`ERROR_KINDS`), the call never reaching the
tool. The assistant's own calls are never corrupted, so no trained turn is an injected mistake.

Recovery: the failed calls are retried in a dedicated assistant turn, at most :data:`MAX_RETRIES` times;
a call that still fails is abandoned, its dependents are not attempted, and the final answer says
honestly what could not be done (:mod:`synth.answers`). Genuine tool errors (not injected) are not
retried. Hidden calls (skipped-lookup defects) run silently: their results feed later arguments but
never appear in the conversation.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from collections.abc import Sequence
from typing import Any

from synth.errors import ToolCallError
from synth.plans import Call, Plan

__all__ = ["ERROR_KINDS", "ERROR_WEIGHTS", "MAX_RETRIES", "CallRecord", "Trace", "execute", "message",
           "system_prompt"]

ERROR_KINDS = ("timeout", "unreachable")
ERROR_WEIGHTS = (0.55, 0.45)
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
    why: dict[str, str] = field(default_factory=dict)
    """Why each abandoned tool was abandoned (``timeout``, ``unreachable``, ``tool_error``, ``blocked``)."""


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
    if isinstance(output.get("result"), str):
        from synth.observe import text_fields

        fields = text_fields(output["result"])
        found = fields.get(fld) or fields.get("items")  # a listing's bare lines are the tool's noun
        return found[0] if found else None
    return None


def emulated(backend: Any, server: str, tool: str) -> bool:
    """Whether ``backend`` serves ``server.tool`` by emulation (injected errors apply); True for a backend
    that does not say (an in-process test double)."""
    check = getattr(backend, "emulated", None)
    return True if check is None else bool(check(server, tool))


def execute(plan: Plan, backend: Any, rng: random.Random, error_rate: float, system: str | None = None,
            phrases: dict[str, str] | None = None) -> Trace:
    """Roll out ``plan`` (see the module docstring); raises :class:`~synth.errors.ServerError` if the server
    dies, which the caller counts as a dropped task. ``phrases`` words each tool's step for the answer
    (``tool -> "check the stock of that product"``)."""
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
        ready = _ready_calls(plan, [c for c in ordered if c.turn == turn], outputs, backend, trace)
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
                if emulated(backend, plan.server, c.tool) and rng.random() < error_rate:
                    injected = rng.choices(ERROR_KINDS, ERROR_WEIGHTS)[0]
                sent = args
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
                    trace.why[c.tool] = injected or "tool_error"
            pending = retry
            attempt += 1
    trace.messages.append(message("assistant", _final_answer(plan, trace, phrases or {}, rng)))
    return trace


def _ready_calls(plan: Plan, calls: Sequence[Call], outputs: dict[int, dict], backend: Any,
                 trace: Trace) -> list[tuple[Call, dict]]:
    """The calls of one turn whose arguments resolve (from the query or earlier outputs), with those arguments;
    a blocked call is abandoned, and a hidden call runs at once without a message (its output feeds later calls)."""
    ready: list[tuple[Call, dict]] = []
    for c in calls:
        args, blocked = {}, False
        for p, a in c.args.items():
            v = a[1] if a[0] == "q" else _extract(outputs.get(a[1]), a[2])
            if v is None:
                blocked = True
                break
            args[p] = [v] if p in c.listed and not isinstance(v, list) else v
        if blocked:
            trace.abandoned.append(c.tool)
            trace.why[c.tool] = "blocked"
            continue
        if c.hidden:
            try:
                outputs[c.idx] = backend.call(plan.server, plan.instance, c.tool, args)
            except ToolCallError:
                pass
            continue
        ready.append((c, args))
    return ready


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
    rng = random.Random(f"{plan.seed}:say:{','.join(names)}:{first}")
    if pending and pending[0][2] is not None:
        parts = [f"{c.tool} failed ({err.replace('_', ' ')})" for c, args, err in pending]
        return "; ".join(parts) + rng.choice(("; retrying.", ". Trying again.", "; I'll retry once."))
    if first:
        visible = []
        for c in plan.ordered():
            if not c.hidden and c.tool not in visible:
                visible.append(c.tool)
        if len(visible) == 1:
            return rng.choice(("I'll call {a}.", "Let me call {a}.", "Checking with {a}.")).format(a=visible[0])
        return rng.choice(("To do this I will call {a}. First: {b}.", "Plan: {a}. Starting with {b}.",
                           "I'll need {a}. First, {b}.")).format(a=", then ".join(visible), b=", ".join(names))
    uses = []
    for cid, c, args, sent, inj in args_of:
        for p, a in c.args.items():
            if a[0] == "ref" and a[1] not in hidden:
                uses.append(f"{p} {args[p]} from {tool_of[a[1]]}")
    if uses:
        return rng.choice(("Using {u}, I'll call {n}.", "With {u}, next is {n}.")).format(
            u="; ".join(uses), n=", ".join(names))
    return rng.choice(("Next I'll call {n}.", "Now {n}.", "Then {n}.")).format(n=", ".join(names))


def _final_answer(plan: Plan, trace: Trace, phrases: dict[str, str], rng: random.Random) -> str:
    from synth.answers import final_answer

    done = [(r.tool, r.output) for r in trace.records if r.ok and isinstance(r.output, dict)]
    failed = [(t, trace.why.get(t, "tool_error")) for t in dict.fromkeys(trace.abandoned)]
    return final_answer(plan.query, done, failed, phrases, random.Random(f"{plan.seed}:answer"))
