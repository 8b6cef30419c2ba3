"""The code workspace as a stdio MCP server: ``list_files``, ``read_file``, ``write_file``, ``run_tests``.

Run::

    python -m synth.code.server --root WORKSPACE --hidden TESTS

``WORKSPACE`` holds what the agent may see and change (repositories with their specs and modules);
``TESTS`` holds the hidden tests, ``TESTS/REPO/tests/test_MODULE.py`` for module ``REPO/MODULE.py``,
never listed or readable through the tools. The tools are :class:`synth.code.workspace.Workspace`'s (the
in-process backend calls the same code), ``write_file`` writes through to ``WORKSPACE``, and ``run_tests``
runs the module's hidden tests in the bubblewrap jail. Every result is the JSON object ``{"text": ...}``
holding the observation, so clients get it byte for byte.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

from pydantic import Field

from synth.code.workspace import TOOL_SCHEMAS, Workspace

__all__ = ["load_workspace", "build_server", "main"]


def load_workspace(root: str | Path, hidden: str | Path) -> Workspace:
    """A :class:`Workspace` over the files under ``root`` (write-through) with the tests under ``hidden``."""
    root, hidden = Path(root), Path(hidden)
    files = {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8")
             for p in sorted(root.rglob("*")) if p.is_file()}
    tests = {}
    for p in sorted(hidden.rglob("test_*.py")):
        rel = p.relative_to(hidden)  # REPO/tests/test_MODULE.py
        if len(rel.parts) == 3 and rel.parts[1] == "tests":
            module = rel.name.removeprefix("test_").removesuffix(".py")
            tests[f"{rel.parts[0]}/{module}.py"] = (module, p.read_text(encoding="utf-8"))

    def write(path: str, text: str) -> None:
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")

    return Workspace(files, tests, on_write=write)


def build_server(ws: Workspace):
    """An ``MCPServer`` exposing the four workspace tools of ``ws``."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer(name="toolscale-code-workspace", log_level="WARNING",
                       instructions="A code workspace: read specs, write modules, run their hidden tests.")
    desc = {t["function"]["name"]: t["function"]["description"] for t in TOOL_SCHEMAS}

    def out(text: str) -> str:
        return json.dumps({"text": text}, ensure_ascii=False)

    def list_files(path: Annotated[str, Field(description="folder")]) -> str:
        return out(ws.list_files(path))

    def read_file(path: Annotated[str, Field(description="file")]) -> str:
        return out(ws.read_file(path))

    def write_file(path: Annotated[str, Field(description="file")], content: Annotated[str, Field(description="text")],
                   append: Annotated[bool, Field(description="add to the end instead of replacing")] = False) -> str:
        return out(ws.write_file(path, content, append))

    def run_tests(path: Annotated[str, Field(description="module file")]) -> str:
        return out(ws.run_tests(path))

    for fn in (list_files, read_file, write_file, run_tests):
        server.add_tool(fn, name=fn.__name__, description=desc[fn.__name__], structured_output=False)
    return server


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: serve one workspace over stdio until stdin closes."""
    parser = argparse.ArgumentParser(prog="python -m synth.code.server",
                                     description="Serve a code workspace (read/write files, run hidden tests) over "
                                                 "stdio MCP.")
    parser.add_argument("--root", required=True, help="workspace folder (what the agent sees)")
    parser.add_argument("--hidden", required=True, help="folder of the hidden tests (REPO/tests/test_MODULE.py)")
    args = parser.parse_args(argv)
    build_server(load_workspace(args.root, args.hidden)).run("stdio")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
