"""The offline judge's hard rules: what a trajectory must get right to be kept, read from its messages only.

Four rules, each attached to the rubric dimension it guards (:data:`RULES`), fail a trajectory whatever
its mean score:

``all_calls_failed`` (tool_call_success)
    it made tool calls and every one of them failed (``no_tool_call``: it made none);
``answer_missing_fields`` (final_answer)
    the user asked for fields (:func:`requested_fields`: an output field of a successful call whose
    words the request uses, e.g. "stock" for ``stock``) and the final answer does not state the value of
    each of them (``no_final_answer``: there is none);
``wrong_entity`` (query_understanding)
    the request states an identifier (an id such as ``OR-4612``, an email, a date, a person's name) that
    no call uses, while a call passes another identifier of the same kind that only an earlier tool
    output shows: the call acts on another entity than the user's;
``constraint_ignored`` (conciseness / final_answer)
    the request states a constraint (:func:`constraints`: a short answer, a language, an account of
    what failed) and the final answer breaks it.

Non-derivable arguments (the repair-rate defects: a skipped lookup, a memorised constant) break none of
these rules on purpose: they are the quality axis the design manipulates, scored by
``tool_call_planning`` and never filtered (:data:`synth.judge.GATED_DIMENSIONS`). A value that occurs
nowhere in the visible history is such a defect, never a ``wrong_entity``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["ADMIT", "RULES", "SHORT_WORDS", "LANGUAGES", "FIELD_WORDS", "field_words", "requested_fields",
           "constraints", "answer_language", "rule_failures", "output_pairs", "is_error"]

RULES: dict[str, str] = {"no_tool_call": "tool_call_success", "all_calls_failed": "tool_call_success",
                         "no_final_answer": "final_answer", "answer_missing_fields": "final_answer",
                         "wrong_entity": "query_understanding", "constraint_ignored": "conciseness"}
"""Each rule and the rubric dimension it guards."""

SHORT_WORDS = 40
"""Most words a final answer may have when the user asks for a short one."""

LANGUAGES: dict[str, frozenset[str]] = {
    "English": frozenset("the is are was of and to with for that this your it found has".split()),
    "French": frozenset("le la les est sont de des et pour avec que une un votre au aux".split()),
    "Spanish": frozenset("el la los las es son de del y para con que una un su al".split()),
    "German": frozenset("der die das ist sind und für mit von ein eine ihr ihre den dem".split()),
}
"""Function words per answer language (the language rule counts them)."""

FIELD_WORDS: dict[str, tuple[str, ...]] = {
    "stock": ("stock", "in stock", "units left", "how many units"),
    "seats_left": ("seats", "free seats", "seats left"),
    "eta": ("eta", "arrive", "arrival", "when will"),
    "kcal_per_100g": ("calories", "kcal"),
    "calories": ("calories", "kcal"),
    "protein_g": ("protein",),
    "temp_c": ("temperature",),
    "precip_mm": ("rain", "precipitation"),
    "high_c": ("high",),
    "low_c": ("low",),
    "nightly_rate": ("nightly rate", "per night"),
    "due_date": ("due date", "due"),
    "leave_days": ("leave days", "days of leave left"),
    "size_kb": ("size",),
    "copies": ("copies", "available", "availability"),
    "balance": ("balance",),
    "status": ("status",),
    "price": ("price", "cost", "how much"),
    "total": ("total",),
    "budget": ("budget",),
    "carrier": ("carrier",),
    "condition": ("conditions",),
    "humidity": ("humidity",),
    "minutes": ("how long", "minutes"),
    "servings": ("servings",),
    "capacity": ("capacity",),
    "timezone": ("timezone", "time zone"),
    "manager_id": ("manager",),
    "plan": ("plan",),
    "tier": ("tier",),
    "level": ("level",),
    "priority": ("priority",),
}
"""Words that name an output field in a request, where the field's own name is not how people say it.
A field not listed is named by the words of its name (``arrival_city`` -> "arrival city"); ids are
never asked for by their bare noun (``order_id`` is not requested by "order")."""

_ID = re.compile(r"\b[A-Z]{2,4}-?\d{3,6}\b")
_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+\.[\w.]+\b")
_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
_NAME = re.compile(r"\b[A-Z][a-z]+ [A-Z][a-z]+\b")
_SHORT = re.compile(r"(?i)\b(keep (it|the answer|your answer|the reply) (short|brief)|be brief|briefly|"
                    r"in one sentence|short answer|just the essentials)\b")
_LANG = re.compile(r"(?i)\b(?:answer|reply|respond|write back)\b[^.?!]{0,25}\bin (English|French|Spanish|German)\b")
_REPORT = re.compile(r"(?i)\b(if anything fails|tell me (exactly )?what went wrong|report any failure)")
ADMIT = ("could not", "couldn't", "unable", "failed", "did not respond", "didn't respond", "did not go through",
          "no pude", "n'ai pas pu", "konnte", "timed out", "unreachable")
_WORD = re.compile(r"[a-zà-ÿ]+")
_QUOTES = re.compile(r'"[^"]*"|«[^»]*»')


def is_error(content: str) -> bool:
    """Whether a tool message's content is an error result."""
    return content.startswith('{"error"')


