"""Compile tool-needing sub-questions into executable tools, and merge similar tools with unique names.

Each tool-needing node of a QA graph generated from a bundled database asks for one fact of one row, found by
a unique column ("the order whose order_id is OR-1042"). It compiles into a :class:`LookupTool`: an OpenAI
schema with that column as the one required parameter, and standard-library Python source that embeds the
table's real rows and returns the matching record as a JSON object (or an ``error`` object when nothing
matches). The source is pure and deterministic; it runs only in :mod:`synth.envs.sandbox`.

Aligned names (:func:`aligned_spec`): a lookup is named and shaped like the tool the SFT data teaches for it.
Where a bundled server documents a ``get`` tool over the same table and key (``get_flight(flight_id)``), the
lookup takes that tool's name, description, parameter description and output fields (with its renames, e.g.
``destination`` -> ``arrival_city``). Other id lookups follow the catalogue's convention, ``get_<entity>``
(``get_customer(customer_id)``); lookups by another column are ``get_<entity>_by_<column>``.

Merging (:func:`merge_tools`): nodes that look up the same table by the same column share one tool, whose
embedded rows are the union. Tools with *different* behaviour never share a name: a later one is renamed
``name_2``, ``name_3``... and the caller rewrites its golden calls with the returned names. Nothing is ever
dropped, unlike a name-indexed dict merge.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from synth.envs.models import ToolSource

__all__ = ["LookupTool", "singular", "merge_tools", "lookup_tool", "aligned_spec", "AlignedSpec"]


def singular(table: str) -> str:
    """A table name's entity noun: ``orders`` -> ``order``, ``categories`` -> ``category``."""
    if table.endswith("ies") and len(table) > 4:
        return table[:-3] + "y"
    if table.endswith(("sses", "shes", "ches", "xes")):
        return table[:-2]
    if table.endswith("s") and not table.endswith("ss"):
        return table[:-1]
    return table


@dataclass(frozen=True)
class AlignedSpec:
    """How the SFT world names and shapes a lookup of ``table`` by ``key`` (see the module docstring)."""

    name: str
    """Tool name."""
    description: str = ""
    """Tool description ('' builds one from the output fields)."""
    key_description: str = ""
    """Description of the one parameter ('' builds one)."""
    returns: tuple[str, ...] = ()
    """Table columns the tool returns, in order (empty: every column)."""
    rename: tuple[tuple[str, str], ...] = ()
    """``(column, output field)`` pairs: what the output calls a column."""


def _catalog_gets(domain: str) -> list[Any]:
    try:
        from synth.servers.catalog import SERVERS
    except ImportError:  # the catalogue is optional for this module
        return []
    server = SERVERS.get(domain)
    return [t for t in server.tools if t.kind == "get"] if server else []


def aligned_spec(domain: str, table: str, key: str) -> AlignedSpec:
    """The name and shape the SFT data teaches for looking up ``domain.table`` by ``key``.

    >>> aligned_spec("travel", "flights", "flight_id").name, aligned_spec("shop", "customers", "customer_id").name
    ('get_flight', 'get_customer')
    >>> aligned_spec("hr", "employees", "name").name
    'get_employee_by_name'
    """
    gets = _catalog_gets(domain)
    for t in gets:
        if t.table == table and (t.key or "") == key and len(t.params) == 1 and t.params[0].name == key:
            return AlignedSpec(name=t.name, description=t.description, key_description=t.params[0].description,
                               returns=tuple(t.returns), rename=tuple(sorted(t.rename.items())))
    entity = singular(table)
    taken = {t.name for t in gets}
    if key == f"{entity}_id" and f"get_{entity}" not in taken:
        return AlignedSpec(name=f"get_{entity}", key_description=f"{entity.replace('_', ' ').capitalize()} identifier")
    return AlignedSpec(name=f"get_{entity}_by_{key}")


