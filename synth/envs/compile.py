"""Compile tool-needing sub-questions into executable tools, and merge similar tools with unique names.

Each tool-needing node of a QA graph generated from a bundled database asks for one fact of one row, found by
a unique column ("the order whose order_id is OR-1042"). It compiles into a :class:`LookupTool`: an OpenAI
schema with that column as the one required parameter, and standard-library Python source that embeds the
table's real rows and returns the matching row as a JSON object (or an ``error`` object when nothing matches).
The source is pure and deterministic; it runs only in :mod:`synth.envs.sandbox`.

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

__all__ = ["LookupTool", "singular", "merge_tools", "lookup_tool"]


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
    """Tool description shown to the policy."""

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

    def schema(self) -> dict[str, Any]:
        """The OpenAI function schema."""
        entity = singular(self.table)
        return {"type": "function", "function": {
            "name": self.name,
            "description": self.description or f"Look up one {entity} by its {self.key} and return the "
                                               f"{entity} record (fields: {', '.join(self.fields())}).",
            "parameters": {"type": "object",
                           "properties": {self.key: {"type": self.key_type,
                                                     "description": f"the {entity}'s {self.key} "
                                                                    f"(exact value, case-insensitive)"}},
                           "required": [self.key], "additionalProperties": False}}}

    def fields(self) -> list[str]:
        """Columns of the returned record (union over the embedded rows, first-seen order)."""
        out: list[str] = []
        for r in self.rows:
            out += [k for k in r if k not in out]
        return out

    def source(self) -> ToolSource:
        """Standard-library Python source defining ``def <name>(<key>)``."""
        data = json.dumps(list(self.rows), ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        entity = singular(self.table)
        code = (
            f'"""{self.name}: look up a {entity} by {self.key} (compiled by toolscale synth.envs from '
            f'{self.domain}.{self.table})."""\n'
            "import json\n\n"
            f"_ROWS = json.loads({data!r})\n"
            f"_KEY = {self.key!r}\n\n\n"
            "def _norm(value):\n"
            "    return str(value).strip().casefold()\n\n\n"
            "_INDEX = {}\n"
            "for _row in _ROWS:\n"
            "    _INDEX.setdefault(_norm(_row[_KEY]), _row)\n\n\n"
            f"def {self.name}({self.key}):\n"
            f'    """Return the {entity} whose {self.key} equals the argument."""\n'
            f"    row = _INDEX.get(_norm({self.key}))\n"
            "    if row is None:\n"
            f'        return {{"error": "no {entity} with {self.key} " + json.dumps({self.key}, ensure_ascii=False)}}\n'
            "    return dict(row)\n")
        return ToolSource(name=self.name, source=code)


def lookup_tool(domain: str, table: str, key: str, rows: Sequence[dict[str, Any]], *,
                name: str | None = None) -> LookupTool:
    """A lookup tool over ``rows`` of ``domain.table`` keyed by ``key`` (default name ``get_<entity>_by_<key>``)."""
    entity = singular(table)
    return LookupTool(name=name or f"get_{entity}_by_{key}", domain=domain, table=table, key=key, rows=tuple(dict(r) for r in rows))


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
