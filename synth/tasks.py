"""Tasks from chains: concrete query values from a database, the user query, deterministic augmentation.

A task instantiates a :class:`~synth.plans.Chain` against one database instance: every query-bound
argument gets a value drawn from the database (``row:TABLE.COL`` values of one call come from one row, so
a search finds something), and the user query is rendered from the tools' intents. Augmentation is
template-based and seeded: *paraphrase* (opener and connectives), *complication* (an extra constraint
sentence) and *persona* (who is asking), each chosen by the task's own random stream.
"""

from __future__ import annotations

import json
import random
from typing import Any

from synth.plans import Call, Chain, Plan, ServerSpec, render_intent
from synth.servers.db import CITIES, FIRST, LAST
from synth.transforms import display
from synth import phrasing as _ph

__all__ = ["sample_value", "instantiate", "render_query", "PERSONAS", "COMPLICATIONS"]

PERSONAS = _ph.PERSONAS
COMPLICATIONS = _ph.COMPLICATIONS


def sample_value(source: str, db: dict[str, list[dict]], rng: random.Random, row_cache: dict[str, dict]) -> Any:
    """One query value for a parameter source (``row:T.C``, ``col:T.C``, ``names``, ``int:A:B``,
    ``choice:A|B``, ``pick:JSON-LIST``, ``gen:TYPE:NAME``); None when the database has no such value."""
    kind, _, rest = source.partition(":")
    if kind in ("row", "col"):
        table, _, col = rest.partition(".")
        rows = db.get(table) or []
        if not rows:
            return None
        if kind == "row":
            row = row_cache.get(table)
            if row is None:
                row = row_cache[table] = rng.choice(rows)
        else:
            row = rng.choice(rows)
        return row.get(col)
    if kind == "names":
        return f"{rng.choice(FIRST)} {rng.choice(LAST)}"
    if kind == "int":
        lo, hi = rest.split(":")
        return rng.randint(int(lo), int(hi))
    if kind == "pick":
        return rng.choice(json.loads(rest))
    if kind == "choice":
        return rng.choice(rest.split("|"))
    if kind == "gen":
        return _gen_value(rest, rng)
    return None


def _gen_value(rest: str, rng: random.Random) -> Any:
    typ, _, name = rest.partition(":")
    if typ == "integer":
        return rng.randint(1, 9)
    if typ == "number":
        return rng.randint(5, 500)
    if typ == "boolean":
        return rng.random() < 0.5
    if typ.startswith("enum="):
        return rng.choice(typ[5:].split("|"))
    low = name.lower()
    if "date" in low:
        return f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    if "name" in low or "user" in low or "author" in low:
        return f"{rng.choice(FIRST)} {rng.choice(LAST)}"
    if "city" in low:
        return rng.choice(CITIES)
    if "email" in low:
        return f"{rng.choice(FIRST).lower()}@example.com"
    return f"{name.split('_')[0]}-{rng.randint(100, 999)}"


def instantiate(chain: Chain, db: dict[str, list[dict]], rng: random.Random,
                spec: ServerSpec | None = None) -> list[Call] | None:
    """Calls with concrete query values (None when the database lacks a needed value); with ``spec``,
    array-typed parameters are marked ``listed`` (a single value is sent as a one-item list)."""
    calls = []
    for i, step in enumerate(chain.steps):
        props = spec.docs[step.tool].parameters.get("properties", {}) if spec and step.tool in spec.docs else {}
        listed = {p for p, _ in step.args if isinstance(props.get(p), dict) and props[p].get("type") == "array"}
        cache: dict[str, dict] = {}
        args: dict[str, Any] = {}
        for p, arg in step.args:
            if arg[0] == "q":
                v = sample_value(arg[1], db, rng, cache)
                if v is None:
                    return None
                args[p] = ("q", v)
            else:
                args[p] = arg
        calls.append(Call(idx=i, tool=step.tool, args=args, turn=chain.turns[i], side=False, listed=listed))
    return calls


def render_query(plan: Plan, spec: ServerSpec, rng: random.Random) -> tuple[str, list[str]]:
    """The user query of a plan and the augmentations applied.

    Every call contributes one of its tool's phrasings (:mod:`synth.phrasing`; hidden calls too: a
    skipped lookup is still asked for); values of query-bound arguments are stated unless the call marks
    them ``vague`` (a memorised constant, worded by :func:`synth.phrasing.vague`), in their transformed
    form when the call marks them in ``transforms`` (:func:`synth.transforms.display`).
    """
    parts = []
    for c in plan.ordered():
        def values(p: str, c: Call = c) -> tuple[str, Any]:
            a = c.args.get(p)
            if a is None:
                return "ref", None
            if a[0] == "q":
                if p in c.vague:
                    return "vague", _ph.vague(p, rng)
                if p in c.transforms:
                    return "q", display(a[1], c.transforms[p], rng)
                return "q", a[1]
            return "ref", None
        options = spec.phrasings.get(c.tool) or (spec.intents.get(c.tool, f"use {c.tool}"),)
        parts.append(render_intent(options[rng.randrange(len(options))], values))
    aug = ["paraphrase"]
    body = parts[0]
    for p in parts[1:]:
        joint = rng.choice(_ph.CONNECTIVES)
        body += joint + (p[:1].upper() + p[1:] if joint.rstrip().endswith(".") else p)
    frame = rng.choice(_ph.OPENERS)
    text = frame.format(x=body, X=body[:1].upper() + body[1:])
    if rng.random() < 0.35:
        text = rng.choice(_ph.PERSONAS) + " " + text
        aug.append("persona")
    if rng.random() < 0.35:
        text = text + " " + rng.choice(_ph.COMPLICATIONS)
        aug.append("complication")
    return text, aug
