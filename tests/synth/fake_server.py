"""Misbehaving stdio MCP servers for tests (run as a script, never imported by the package).

    python tests/synth/fake_server.py tools K [--empty-description]   # K tools, a duplicate if K>=4
    python tests/synth/fake_server.py bundled-crash DOMAIN N           # a bundled server that dies at call N
    python tests/synth/fake_server.py bundled-hang DOMAIN N            # ... that hangs at call N
"""

from __future__ import annotations

import os
import sys
import time


def main(argv: list[str]) -> None:
    mode = argv[0]
    if mode == "tools":
        from mcp.server.mcpserver import MCPServer

        k = int(argv[1])
        server = MCPServer(name="fake-tools", log_level="WARNING")
        for i in range(k):
            def fn(x: str) -> str:
                return x
            desc = "" if ("--empty-description" in argv and i == 0) else f"Echo tool number {i}."
            server.add_tool(fn, name=f"echo_{i}", description=desc)
        server.run("stdio")
        return
    import synth.servers.run as run

    domain, n = argv[1], int(argv[2])
    calls = {"n": 0}
    real = run.call_tool

    def counting(*a, **kw):
        calls["n"] += 1
        if calls["n"] >= n:
            if mode == "bundled-crash":
                os._exit(3)
            time.sleep(3600)
        return real(*a, **kw)

    run.call_tool = counting
    run.build_server(domain).run("stdio")


if __name__ == "__main__":
    main(sys.argv[1:])
