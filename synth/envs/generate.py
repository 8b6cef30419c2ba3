"""QA dependency graphs generated programmatically from the bundled servers' seeded databases.

The facts are real rows of ``synth.servers.db.make_database(domain, seed, variant)``. A database is profiled
once (:func:`profile_database`): its *keys* (columns whose values are unique and identifier-like) and its
*foreign keys* (a column whose values all occur in another table's id key, e.g. ``orders.customer_id`` ->
``customers.customer_id``). A multi-hop question follows a foreign-key path from a start row named in the
prompt: each hop is one atomic sub-question answered by one lookup ("what is the product_id of the order whose
order_id is OR-1042?"), the next hop looks up the answer, and the last hop asks an attribute.

Shapes (``structure``):

- ``multi-hop``: one chain of 2..H tool hops (serial dependencies);
- ``parallel-multi-hop``: two independent chains (``parallel`` roots) joined by a reasoning node that sums two
  numbers or compares two values (no tool);
- ``single-hop``: one lookup (only when the database has no foreign key to follow).

An LLM backend that decomposes questions from a text corpus would produce the same :class:`QAPlan`; none is
bundled (no model downloads at run time).
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from synth.envs.compile import LookupTool, lookup_tool, singular
from synth.envs.models import QANode, Structure
from synth.envs.reward import canonical_answer

__all__ = ["Key", "ForeignKey", "DbProfile", "QAPlan", "profile_database", "sample_plan", "fk_paths"]

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")
_NATURAL = ("name", "email", "title", "city", "ingredient", "subject")


@dataclass(frozen=True)
class Key:
    """A unique, identifier-like column of a table."""

    table: str
    column: str


@dataclass(frozen=True)
class ForeignKey:
    """``table.column`` values all occur in ``ref.table``'s id key ``ref.column``."""

    table: str
    column: str
    ref: Key


@dataclass(frozen=True)
class DbProfile:
    """Keys and foreign keys of one database."""

    keys: dict[str, list[str]]
    """Table -> its unique identifier-like columns (id key first)."""
    fks: list[ForeignKey]
    """Foreign keys found by value inclusion."""


@dataclass
class QAPlan:
    """A generated QA dependency graph with the lookup tools its nodes need (before merging)."""

    nodes: list[QANode]
    tools: dict[str, LookupTool]
    """Node id -> the lookup tool its golden call uses (tool nodes only)."""
    main_question: str
    main_answer: str
    structure: Structure
    prompt: str
    tables: list[str] = field(default_factory=list)


def _is_id(col: str) -> bool:
    return col == "id" or col.endswith("_id")


def profile_database(db: dict[str, list[dict[str, Any]]]) -> DbProfile:
    """Find keys (unique identifier-like columns) and foreign keys (value inclusion into an id key)."""
    keys: dict[str, list[str]] = {}
    for table, rows in db.items():
        if len(rows) < 2:
            continue
        cols = [c for c in rows[0] if all(c in r for r in rows)]
        found = []
        for c in cols:
            vals = [r[c] for r in rows]
            if any(v is None or isinstance(v, bool | float | dict | list) for v in vals):
                continue
            if len(set(map(str, vals))) != len(vals):
                continue
            if isinstance(vals[0], str) and any(_DATE.match(v) for v in vals if isinstance(v, str)):
                continue
            if _is_id(c) or c in _NATURAL:
                found.append(c)
        found.sort(key=lambda c: (not _is_id(c), c != f"{singular(table)}_id"))
        if found:
            keys[table] = found
    fks: list[ForeignKey] = []
    for table, rows in db.items():
        if not rows:
            continue
        for col in rows[0]:
            vals = {str(r.get(col)) for r in rows if r.get(col) is not None}
            if len(vals) < 2:
                continue
            for ref_table, ref_cols in keys.items():
                k = ref_cols[0]
                if ref_table == table and col == k:
                    continue
                if not (_is_id(col) or col == k) or not (_is_id(k) or col == k):
                    continue
                ref_vals = {str(r[k]) for r in db[ref_table]}
                if vals <= ref_vals:
                    fks.append(ForeignKey(table, col, Key(ref_table, k)))
    return DbProfile(keys=keys, fks=fks)


