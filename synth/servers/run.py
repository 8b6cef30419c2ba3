"""Thin stdio MCP wrapper over :mod:`synth.servers.catalog` (one process serves one database instance).

Run::

    python -m synth.servers.run travel --seed 3 --variant 1

Each catalog tool becomes an ``MCPServer`` tool whose input schema is built from the tool's parameters
and whose body is :func:`synth.servers.catalog.call_tool` against this process's database (stateful:
bookings, transfers... persist for the process's lifetime). Results are JSON text; invalid arguments
come back as MCP tool errors carrying the :class:`~synth.errors.ToolCallError` message.
"""

from __future__ import annotations

import argparse
import inspect
import json
from collections.abc import Callable, Sequence
from typing import Annotated, Any

from pydantic import Field

from synth.errors import ToolCallError
from synth.servers.catalog import SERVERS, ToolDef, call_tool
from synth.servers.db import DOMAINS, make_database

__all__ = ["build_server", "main"]

_PY_TYPES = {"string": str, "integer": int, "number": float}


def _tool_fn(domain: str, db: dict[str, list[dict]], tool: ToolDef) -> Callable[..., str]:
    from mcp.server.mcpserver.exceptions import ToolError

    def fn(**kwargs: Any) -> str:
        try:
            return json.dumps(call_tool(domain, db, tool.name, kwargs))  # the emulator's key order
        except ToolCallError as err:  # an anticipated failure: the message reaches the client
            raise ToolError(str(err)) from None

    params = []
    for p in tool.params:
        py = _PY_TYPES[p.type]
        if p.required:
            ann, default = Annotated[py, Field(description=p.description)], inspect.Parameter.empty
        else:
            ann, default = Annotated[py | None, Field(description=p.description)], None
        params.append(inspect.Parameter(p.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=ann))
    fn.__signature__ = inspect.Signature(params, return_annotation=str)  # type: ignore[attr-defined]
    fn.__name__ = tool.name
    return fn


def build_server(domain: str, seed: int = 0, variant: int = 0):
    """An ``MCPServer`` exposing one bundled domain's tools over a fresh seeded database."""
    from mcp.server.mcpserver import MCPServer

    server_def = SERVERS[domain]
    db = make_database(domain, seed, variant)
    server = MCPServer(name=f"toolscale-{domain}", instructions=server_def.description,
                       log_level="WARNING")
    for tool in server_def.tools:
        server.add_tool(_tool_fn(domain, db, tool), name=tool.name, description=tool.description,
                        structured_output=False)
    return server


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: serve one domain over stdio until stdin closes."""
    parser = argparse.ArgumentParser(prog="python -m synth.servers.run",
                                     description="Serve one bundled toolscale MCP server over stdio.")
    parser.add_argument("domain", choices=DOMAINS)
    parser.add_argument("--seed", type=int, default=0, help="database seed")
    parser.add_argument("--variant", type=int, default=0, help="database schema variant")
    args = parser.parse_args(argv)
    build_server(args.domain, args.seed, args.variant).run("stdio")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
