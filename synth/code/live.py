"""The workspace over the stdio MCP server (``backend = "live"``): one server process for a set of tasks.

:class:`LiveWorkspace` writes every task's visible files into a temporary workspace folder and its hidden
tests into another, starts ``python -m synth.code.server`` on them (:class:`synth.live.LiveSessions`, the
MCP client the tool domain uses) and sends each tool call over that session. Tasks have distinct
``REPO/MODULE`` paths, so one server serves them all.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from synth.code.models import CodeTask
from synth.code.render import repo_files, tests_path, tests_source
from synth.errors import ServerError

__all__ = ["LiveWorkspace", "server_command"]


def server_command(root: str | Path, hidden: str | Path) -> list[str]:
    """The command line of the workspace server over ``root`` and ``hidden``."""
    return [sys.executable, "-m", "synth.code.server", "--root", str(root), "--hidden", str(hidden)]


class LiveWorkspace:
    """Tool calls over one stdio MCP workspace server holding ``tasks``' files."""

    KEY = "code-workspace"

    def __init__(self, tasks: Sequence[CodeTask], timeout_s: float = 120.0, startup_timeout_s: float = 120.0):
        self.tasks = list(tasks)
        self.timeout_s, self.startup_timeout_s = timeout_s, startup_timeout_s
        self.sessions: Any = None
        self.folder: Path | None = None
        self.calls = 0

    def open(self) -> "LiveWorkspace":
        """Write the files and start the server."""
        from synth.live import LiveSessions

        self.folder = Path(tempfile.mkdtemp(prefix="toolscale-code-ws-"))
        root, hidden = self.folder / "workspace", self.folder / "hidden"
        for t in self.tasks:
            for path, text in repo_files(t).items():
                _write(root / path, text)
            _write(hidden / tests_path(t), tests_source(t))
        root.mkdir(parents=True, exist_ok=True)
        hidden.mkdir(parents=True, exist_ok=True)
        self.sessions = LiveSessions(timeout_s=self.timeout_s, startup_timeout_s=self.startup_timeout_s)
        try:
            self.sessions.open(self.KEY, server_command(root, hidden))
        except BaseException:
            self.close()
            raise
        return self

    def call(self, tool: str, arguments: dict[str, Any]) -> str:
        """One tool call; the observation text."""
        self.calls += 1
        res = self.sessions.call(self.KEY, tool, arguments)
        if not isinstance(res, dict) or not isinstance(res.get("text"), str):
            raise ServerError(f"workspace server answered {tool} without a text result: {str(res)[:200]}")
        return res["text"]

    def close(self) -> None:
        """Stop the server and remove the folders."""
        if self.sessions is not None:
            self.sessions.close_all()
            self.sessions = None
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None

    def __enter__(self) -> "LiveWorkspace":
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
