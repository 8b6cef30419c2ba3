"""Where tool calls run during rollouts: in-process bundled logic, the schema-driven emulator, or live stdio.

Every backend has ``call(server, instance, name, arguments) -> dict`` and ``close()``; ``call`` raises
:class:`~synth.errors.ToolCallError` for invalid arguments (the trajectory shows the error) and
:class:`~synth.errors.ServerError` when the server crashed or hung (the task is dropped and counted).
State persists per ``(server, instance)`` for the backend's lifetime, as in a live server process, so
the in-process and live backends see the same sequence of states.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Protocol

from synth.errors import ToolCallError
from synth.models import ToolDoc
from synth.servers import catalog
from synth.servers.db import make_database

__all__ = ["Backend", "InProcessBackend", "EmulatorBackend", "RoutingBackend", "argument_problem", "checked_doc"]

_TYPES = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
          "array": (list,), "object": (dict,)}


class Backend(Protocol):
    """Runs tool calls for rollouts."""

    def call(self, server: str, instance: tuple[int, int], name: str, arguments: dict[str, Any]) -> dict:
        ...

    def close(self) -> None:
        ...


def argument_problem(doc: ToolDoc, arguments: Any) -> str | None:
    """Why ``arguments`` do not fit ``doc``'s JSON schema (required, unknown, types, enums), or None."""
    name = doc.name
    if not isinstance(arguments, dict):
        return f"{name}: arguments must be a JSON object, got {type(arguments).__name__}"
    props = doc.parameters.get("properties", {})
    for p in doc.required:
        if arguments.get(p) is None:
            return f"{name}: missing required argument {p!r}"
    for k, v in arguments.items():
        if k not in props:
            return f"{name}: unknown argument {k!r}; expected {', '.join(props)}"
        spec = props[k] if isinstance(props[k], dict) else {}
        typ = spec.get("type")
        if isinstance(typ, str) and typ in _TYPES and v is not None:
            if (typ in ("integer", "number") and isinstance(v, bool)) or not isinstance(v, _TYPES[typ]):
                return f"{name}: argument {k!r} must be {typ}, got {v!r}"
        if "enum" in spec and v not in spec["enum"]:
            return f"{name}: argument {k!r} must be one of {spec['enum']}, got {v!r}"
    return None


def checked_doc(docs: dict[tuple[str, str], ToolDoc], server: str, name: str, arguments: Any) -> ToolDoc:
    """The document of ``server.name`` from ``docs``; raises :class:`ToolCallError` for an unknown tool or
    arguments that do not fit its schema (:func:`argument_problem`)."""
    doc = docs.get((server, name))
    if doc is None:
        raise ToolCallError(f"unknown tool {name!r} on server {server!r}")
    problem = argument_problem(doc, arguments)
    if problem is not None:
        raise ToolCallError(problem)
    return doc


class InProcessBackend:
    """Bundled servers in-process: :func:`synth.servers.catalog.call_tool` on one database per instance."""

    def __init__(self) -> None:
        self._dbs: dict[tuple[str, int, int], dict[str, list[dict]]] = {}

    def database(self, server: str, instance: tuple[int, int]) -> dict[str, list[dict]]:
        key = (server, *instance)
        db = self._dbs.get(key)
        if db is None:
            db = self._dbs[key] = make_database(server, *instance)
        return db

    def call(self, server: str, instance: tuple[int, int], name: str, arguments: dict[str, Any]) -> dict:
        return catalog.call_tool(server, self.database(server, instance), name, arguments)

    def close(self) -> None:
        self._dbs.clear()


class EmulatorBackend:
    """A schema-driven, stateful emulator for document-only tools (no backend exists for them).

    Arguments are checked against the tool's JSON schema (required, types, enums). Each output field gets
    a value that is a deterministic function of ``(server, instance, tool, arguments)``: an argument of
    the same name is echoed; ``*_id`` fields get ``PREFIX-NNNNN`` ids. Results are remembered per
    instance, so repeating a call returns the same result (the emulator is stateful, not an LLM).
    """

    def __init__(self, docs: list[ToolDoc]):
        self._docs = {(d.server, d.name): d for d in docs}
        self._state: dict[tuple, dict] = {}

    def database(self, server: str, instance: tuple[int, int]) -> dict[str, list[dict]]:
        return {}

    def call(self, server: str, instance: tuple[int, int], name: str, arguments: dict[str, Any]) -> dict:
        doc = checked_doc(self._docs, server, name, arguments)
        key = (server, instance, name, json.dumps(arguments, sort_keys=True))
        if key in self._state:
            return self._state[key]
        digest = hashlib.sha1(repr(key).encode()).hexdigest()
        out: dict[str, Any] = {}
        for i, f in enumerate(doc.output_fields or ["result"]):
            if f in arguments:
                out[f] = arguments[f]
            elif f.endswith("_id") or f == "id":
                out[f] = f"{(f[:-3] or 'id')[:3].upper()}-{int(digest[i % 30:i % 30 + 8], 16) % 90000 + 10000}"
            else:
                out[f] = f"{f}-{digest[(2 * i) % 32:(2 * i) % 32 + 6]}"
        out["status"] = "ok"
        self._state[key] = out
        return out

    def close(self) -> None:
        self._state.clear()


class RoutingBackend:
    """Bundled servers to one backend, live user servers to theirs, document-only servers and the user's
    emulated write tools (``emulated_tools``) to the emulator.

    :meth:`emulated` says which calls are emulated (the only ones that get injected errors, as in ASTRA);
    :attr:`emulator_calls` counts the calls the emulator served.
    """

    def __init__(self, bundled: Any, emulator: Any | None = None, live: Any | None = None,
                 live_servers: frozenset[str] = frozenset(), emulated_tools: dict[str, set[str]] | None = None):
        self.bundled = bundled
        self.emulator = emulator
        self.live = live
        self.live_servers = live_servers
        self.emulated_tools = dict(emulated_tools or {})
        self.emulator_calls = 0
        """Calls the emulator served."""

    def emulated(self, server: str, tool: str) -> bool:
        """Whether a call of ``server.tool`` is served by the emulator (not a real backend)."""
        if server in catalog.SERVERS:
            return False
        if server in self.live_servers:
            return tool in self.emulated_tools.get(server, set())
        return True

    def begin(self, task_id: str) -> None:
        """A new trajectory starts: a stateful emulator forgets the previous one's calls."""
        begin = getattr(self.emulator, "begin", None)
        if begin is not None:
            begin(task_id)

    def database(self, server: str, instance: tuple[int, int]) -> dict[str, list[dict]]:
        if server in catalog.SERVERS:
            return make_database(server, *instance) if not hasattr(self.bundled, "database") \
                else self.bundled.database(server, instance)
        return {}

    def call(self, server: str, instance: tuple[int, int], name: str, arguments: dict[str, Any]) -> dict:
        if server in catalog.SERVERS:
            return self.bundled.call(server, instance, name, arguments)
        if server in self.live_servers and self.live is not None and not self.emulated(server, name):
            return self.live.call(server, instance, name, arguments)
        if self.emulator is None:
            raise ToolCallError(f"no backend for server {server!r}")
        self.emulator_calls += 1
        return self.emulator.call(server, instance, name, arguments)

    def close(self) -> None:
        self.bundled.close()
        if self.emulator is not None:
            self.emulator.close()