def field_words(field: str) -> tuple[str, ...]:
    """The phrases that name ``field`` in a request (:data:`FIELD_WORDS`, else its name's words; ids none)."""
    if field in FIELD_WORDS:
        return FIELD_WORDS[field]
    if field.endswith("_id") or field in ("id", "count", "result", "name", "date", "title", "type", "kind", "text"):
        return ()
    return (field.replace("_", " "),)


def _says(text: str, phrase: str) -> bool:
    return re.search(rf"(?<![a-z]){re.escape(phrase)}s?(?![a-z])", text) is not None


def output_pairs(output: Any) -> list[tuple[str, Any]]:
    """``(field, value)`` of a tool output: top-level scalars and the fields of the items of its lists."""
    if not isinstance(output, dict):
        return []
    out: list[tuple[str, Any]] = []
    for k, v in output.items():
        if isinstance(v, list):
            out += [(f, x) for item in v if isinstance(item, dict) for f, x in item.items()
                    if not isinstance(x, dict | list)]
        elif not isinstance(v, dict):
            out.append((k, v))
    return out


def _shown(value: Any) -> str | None:
    """How a value is written in an answer (None for values an answer cannot state: None, booleans, blobs)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = str(value)
    return text if 0 < len(text) <= 60 else None


def requested_fields(query: str, outputs: list[Any]) -> dict[str, list[str]]:
    """``{field: [values it took]}`` for every output field the request names (:func:`field_words`).

    ``outputs`` are the successful calls' results in call order; a field counts once, with every value
    any output gave it (an answer that states one of them states the field).
    """
    q = query.lower()
    want: dict[str, list[str]] = {}
    for out in outputs:
        for f, v in output_pairs(out):
            shown = _shown(v)
            if shown is None or not any(_says(q, w) for w in field_words(f)):
                continue
            want.setdefault(f, [])
            if shown not in want[f]:
                want[f].append(shown)
    return want


@dataclass(frozen=True)
class Constraints:
    """The constraints a request states."""

    short: bool = False
    """The user asks for a short answer (at most :data:`SHORT_WORDS` words)."""
    language: str | None = None
    """The language the answer must be in (a key of :data:`LANGUAGES`), None if unstated."""
    report_failures: bool = False
    """The user asks to be told what failed."""


def constraints(query: str) -> Constraints:
    """The constraints a request states (phrases in the module's patterns)."""
    m = _LANG.search(query)
    return Constraints(short=_SHORT.search(query) is not None, language=m.group(1).capitalize() if m else None,
                       report_failures=_REPORT.search(query) is not None)


def answer_language(text: str) -> str | None:
    """The language whose function words are most frequent in ``text``, quoted passages ("...", «...»: a
    tool's own words) left out; None without any."""
    words = _WORD.findall(_QUOTES.sub(" ", text).lower())
    counts = {lang: sum(w in stop for w in words) for lang, stop in LANGUAGES.items()}
    best = max(counts, key=lambda k: counts[k])
    return best if counts[best] > 0 else None


def _shape(value: str) -> str | None:
    m = _ID.fullmatch(value)
    if m:
        return "id:" + re.match(r"[A-Z]+", value).group(0)
    if _EMAIL.fullmatch(value):
        return "email"
    if _DATE.fullmatch(value):
        return "date"
    if _NAME.fullmatch(value):
        return "name"
    return None


def _identifiers(text: str) -> set[str]:
    return set(_ID.findall(text)) | set(_EMAIL.findall(text)) | set(_DATE.findall(text)) | set(_NAME.findall(text))


def _args(call: dict) -> dict:
    try:
        a = json.loads(call["function"]["arguments"])
    except (ValueError, TypeError):
        return {}
    return a if isinstance(a, dict) else {}


def wrong_entity_args(messages: list[dict]) -> list[tuple[str, str]]:
    """``(call id, value)`` of arguments that name another entity than the request's (see the module docstring)."""
    query = "\n".join(m["content"] for m in messages if m["role"] == "user")
    stated = _identifiers(query)
    calls = [(c, _args(c)) for m in messages if m["role"] == "assistant" for c in (m.get("tool_calls") or [])]
    used = {str(v) for _, a in calls for v in a.values() if isinstance(v, str | int | float)}
    unused = {_shape(u) for u in stated - used} - {None}
    if not unused:
        return []
    seen = ""
    flagged = []
    for m in messages:
        if m["role"] == "tool":
            seen += "\n" + m["content"]
        elif m["role"] == "assistant":
            for c in m.get("tool_calls") or []:
                for v in _args(c).values():
                    if isinstance(v, str) and v not in query and v in seen and _shape(v) in unused:
                        flagged.append((c["id"], v))
    return flagged


def rule_failures(messages: list[dict]) -> list[str]:
    """The rules (:data:`RULES`) a conversation breaks, in rule order; empty when it passes them all."""
    query = "\n".join(m["content"] for m in messages if m["role"] == "user")
    assistants = [m for m in messages if m["role"] == "assistant"]
    tools = [m for m in messages if m["role"] == "tool"]
    final = assistants[-1]["content"] if assistants and not assistants[-1].get("tool_calls") else None
    fails: list[str] = []
    if not tools:
        fails.append("no_tool_call")
    elif all(is_error(m["content"]) for m in tools):
        fails.append("all_calls_failed")
    if final is None or not final.strip():
        return fails + ["no_final_answer"]
    outputs = []
    for m in tools:
        if not is_error(m["content"]):
            try:
                outputs.append(json.loads(m["content"]))
            except ValueError:
                continue
    want = requested_fields(query, outputs)
    if any(not any(v in final for v in vals) for vals in want.values()):
        fails.append("answer_missing_fields")
    if wrong_entity_args(messages):
        fails.append("wrong_entity")
    if constraint_broken(query, final, tools):
        fails.append("constraint_ignored")
    return fails


def constraint_broken(query: str, final: str, tools: list[dict]) -> bool:
    """Whether ``final`` breaks a constraint of ``query`` (:func:`constraints`)."""
    c = constraints(query)
    if c.short and len(final.split()) > SHORT_WORDS:
        return True
    if c.language is not None and answer_language(final) != c.language:
        return True
    if c.report_failures:
        ok_tools = {m["name"] for m in tools if not is_error(m["content"])}
        failed = {m["name"] for m in tools if is_error(m["content"])} - ok_tools
        if failed and not any(a in final.lower() for a in ADMIT):
            return True
    return False
