"""The agent's workspace and its four tools: ``list_files``, ``read_file``, ``write_file``, ``run_tests``.

:class:`Workspace` is the one implementation of the tools: the stdio MCP server
(:mod:`synth.code.server`) serves a :class:`Workspace` over a folder, and the in-process backend
(``backend = "emulator"``) calls it directly, so both give the same observation text. ``run_tests``
always runs the hidden tests in the jail (:mod:`synth.code.runner`); a :class:`SuiteCache` may hold
results the jail already produced for the same module source and tests (a dataset build runs its
suites in batches first).

Paths are relative to the workspace root, ``/``-separated, without ``..``; hidden test files are neither
listed nor readable, and nothing outside the root is reachable.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Callable, Mapping
from typing import Any

from synth.code.models import SuiteResult
from synth.code.runner import Suite, run_suites

__all__ = ["TOOL_SCHEMAS", "TOOL_NAMES", "Workspace", "SuiteCache", "normalise_path"]

def _tool(name: str, description: str, **params: str) -> dict[str, Any]:
    props = {k: {"type": "boolean" if k == "append" else "string"} for k in params}
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": props, "required": [k for k in params if k != "append"]}}}


TOOL_SCHEMAS: list[dict[str, Any]] = [
    _tool("list_files", "List the files under a folder.", path="folder"),
    _tool("read_file", "Read a file.", path="file"),
    _tool("write_file", "Write a file, or append to it.", path="file", content="text", append="add to the end"),
    _tool("run_tests", "Run the hidden tests of a module.", path="module file"),
]
"""OpenAI schemas of the four workspace tools (what every trajectory offers)."""
TOOL_NAMES: tuple[str, ...] = tuple(t["function"]["name"] for t in TOOL_SCHEMAS)
"""The tool names."""
MAX_FILE_CHARS = 20_000
"""Largest file ``write_file`` accepts, in characters."""


def normalise_path(path: Any) -> str | None:
    """``path`` as a clean relative path, or None when it is not one (absolute, ``..``, empty, not a string)."""
    if not isinstance(path, str):
        return None
    p = path.strip().replace("\\", "/")
    if p.startswith("/") or not p:
        return None
    norm = posixpath.normpath(p)
    if norm == "." or norm.startswith("..") or "/../" in f"/{norm}/":
        return None
    return norm


class SuiteCache:
    """Jail results by suite key; a miss runs the suite in the jail now (and keeps the result)."""

    def __init__(self, results: Mapping[str, SuiteResult] | None = None, runner: Callable[..., Any] | None = None,
                 limits: Any = None):
        self.results: dict[str, SuiteResult] = dict(results or {})
        self.runner, self.limits = runner, limits
        self.jail_runs = 0
        """Suites run in the jail by this cache (misses)."""

    def __call__(self, suite: Suite) -> SuiteResult:
        key = suite.key
        if key not in self.results:
            self.jail_runs += 1
            self.results.update(run_suites([suite], limits=self.limits, runner=self.runner))
        return self.results[key]


class Workspace:
    """Files the agent sees, hidden tests per module, and the tools over them.

    Parameters
    ----------
    files : ``{path: text}`` visible files (specs, README, modules written so far).
    hidden : ``{module path: (module name, test source)}`` the hidden tests of each module.
    suites : runs one :class:`~synth.code.runner.Suite` (default: a fresh :class:`SuiteCache`).
    on_write : called as ``on_write(path, text)`` after each write (the server writes through to disk).
    """

    def __init__(self, files: Mapping[str, str], hidden: Mapping[str, tuple[str, str]],
                 suites: Callable[[Suite], SuiteResult] | None = None,
                 on_write: Callable[[str, str], None] | None = None):
        self.files = dict(files)
        self.hidden = dict(hidden)
        self.suites = suites or SuiteCache()
        self.on_write = on_write

    def call(self, name: str, arguments: Mapping[str, Any]) -> str:
        """Run tool ``name`` with ``arguments``; the observation text (``error: ...`` for a bad call)."""
        fn = {"list_files": self.list_files, "read_file": self.read_file, "write_file": self.write_file,
              "run_tests": self.run_tests}.get(name)
        if fn is None:
            return f"error: unknown tool {name!r}; tools: {', '.join(TOOL_NAMES)}"
        if not isinstance(arguments, Mapping):
            return f"error: arguments of {name} must be an object"
        try:
            return fn(**dict(arguments))
        except TypeError as err:
            return f"error: bad arguments for {name}: {str(err).split(') ', 1)[-1]}"

    def list_files(self, path: str = "") -> str:
        """JSON list of the visible files under folder ``path`` (the whole workspace for ``""``)."""
        if path in ("", ".", "/"):
            prefix = ""
        else:
            norm = normalise_path(path)
            if norm is None:
                return f"error: bad path {path!r}"
            prefix = norm + "/"
        found = sorted(p for p in self.files if p.startswith(prefix))
        if not found:
            return f"error: no such folder: {path}"
        return json.dumps(found)

    def read_file(self, path: str) -> str:
        """The text of file ``path``."""
        norm = normalise_path(path)
        if norm is None:
            return f"error: bad path {path!r}"
        if norm not in self.files:
            return f"error: no such file: {norm}"
        return self.files[norm]

    def write_file(self, path: str, content: str, append: bool = False) -> str:
        """Create or replace ``path`` with ``content`` (``append``: add it to the end); says how many lines the
        file has now."""
        norm = normalise_path(path)
        if norm is None:
            return f"error: bad path {path!r}"
        if not isinstance(content, str) or not isinstance(append, bool):
            return "error: content must be a string and append true or false"
        text = self.files.get(norm, "") + content if append else content
        if len(text) > MAX_FILE_CHARS:
            return f"error: file too large ({len(text)} characters; limit {MAX_FILE_CHARS})"
        if "/tests/" in f"/{norm}":
            return f"error: {norm} is a test file; tests are hidden and cannot be written"
        self.files[norm] = text
        if self.on_write is not None:
            self.on_write(norm, text)
        lines = text.count("\n") + (bool(text) and not text.endswith("\n"))
        return f"{'appended to' if append else 'wrote'} {norm} ({lines} lines)"

    def run_tests(self, path: str) -> str:
        """Run the hidden tests of module ``path`` in the jail; a summary with the failing tests."""
        norm = normalise_path(path)
        if norm is None:
            return f"error: bad path {path!r}"
        if norm not in self.hidden:
            return f"error: no tests for {norm}"
        module, tests = self.hidden[norm]
        return self.suite(norm).text() if module else f"error: no tests for {norm}"

    def suite(self, path: str) -> SuiteResult:
        """The :class:`SuiteResult` of module ``path`` as it is now (an absent module is an empty source)."""
        module, tests = self.hidden[path]
        return self.suites(Suite(module, self.files.get(path, ""), tests))