def fk_paths(profile: DbProfile, start: str, max_len: int) -> list[list[ForeignKey]]:
    """All foreign-key paths from ``start`` with 1..max_len edges that never revisit a table twice in a row."""
    out: list[list[ForeignKey]] = []

    def walk(table: str, path: list[ForeignKey]) -> None:
        if path:
            out.append(list(path))
        if len(path) >= max_len:
            return
        for fk in profile.fks:
            if fk.table == table and all(p.ref != fk.ref or p.column != fk.column for p in path):
                walk(fk.ref.table, path + [fk])

    walk(start, [])
    return out


def _attrs(tool: LookupTool, row: dict[str, Any]) -> list[str]:
    """Columns of ``row`` a final question may ask: returned by ``tool``, scalar, not an id or the key."""
    return [c for c in tool.columns() if c != tool.key and row.get(c) is not None
            and not isinstance(row[c], dict | list) and c != "updated_at" and not _is_id(c)]


def _find(rows: list[dict[str, Any]], col: str, value: Any) -> dict[str, Any] | None:
    for r in rows:
        if str(r.get(col)) == str(value):
            return r
    return None


@dataclass
class _Chain:
    nodes: list[QANode]
    tools: dict[str, LookupTool]
    desc: str
    attr: str
    value: Any
    tables: list[str]


def _chain(db, domain: str, profile: DbProfile, rng: random.Random, path: list[ForeignKey], prefix: str,
           start_key: str | None = None, avoid_rows: Sequence[Any] = ()) -> _Chain | None:
    """One chain along ``path`` from a random start row; None if the sampled row breaks the path."""
    start = path[0].table if path else None
    if start is None:
        return None
    rows = db[start]
    candidates = [r for r in rows if r not in avoid_rows]
    if not candidates:
        return None
    row = rng.choice(candidates)
    key = start_key or rng.choice(profile.keys[start])
    table, value = start, row[key]
    desc = f"the {singular(start)} whose {key} is {canonical_answer(value)}"
    nodes: list[QANode] = []
    tools: dict[str, LookupTool] = {}
    tables = [start]
    prev: str | None = None
    hops = list(path) + [None]
    for i, fk in enumerate(hops):
        nid = f"{prefix}{i + 1}"
        tool = lookup_tool(domain, table, key, db[table])
        if fk is not None:  # a hop asks a column the tool returns, never its own input
            ask = fk.column
            answer = row.get(ask)
            if answer is None or ask == key or ask not in tool.columns() or \
                    canonical_answer(answer) == canonical_answer(value):
                return None
        else:
            choices = _attrs(tool, row)
            if not choices:
                return None
            ask = rng.choice(choices)
            answer = row[ask]
        shown = tool.field_of(ask)
        question = f"What is the {shown} of the {singular(table)} whose {key} is {canonical_answer(value)}?"
        nodes.append(QANode(id=nid, question=question, answer=canonical_answer(answer), tool=tool.name,
                            arguments={key: value}, depends_on=[prev] if prev else [],
                            mode="serial" if prev else "parallel"))
        tools[nid] = tool
        prev = nid
        if fk is None:
            return _Chain(nodes, tools, desc, shown, answer, tables)
        nxt = _find(db[fk.ref.table], fk.ref.column, answer)
        if nxt is None:
            return None
        desc = f"the {singular(fk.ref.table)} referenced by the {shown} of {desc}"
        table, key, value, row = fk.ref.table, fk.ref.column, nxt[fk.ref.column], nxt
        tables.append(table)
    return None


def _calls(chain: _Chain) -> set[str]:
    return {f"{n.tool}:{canonical_answer(n.arguments)}" for n in chain.nodes}


