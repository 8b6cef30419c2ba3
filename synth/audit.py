"""A labelled audit set for the trajectory judge: clean trajectories, and copies with one injected defect each.

Kinds (:data:`DEFECTS`), each a pure function of one clean conversation (None when it does not apply):

``all_calls_failed``
    every tool result becomes an error (a timeout, an unreachable service or the tool's rejection) and
    the answer honestly says nothing could be done;
``answer_missing_fields``
    the request names output fields (:func:`synth.rules.requested_fields`) and the answer is rewritten to
    state other facts of the results instead;
``wrong_entity``
    a call argument the request states (an id, a name, a date) is replaced by another value of the same
    kind that an earlier tool result shows: the call acts on another entity;
``constraint_ignored``
    the request gains a constraint -- a language ("Please answer in French.") or a short answer ("Keep
    the answer short.") -- that the unchanged (English, or padded to more than
    :data:`synth.rules.SHORT_WORDS` words) answer breaks.

Two labels must be *kept* by the judge: ``clean`` and ``nonderivable`` (a trajectory synthesised with the
repair-axis defects -- skipped lookups, memorised constants -- which the judge scores but never filters).
"""

from __future__ import annotations

import copy
import json
import random
import re
from collections.abc import Callable

from synth.rules import SHORT_WORDS, output_pairs, requested_fields

__all__ = ["DEFECTS", "KEPT_LABELS", "inject"]

KEPT_LABELS = ("clean", "nonderivable")
"""Labels of trajectories the judge must keep."""

_ERRORS = ({"error": "timeout", "message": "the request timed out after 30 s"},
           {"error": "unreachable", "message": "the service is unreachable"},
           {"error": "tool_error", "message": "no record with that id"})
_SHAPES = (re.compile(r"^[A-Z]{2,4}-?\d{3,6}$"), re.compile(r"^\d{4}-\d{2}-\d{2}$"),
           re.compile(r"^[A-Z][a-z]+ [A-Z][a-z]+$"), re.compile(r"^[\w.+-]+@[\w-]+\.[\w.]+$"))


def _query(msgs: list[dict]) -> str:
    return "\n".join(m["content"] for m in msgs if m["role"] == "user")


def _constrained(msgs: list[dict]) -> bool:
    """Whether the request states a constraint (an injector that rewrites the answer skips it: the new
    answer would break that constraint too, a second defect)."""
    from synth.rules import constraints

    c = constraints(_query(msgs))
    return c.short or c.language is not None or c.report_failures


def _all_failed(msgs: list[dict], rng: random.Random) -> list[dict] | None:
    if _constrained(msgs):
        return None
    out = copy.deepcopy(msgs)
    tools = [m for m in out if m["role"] == "tool"]
    if not tools:
        return None
    for m in tools:
        m["content"] = json.dumps(rng.choice(_ERRORS))
    out[-1]["content"] = "I could not complete the request: every call failed, so I have no result to report."
    return out


def _missing_fields(msgs: list[dict], rng: random.Random) -> list[dict] | None:
    outputs = []
    for m in msgs:
        if m["role"] == "tool" and not m["content"].startswith('{"error"'):
            try:
                outputs.append(json.loads(m["content"]))
            except ValueError:
                pass
    want = requested_fields(_query(msgs), outputs)
    if not want or _constrained(msgs):
        return None
    banned = {v for vals in want.values() for v in vals}
    other = [(f, v) for o in outputs for f, v in output_pairs(o) if f not in want and v is not None
             and str(v) not in banned and not isinstance(v, bool)]
    facts = "; ".join(f"the {f.replace('_', ' ')} is {v}" for f, v in other[:2]) or "the request went through"
    out = copy.deepcopy(msgs)
    out[-1]["content"] = f"Here's what I found: {facts}."
    return out


def _shape(v: str) -> int | None:
    return next((i for i, p in enumerate(_SHAPES) if p.match(v)), None)


def _wrong_entity(msgs: list[dict], rng: random.Random) -> list[dict] | None:
    query = _query(msgs)
    seen = ""
    for mi, m in enumerate(msgs):
        if m["role"] == "tool":
            seen += "\n" + m["content"]
            continue
        if m["role"] != "assistant" or not m.get("tool_calls"):
            continue
        for ci, c in enumerate(m["tool_calls"]):
            args = json.loads(c["function"]["arguments"])
            for k, v in args.items():
                if not isinstance(v, str) or v not in query or _shape(v) is None:
                    continue
                cands = sorted({x for x in re.findall(r'"([^"]{3,60})"', seen) if x != v and x not in query
                                and _shape(x) == _shape(v) and (_shape(v) != 0 or x[:2] == v[:2])})
                if not cands:
                    continue
                out = copy.deepcopy(msgs)
                new = dict(args, **{k: rng.choice(cands)})
                out[mi]["tool_calls"][ci]["function"]["arguments"] = json.dumps(new)
                return out
    return None


def _constraint(msgs: list[dict], rng: random.Random) -> list[dict] | None:
    if _constrained(msgs):
        return None
    out = copy.deepcopy(msgs)
    user = next(m for m in out if m["role"] == "user")
    if rng.random() < 0.5:
        user["content"] += " " + rng.choice(("Please answer in French.", "Please reply in Spanish.",
                                             "Please answer in German."))
        return out
    user["content"] += " " + rng.choice(("Keep the answer short.", "Be brief."))
    words = out[-1]["content"].split()
    while len(words) <= SHORT_WORDS:
        words += ("To recap what the tools returned, in full detail: " + out[-1]["content"]).split()
    out[-1]["content"] = " ".join(words)
    return out


DEFECTS: dict[str, Callable[[list[dict], random.Random], list[dict] | None]] = {
    "all_calls_failed": _all_failed, "answer_missing_fields": _missing_fields, "wrong_entity": _wrong_entity,
    "constraint_ignored": _constraint}
"""Defect kind -> injector (see the module docstring)."""


def inject(kind: str, messages: list[dict], rng: random.Random) -> list[dict] | None:
    """``messages`` with one defect of ``kind`` injected, or None when the conversation has no place for it."""
    return DEFECTS[kind](messages, rng)
