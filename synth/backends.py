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

__all__ = ["Backend", "InProcessBackend", "EmulatorBackend", "RoutingBackend"]

_TYPES = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
          "array": (list,), "object": (dict,)}


class Backend(Protocol):
    """Runs tool calls for rollouts."""

    def call(self, server: str, instance: tuple[int, int], name: str, arguments: dict[str, Any]) -> dict:
        ...

    def close(self) -> None:
        ...


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
        doc = self._docs.get((server, name))
        if doc is None:
            raise ToolCallError(f"unknown tool {name!r} on server {server!r}")
        props = doc.parameters.get("properties", {})
        for p in doc.required:
            if arguments.get(p) is None:
                raise ToolCallError(f"{name}: missing required argument {p!r}")
        for k, v in arguments.items():
            if k not in props:
                raise ToolCallError(f"{name}: unknown argument {k!r}; expected {', '.join(props)}")
            spec = props[k] if isinstance(props[k], dict) else {}
            typ = spec.get("type")
            if isinstance(typ, str) and typ in _TYPES and v is not None:
                if (typ in ("integer", "number") and isinstance(v, bool)) or not isinstance(v, _TYPES[typ]):
                    raise ToolCallError(f"{name}: argument {k!r} must be {typ}, got {v!r}")
            if "enum" in spec and v not in spec["enum"]:
                raise ToolCallError(f"{name}: argument {k!r} must be one of {spec['enum']}, got {v!r}")
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
    """Bundled servers to one backend, document-only servers to the emulator."""

    def __init__(self, bundled: Any, emulator: EmulatorBackend | None = None):
        self.bundled = bundled
        self.emulator = emulator

    def database(self, server: str, instance: tuple[int, int]) -> dict[str, list[dict]]:
        if server in catalog.SERVERS:
            return make_database(server, *instance) if not hasattr(self.bundled, "database") \
                else self.bundled.database(server, instance)
        return {}

    def call(self, server: str, instance: tuple[int, int], name: str, arguments: dict[str, Any]) -> dict:
        if server in catalog.SERVERS:
            return self.bundled.call(server, instance, name, arguments)
        if self.emulator is None:
            raise ToolCallError(f"no backend for server {server!r}")
        return self.emulator.call(server, instance, name, arguments)

    def close(self) -> None:
        self.bundled.close()
        if self.emulator is not None:
            self.emulator.close()
