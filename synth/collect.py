"""Collect tool documents from MCP servers over stdio, or import ASTRA's ``mcp_servers.jsonl``.

This module is the one adapter between the MCP SDK's ``Tool`` (``name``, ``description``,
``input_schema``) and our frozen :class:`~synth.models.ToolDoc`. Schemas are normalised to plain
OpenAI function parameters: ``title`` keys dropped, ``anyOf [T, null]`` collapsed to ``T`` (optional
arguments), ``default: null`` dropped.

Quarantine rules (ASTRA, seed 000 Q3), applied per server; quarantined items are counted and reported,
never fatal:

* a tool with an empty description;
* a duplicate tool name within a server (every tool of that name: which one is meant is ambiguous);
* a schema that does not convert (not an object schema, ``properties`` not a mapping, ``required``
  naming unknown properties, malformed JSON);
* a tool without an input schema (``parameters`` missing); a server none of whose tools has one is
  quarantined whole ("no tool has an input schema");
* a server left with fewer than ``min_tools`` tools (default :data:`MIN_TOOLS`, ASTRA's rule for pruning
  scraped registries; a server the user names gets ``min_tools = 1``: they chose it);
* a server that fails to start, crashes or hangs (the whole server).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from synth.errors import ServerError, ToolDocError, UsageError
from synth.live import LiveSessions, bundled_command, split_command
from synth.models import CollectedServer, CollectReport, Quarantined, ToolDoc
from synth.servers.db import DOMAINS

__all__ = ["MIN_TOOLS", "normalize_schema", "tool_doc", "output_schema_fields", "raw_tool", "screen_server",
           "collect_stdio", "collect_bundled",
           "import_astra", "store_report"]

MIN_TOOLS = 3
"""Servers with fewer usable tools are quarantined (ASTRA's rule)."""


def normalize_schema(schema: Any, tool: str = "?") -> dict[str, Any]:
    """A JSON-schema ``object`` for OpenAI function parameters; raises :class:`ToolDocError` if impossible."""
    if isinstance(schema, str):
        try:
            schema = json.loads(schema)
        except ValueError as err:
            raise ToolDocError(f"tool {tool!r}: parameters are not valid JSON ({err.msg} at char {err.pos})") \
                from None
    if schema is None:
        schema = {"type": "object", "properties": {}}
    if not isinstance(schema, dict):
        raise ToolDocError(f"tool {tool!r}: parameters must be a JSON object schema, got {type(schema).__name__}")
    if schema.get("type", "object") != "object":
        raise ToolDocError(f"tool {tool!r}: parameters must have type 'object', got {schema.get('type')!r}")
    props = schema.get("properties", {})
    if not isinstance(props, dict):
        raise ToolDocError(f"tool {tool!r}: 'properties' must be a mapping, got {type(props).__name__}")
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise ToolDocError(f"tool {tool!r}: 'required' must be a list of names, got {required!r}")
    unknown = [r for r in required if r not in props]
    if unknown:
        raise ToolDocError(f"tool {tool!r}: required {unknown} not among properties {sorted(props)}")
    clean_props = {}
    for k, v in props.items():
        if not isinstance(v, dict):
            raise ToolDocError(f"tool {tool!r}: property {k!r} must be a schema object, got {v!r}")
        clean_props[k] = _clean(v)
    out: dict[str, Any] = {"type": "object", "properties": clean_props, "required": list(required)}
    return out


def _clean(spec: dict[str, Any]) -> dict[str, Any]:
    spec = {k: v for k, v in spec.items() if k != "title" and not (k == "default" and v is None)}
    any_of = spec.get("anyOf")
    if isinstance(any_of, list):
        non_null = [s for s in any_of if not (isinstance(s, dict) and s.get("type") == "null")]
        if len(non_null) == 1 and isinstance(non_null[0], dict):
            rest = {k: v for k, v in spec.items() if k != "anyOf"}
            spec = {**_clean(non_null[0]), **rest}
    if isinstance(spec.get("items"), dict):
        spec["items"] = _clean(spec["items"])
    if isinstance(spec.get("properties"), dict):
        spec["properties"] = {k: _clean(v) if isinstance(v, dict) else v for k, v in spec["properties"].items()}
    return spec


def tool_doc(server: str, name: Any, description: Any, parameters: Any, output_fields: Sequence[str] = (),
             read_only: bool | None = None, destructive: bool | None = None) -> ToolDoc:
    """Convert one tool's raw fields to a :class:`ToolDoc` (raises :class:`ToolDocError` with the reason)."""
    if not isinstance(name, str) or not name.strip():
        raise ToolDocError(f"tool name must be a non-empty string, got {name!r}")
    if not isinstance(description, str) or not description.strip():
        raise ToolDocError(f"tool {name!r}: empty description")
    return ToolDoc(server=server, name=name, description=description.strip(),
                   parameters=normalize_schema(parameters, name), output_fields=list(output_fields),
                   read_only=read_only, destructive=destructive)


def output_schema_fields(schema: Any) -> list[str]:
    """Field names an MCP ``outputSchema`` declares: its properties, and those of the items of its array
    properties (the same reading as a result's fields); [] without a usable schema."""
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return []
    fields: list[str] = []
    for k, v in schema["properties"].items():
        items = v.get("items") if isinstance(v, dict) else None
        if isinstance(items, dict) and isinstance(items.get("properties"), dict):
            fields += [f for f in items["properties"] if f not in fields]
        elif k not in fields:
            fields.append(k)
    return fields


def raw_tool(t: Any) -> dict[str, Any]:
    """The MCP SDK's ``Tool`` as the raw dict :func:`screen_server` reads (the one place its fields are read)."""
    ann = getattr(t, "annotations", None)
    return {"name": t.name, "description": t.description, "parameters": getattr(t, "input_schema", None),
            "output_fields": output_schema_fields(getattr(t, "output_schema", None)),
            "read_only": getattr(ann, "read_only_hint", None), "destructive": getattr(ann, "destructive_hint", None)}


def screen_server(server: str, source: str, raw_tools: Iterable[dict[str, Any]], min_tools: int = MIN_TOOLS
                  ) -> tuple[CollectedServer | None, list[Quarantined]]:
    """Apply the quarantine rules to one server's raw tools (``{name, description, parameters}`` dicts, with
    optional ``output_fields``, ``read_only``, ``destructive``)."""
    if min_tools < 1:
        raise UsageError(f"min_tools must be at least 1, got {min_tools}")
    raw = list(raw_tools)
    if raw and all(r.get("parameters") is None for r in raw):
        return None, [Quarantined(server=server, tool=None, reason="no tool has an input schema")]
    quarantined: list[Quarantined] = []
    names = Counter(r.get("name") for r in raw)
    docs: list[ToolDoc] = []
    for r in raw:
        name = r.get("name")
        if isinstance(name, str) and names[name] > 1:
            quarantined.append(Quarantined(server=server, tool=name, reason=f"duplicate tool name ({names[name]} tools)"))
            continue
        if r.get("parameters") is None:
            quarantined.append(Quarantined(server=server, tool=str(name), reason="no input schema"))
            continue
        try:
            docs.append(tool_doc(server, name, r.get("description"), r.get("parameters"), r.get("output_fields") or (),
                                 r.get("read_only"), r.get("destructive")))
        except ToolDocError as err:
            quarantined.append(Quarantined(server=server, tool=str(name) if name is not None else None, reason=str(err)))
    if len(docs) < min_tools:
        quarantined.append(Quarantined(server=server, tool=None,
                                       reason=f"fewer than {min_tools} usable tools ({len(docs)})"))
        return None, quarantined
    return CollectedServer(server=server, source=source, tools=docs), quarantined


def collect_stdio(commands: Sequence[str | Sequence[str]], *, timeout_s: float = 30.0,
                  names: Sequence[str | None] | None = None) -> CollectReport:
    """List the tools of each stdio MCP server (one session each) and screen them.

    Parameters
    ----------
    commands : sequence
        Server command lines (``"python -m pkg.server --flag"``) or argv lists.
    timeout_s : float
        Per-request timeout in seconds (a hanging server is quarantined).
    names : sequence, optional
        Server names to store under (default: the name the server reports at initialisation).
    """
    sessions = LiveSessions(timeout_s=timeout_s, startup_timeout_s=timeout_s)
    servers: list[CollectedServer] = []
    quarantined: list[Quarantined] = []
    used: set[str] = set()
    try:
        argvs = [split_command(c) for c in commands]
        infos = sessions.open_many([(f"collect-{i}", argv) for i, argv in enumerate(argvs)])
        for i, argv in enumerate(argvs):
            label = " ".join(argv)
            key = f"collect-{i}"
            given = names[i] if names and names[i] else None
            info = infos[key]
            try:
                if isinstance(info, ServerError):
                    raise info
                tools = sessions.list_tools(key)
            except ServerError as err:
                quarantined.append(Quarantined(server=given or label, tool=None, reason=str(err)))
                continue
            name = given or info.get("name") or label
            if name in used:
                name = f"{name}#{i}"
            used.add(name)
            kept, q = screen_server(name, label, [raw_tool(t) for t in tools], min_tools=1)
            quarantined.extend(q)
            if kept is not None:
                servers.append(kept)
    finally:
        sessions.close_all()
    return CollectReport(servers=servers, quarantined=quarantined)


def collect_bundled(domains: Sequence[str] = DOMAINS, *, timeout_s: float = 30.0) -> CollectReport:
    """Collect the bundled servers over real stdio (``python -m synth.servers.run DOMAIN``).

    Output fields are not part of MCP's tool listing; for bundled servers they are added from the
    catalog (the only thing not learnt over the wire).
    """
    from synth.servers.catalog import tool_docs

    for d in domains:
        if d not in DOMAINS:
            raise UsageError(f"unknown bundled server {d!r}; expected one of {', '.join(DOMAINS)}")
    report = collect_stdio([bundled_command(d) for d in domains], timeout_s=timeout_s, names=list(domains))
    servers = []
    for s in report.servers:
        fields = {d.name: d.output_fields for d in tool_docs(s.server)}
        servers.append(s.model_copy(update={"tools": [t.model_copy(update={"output_fields": fields.get(t.name, [])})
                                                      for t in s.tools]}))
    return CollectReport(servers=servers, quarantined=report.quarantined)


def import_astra(path: str | Path, min_tools: int = MIN_TOOLS) -> CollectReport:
    """Import tool documents from ASTRA's ``mcp_servers.jsonl`` (servers that exist only as documents).

    Each line is ``{"base_info": {"group_info": {...}}, "tool_list": [{"name", "description",
    "parameters"}]}``; the server name is the first of ``group_info``'s ``server_name``, ``name``,
    ``server_title``, ``title``, ``group_name`` (else ``astra-LINE``). A malformed line is quarantined
    with its line number; a missing file raises :class:`~synth.errors.UsageError`.
    """
    p = Path(path)
    if not p.is_file():
        raise UsageError(f"ASTRA tool file {str(p)!r} not found; expected a mcp_servers.jsonl file")
    servers: list[CollectedServer] = []
    quarantined: list[Quarantined] = []
    seen: Counter[str] = Counter()
    for lineno, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as err:
            quarantined.append(Quarantined(server=f"{p.name}:{lineno}", tool=None,
                                           reason=f"malformed JSON at line {lineno}: {err.msg}"))
            continue
        if not isinstance(row, dict):
            quarantined.append(Quarantined(server=f"{p.name}:{lineno}", tool=None,
                                           reason=f"line {lineno} is not a JSON object"))
            continue
        base = row.get("base_info") if isinstance(row.get("base_info"), dict) else {}
        info = base.get("group_info") if isinstance(base.get("group_info"), dict) else {}
        name = next((str(info[k]) for k in ("server_name", "name", "server_title", "title", "group_name")
                     if isinstance(info.get(k), str) and info[k].strip()), f"astra-{lineno}")
        seen[name] += 1
        if seen[name] > 1:
            name = f"{name}#{seen[name]}"
        tools = row.get("tool_list")
        if isinstance(tools, str):
            try:
                tools = json.loads(tools)
            except ValueError:
                tools = None
        if not isinstance(tools, list):
            quarantined.append(Quarantined(server=name, tool=None, reason=f"line {lineno}: tool_list is not a list"))
            continue
        raw = [t if isinstance(t, dict) else {"name": None, "description": None} for t in tools]
        kept, q = screen_server(name, f"{p.name}:{lineno}", raw, min_tools=min_tools)
        quarantined.extend(q)
        if kept is not None:
            servers.append(kept)
    return CollectReport(servers=servers, quarantined=quarantined)


def store_report(report: CollectReport, registry: Any) -> None:
    """Store kept tools and quarantine entries in a :class:`grid.registry.Registry` (one call per server)."""
    by_server: dict[str, list[tuple[str | None, str]]] = {}
    for q in report.quarantined:
        by_server.setdefault(q.server, []).append((q.tool, q.reason))
    for s in report.servers:
        registry.save_tool_docs(s.server, [d.model_dump(mode="json") for d in s.tools], by_server.pop(s.server, []))
    for server, entries in by_server.items():
        registry.save_tool_docs(server, [], entries)