@dataclass(frozen=True)
class LookupTool:
    """A compiled lookup tool over one table of one database."""

    name: str
    """Tool name (unique within an environment after :func:`merge_tools`)."""
    domain: str
    """Bundled server domain of the table."""
    table: str
    """Table looked up."""
    key: str
    """Unique column used as the single parameter."""
    rows: tuple[dict[str, Any], ...] = field(default=(), compare=False)
    """Rows embedded in the source (real rows of the database)."""
    description: str = ""
    """Tool description shown to the policy ('' builds one)."""
    key_description: str = ""
    """Description of the parameter ('' builds one)."""
    returns: tuple[str, ...] = ()
    """Columns returned, in order (empty: every column of the row)."""
    rename: tuple[tuple[str, str], ...] = ()
    """``(column, output field)`` pairs."""

    @property
    def signature(self) -> tuple[str, str, str]:
        """What the tool does: tools with one signature are merged."""
        return (self.domain, self.table, self.key)

    @property
    def key_type(self) -> str:
        """JSON-schema type of the parameter (``integer`` when every key value is an int)."""
        values = [r.get(self.key) for r in self.rows]
        ok = values and all(isinstance(v, int) and not isinstance(v, bool) for v in values)
        return "integer" if ok else "string"

    def columns(self) -> list[str]:
        """Table columns the tool returns (``returns``, or the union over the rows in first-seen order)."""
        if self.returns:
            return [c for c in self.returns if any(c in r for r in self.rows)]
        out: list[str] = []
        for r in self.rows:
            out += [k for k in r if k not in out]
        return out

    def field_of(self, column: str) -> str:
        """The output field name of a table column."""
        return dict(self.rename).get(column, column)

    def fields(self) -> list[str]:
        """Fields of the returned record, in order."""
        return [self.field_of(c) for c in self.columns()]

    def record(self, row: dict[str, Any]) -> dict[str, Any]:
        """What the tool returns for ``row``: the returned columns under their output names."""
        return {self.field_of(c): row[c] for c in self.columns() if c in row}

    def schema(self) -> dict[str, Any]:
        """The OpenAI function schema."""
        entity = singular(self.table)
        shown = [f for f in self.fields() if f != self.field_of(self.key)]
        desc = self.description or f"Get one {entity}'s details ({', '.join(shown)}) by {self.key}."
        return {"type": "function", "function": {
            "name": self.name, "description": desc,
            "parameters": {"type": "object",
                           "properties": {self.key: {"type": self.key_type,
                                                     "description": self.key_description
                                                     or f"the {entity}'s {self.key} (exact value)"}},
                           "required": [self.key], "additionalProperties": False}}}

    def source(self) -> ToolSource:
        """Standard-library Python source defining ``def <name>(<key>)``."""
        records = [{"key": r.get(self.key), "record": self.record(r)} for r in self.rows]
        data = json.dumps(records, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        entity = singular(self.table)
        code = (
            f'"""{self.name}: look up a {entity} by {self.key} (compiled by toolscale synth.envs from '
            f'{self.domain}.{self.table})."""\n'
            "import json\n\n"
            f"_ROWS = json.loads({data!r})\n\n\n"
            "def _norm(value):\n"
            "    return str(value).strip().casefold()\n\n\n"
            "_INDEX = {}\n"
            "for _row in _ROWS:\n"
            '    _INDEX.setdefault(_norm(_row["key"]), _row["record"])\n\n\n'
            f"def {self.name}({self.key}):\n"
            f'    """Return the {entity} whose {self.key} equals the argument."""\n'
            f"    row = _INDEX.get(_norm({self.key}))\n"
            "    if row is None:\n"
            f'        return {{"error": "no {entity} with {self.key} " + json.dumps({self.key}, ensure_ascii=False)}}\n'
            "    return dict(row)\n")
        return ToolSource(name=self.name, source=code)


def lookup_tool(domain: str, table: str, key: str, rows: Sequence[dict[str, Any]], *,
                name: str | None = None) -> LookupTool:
    """A lookup tool over ``rows`` of ``domain.table`` keyed by ``key``, named and shaped as the SFT data teaches
    (:func:`aligned_spec`); ``name`` overrides the name only."""
    spec = aligned_spec(domain, table, key)
    return LookupTool(name=name or spec.name, domain=domain, table=table, key=key,
                      rows=tuple(dict(r) for r in rows), description=spec.description,
                      key_description=spec.key_description, returns=spec.returns, rename=spec.rename)


def merge_tools(tools: Sequence[LookupTool]) -> tuple[list[LookupTool], list[str]]:
    """Merge tools with one signature; give different tools different names.

    Returns
    -------
    merged : list of LookupTool
        One tool per signature, in first-seen order; rows are the union (deduplicated by key value).
    names : list of str
        For each input tool, the name of the merged tool that now serves it (rewrite golden calls with it).
    """
    by_sig: dict[tuple[str, str, str], LookupTool] = {}
    taken: dict[str, tuple[str, str, str]] = {}
    final_name: dict[tuple[str, str, str], str] = {}
    for t in tools:
        sig = t.signature
        if sig in by_sig:
            old = by_sig[sig]
            seen = {json.dumps(r.get(t.key), sort_keys=True) for r in old.rows}
            extra = tuple(r for r in t.rows if json.dumps(r.get(t.key), sort_keys=True) not in seen)
            by_sig[sig] = replace(old, rows=old.rows + extra)
            continue
        name = t.name
        k = 2
        while name in taken and taken[name] != sig:
            name = f"{t.name}_{k}"
            k += 1
        taken[name] = sig
        final_name[sig] = name
        by_sig[sig] = replace(t, name=name)
    return list(by_sig.values()), [final_name[t.signature] for t in tools]