def sample_plan(db: dict[str, list[dict[str, Any]]], domain: str, rng: random.Random, *, hop_budget: int = 3,
                structure: Structure | None = None, profile: DbProfile | None = None,
                attempts: int = 50) -> QAPlan | None:
    """Sample one QA graph from ``db``; None when the database offers no graph of the requested shape.

    Parameters
    ----------
    hop_budget : int
        H, most tool hops on any path (>= 1). Multi-hop chains have 2..H hops.
    structure : {"multi-hop", "parallel-multi-hop", "single-hop"}, optional
        Requested shape; drawn at random (multi-hop or parallel) when None.
    """
    profile = profile or profile_database(db)
    starts = [t for t in profile.keys if db.get(t)]
    if not starts:
        return None
    if structure is None:
        structure = rng.choice(["multi-hop", "parallel-multi-hop"])
    for _ in range(attempts):
        start = rng.choice(starts)
        paths = [p for p in fk_paths(profile, start, max(0, hop_budget - 1))]
        if structure == "single-hop" or not paths:
            if structure != "single-hop":
                continue
            path: list[ForeignKey] = []
        else:  # a length first (uniform over the lengths this start offers), so long chains are not rare
            length = rng.choice(sorted({len(p) for p in paths}))
            path = rng.choice([p for p in paths if len(p) == length])
        if structure == "single-hop":
            chain = _single(db, domain, profile, rng, start)
            if chain is None:
                continue
            return QAPlan(nodes=chain.nodes, tools=chain.tools,
                          main_question=chain.nodes[0].question, main_answer=chain.nodes[0].answer or "",
                          structure="single-hop", prompt=_prompt(chain.nodes[0].question), tables=chain.tables)
        a = _chain(db, domain, profile, rng, path, "a")
        if a is None:
            continue
        if structure == "multi-hop":
            q = f"What is the {a.attr} of {a.desc}?"
            return QAPlan(nodes=a.nodes, tools=a.tools, main_question=q, main_answer=a.nodes[-1].answer or "",
                          structure="multi-hop", prompt=_prompt(q), tables=a.tables)
        key = next(iter(a.nodes[0].arguments))
        start_row = _find(db[start], key, a.nodes[0].arguments[key])
        b = None
        for _ in range(10):
            b = _chain(db, domain, profile, rng, path, "b", start_key=key, avoid_rows=[start_row])
            if b is not None and b.attr != a.attr:
                b = None
            if b is not None and (_calls(a) & _calls(b) or b.value is None):
                b = None
            if b is not None:
                break
        if b is None:
            continue
        return _join(a, b)
    return None


def _single(db, domain, profile, rng, start) -> _Chain | None:
    row = rng.choice(db[start])
    key = rng.choice(profile.keys[start])
    tool = lookup_tool(domain, start, key, db[start])
    choices = _attrs(tool, row)
    if not choices:
        return None
    ask = rng.choice(choices)
    shown = tool.field_of(ask)
    q = f"What is the {shown} of the {singular(start)} whose {key} is {canonical_answer(row[key])}?"
    node = QANode(id="a1", question=q, answer=canonical_answer(row[ask]), tool=tool.name,
                  arguments={key: row[key]}, depends_on=[], mode="parallel")
    return _Chain([node], {"a1": tool}, "", shown, row[ask], [start])


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _join(a: _Chain, b: _Chain) -> QAPlan:
    if _number(a.value) and _number(b.value):
        total = round(a.value + b.value, 2)
        q = f"What is the {a.attr} of {a.desc} plus the {b.attr} of {b.desc}?"
        agg_q = f"What is {canonical_answer(a.value)} + {canonical_answer(b.value)}?"
        answer = canonical_answer(total)
    else:
        q = f"Do {a.desc} and {b.desc} have the same {a.attr}? Answer yes or no."
        agg_q = f"Is {canonical_answer(a.value)} the same as {canonical_answer(b.value)}?"
        answer = "yes" if canonical_answer(a.value) == canonical_answer(b.value) else "no"
    agg = QANode(id="c1", question=agg_q, answer=answer, tool=None, arguments=None,
                 depends_on=[a.nodes[-1].id, b.nodes[-1].id], mode="serial")
    return QAPlan(nodes=a.nodes + b.nodes + [agg], tools={**a.tools, **b.tools}, main_question=q,
                  main_answer=answer, structure="parallel-multi-hop", prompt=_prompt(q),
                  tables=sorted(set(a.tables + b.tables)))


def _prompt(question: str) -> str:
    return (f"{question} Use the tools to look up every fact you need; call a tool again only when you need a "
            f"new fact.")
