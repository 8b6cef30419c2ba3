"""Transformed values: derivable arguments the visible history shows in another form (``transform_rate``).

With ``Recipe.transform_rate = r``, each argument of each planned call is, with probability ``r``, made
*transformed*: the call still sends the canonical value (the one the server accepts), but the history the
agent sees shows it only in another form, so the agent has to convert it. The action stays derivable (the
injected labels in ``meta.nonderivable_calls`` do not count it), while an exact-match provenance check no
longer finds the value. This is the case where a groundedness probe is needed.

Kinds (:data:`KINDS`), each with the canonical value ``v`` and what the history shows:

- ``case``: letters change case (``OR-5658`` -> ``or-5658``; an all-lower value goes upper);
- ``whitespace``: separators change (``OR-5658`` -> ``OR 5658``, ``Ana Berg`` -> ``AnaBerg``);
- ``date``: ``YYYY-MM-DD`` reformatted (``2026-03-05`` -> ``March 5, 2026`` or ``05/03/2026``);
- ``unit``: a number shown in thousands (``250`` -> ``0.25k``);
- ``currency``: a number shown in cents (``12.5`` -> ``1250 cents``);
- ``sum`` / ``difference``: a number shown as arithmetic on two others (``42`` -> ``30 + 12`` / ``50 - 8``);
- ``id_lookup``: an id ``PREFIX-DIGITS`` shown as its number within a named register
  (``EM-6085`` -> ``number 6085 in the EM register``).

Where the value is shown: a query-bound argument's value is rendered transformed in the user query
(:func:`synth.tasks.render_query`); a reference-bound argument's value is rendered transformed in the
supplier's tool output, at the field the consumer reads (:func:`synth.rollout.execute`). Only arguments
a kind applies to can be transformed (:func:`applicable`); a planned transform is dropped when none does.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

__all__ = ["KINDS", "applicable", "display", "pick_transforms", "shown_transformed", "transformed_arguments"]

KINDS: tuple[str, ...] = ("case", "whitespace", "date", "unit", "currency", "sum", "difference", "id_lookup")
"""Transform kinds, in a fixed order (the random choice among the applicable ones is seeded)."""

_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_ID = re.compile(r"^([A-Za-z]{1,4})-(\d{2,})$")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def applicable(value: Any) -> list[str]:
    """Kinds that can transform ``value`` (in :data:`KINDS` order); empty for booleans, None and containers."""
    if _is_number(value):
        out = ["unit", "currency"]
        if isinstance(value, int) and value >= 2:
            out += ["sum", "difference"]
        return out
    if not isinstance(value, str) or not value.strip():
        return []
    if _DATE.match(value):
        return ["date"]
    out = []
    if any(ch.isalpha() for ch in value) and (value.lower() != value or value.upper() != value):
        out.append("case")
    if re.search(r"[-_ ]", value):
        out.append("whitespace")
    if _ID.match(value):
        out.append("id_lookup")
    return out


def _num(x: float) -> str:
    return f"{x:.10g}"


def display(value: Any, kind: str, rng: random.Random) -> str:
    """What the visible history shows for ``value`` under ``kind`` (see the module docstring).

    Raises ValueError when ``kind`` does not apply to ``value`` (use :func:`applicable` first).
    """
    if kind not in applicable(value):
        raise ValueError(f"transform {kind!r} does not apply to {value!r}")
    if kind == "case":
        low = value.lower()
        return low if low != value else value.upper()
    if kind == "whitespace":
        if re.search(r"[-_]", value):
            return re.sub(r"[-_]", " ", value)
        return value.replace(" ", "")
    if kind == "date":
        y, m, d = _DATE.match(value).groups()
        if rng.random() < 0.5:
            return f"{_MONTHS[int(m) - 1]} {int(d)}, {y}"
        return f"{d}/{m}/{y}"
    if kind == "unit":
        return f"{_num(value / 1000)}k"
    if kind == "currency":
        return f"{_num(round(value * 100, 6))} cents"
    if kind == "sum":
        x = rng.randint(1, value - 1)
        return f"{x} + {value - x}"
    if kind == "difference":
        y = rng.randint(1, max(2, value))
        return f"{value + y} - {y}"
    prefix, digits = _ID.match(value).groups()
    return f"number {digits} in the {prefix} register"


def pick_transforms(calls: list[Any], rng: random.Random, rate: float) -> None:
    """Set ``call.transforms[param] = kind`` for a share ``rate`` of the arguments (in place).

    Each argument of each call, in call then parameter order, is transformed with probability ``rate``
    (one draw per argument, so a rate of 0 draws nothing and leaves the random stream untouched); the kind is
    drawn among the applicable ones. A query-bound argument's applicability is known from its value; a
    reference-bound one's is only known at rollout, so it gets a kind later (``"*"`` marks it).
    """
    if rate <= 0:
        return
    for c in calls:
        for p, a in sorted(c.args.items()):
            if rng.random() >= rate:
                continue
            if a[0] == "q":
                kinds = applicable(a[1])
                if kinds:
                    c.transforms[p] = kinds[rng.randrange(len(kinds))]
            else:
                c.transforms[p] = "*"


def shown_transformed(calls: list[Any], trace_transformed: list[tuple[Any, str]]) -> dict[str, str]:
    """``canonical value (compact JSON) -> kind`` of every value the conversation shows only transformed.

    Query-bound values come from the calls' ``transforms`` (not the ``vague`` ones, which the query omits);
    output values from the rollout's record (``Trace.transformed``).
    """
    out: dict[str, str] = {}
    for c in calls:
        for p, kind in sorted(c.transforms.items()):
            a = c.args.get(p)
            if a is not None and a[0] == "q" and p not in c.vague and kind != "*":
                out.setdefault(json.dumps(a[1]), kind)
    for value, kind in trace_transformed:
        out.setdefault(json.dumps(value), kind)
    return out


def transformed_arguments(missing: tuple[str, ...], args: dict[str, Any], shown: dict[str, str]) -> dict[str, str] | None:
    """``param -> kind`` when every argument exact matching missed is shown transformed, else None.

    Such an action is derivable (through the transform); any other missing argument keeps it non-derivable.
    """
    out = {}
    for p in missing:
        if p not in args or json.dumps(args[p]) not in shown:
            return None
        out[p] = shown[json.dumps(args[p])]
    return out
