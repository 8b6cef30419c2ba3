"""The user's own stdio MCP servers, live for one synthesis job: collected and executed over one session each.

:class:`UserServers` opens every command of ``[synth].servers`` (a recipe's ``servers``) once,
concurrently; lists and screens its tools over that same session (:func:`synth.collect.screen_server`'s
quarantine rules); and then serves every tool call of every trajectory of the job over it, so a job makes
at most one connection per server (:attr:`UserServers.connects`). Tool state lives in the server
process, shared by the job's trajectories, as it would be in production.

A server that fails to start (a command that exits at once, a missing executable, no initialisation
within the timeout) or keeps fewer than :data:`synth.collect.MIN_TOOLS` usable tools is quarantined, and
the job stops with one line naming the command and the last line of its stderr
(:class:`ServerQuarantined`, exit code 2): a dataset silently missing the user's tools would be wrong.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Any

from synth.collect import screen_server
from synth.errors import ServerError, UsageError
from synth.live import LiveSessions, split_command
from synth.models import CollectReport, Quarantined, ToolDoc

__all__ = ["ServerQuarantined", "UserServers"]


class ServerQuarantined(UsageError):
    """A user server that cannot be used (did not start, or too few usable tools); the message says why."""


class UserServers:
    """One live session per user server for a whole job (see the module docstring).

    Examples
    --------
    >>> with UserServers(["python -m mcp_server_git --repository ."]) as live:  # doctest: +SKIP
    ...     docs = live.docs()                     # {"mcp-git": [ToolDoc, ...]}
    ...     live.call("mcp-git", (0, 0), "git_status", {"repo_path": "."})
    """

    def __init__(self, commands: Sequence[str], timeout_s: float = 30.0):
        self.commands = [c if isinstance(c, str) else shlex.join(c) for c in commands]
        self.sessions = LiveSessions(timeout_s=timeout_s, startup_timeout_s=timeout_s)
        self._key: dict[str, str] = {}
        self._docs: dict[str, list[ToolDoc]] = {}
        self.report: CollectReport | None = None
        """What was collected and quarantined at :meth:`open`."""
        self.calls = 0
        """Tool calls served."""

    @property
    def connects(self) -> int:
        """Sessions opened so far (at most one per server)."""
        return self.sessions.opened

    def open(self) -> "UserServers":
        """Start every server once and collect its tools; raises :class:`ServerQuarantined` for a bad one."""
        argvs = [split_command(c) for c in self.commands]
        keys = [f"user-{i}" for i in range(len(argvs))]
        infos = self.sessions.open_many(list(zip(keys, argvs)))
        kept, quarantined = [], []
        used: set[str] = set()
        for key, argv, command in zip(keys, argvs, self.commands):
            info = infos[key]
            try:
                if isinstance(info, ServerError):
                    raise info
                tools = self.sessions.list_tools(key)
            except ServerError as err:
                tail = self.sessions.stderr_tail(key)
                why = str(err).removeprefix(f"server {shlex.join(argv)!r} ")
                why = why if (not tail or tail in why) else f"{why}; stderr: {tail}"
                quarantined.append(Quarantined(server=command, tool=None, reason=why))
                raise ServerQuarantined(f"server {command!r} quarantined: {_one_line(why)}") from None
            name = str(info.get("name") or argv[-1])
            if name in used:
                name = f"{name}#{len(used)}"
            used.add(name)
            raw = [{"name": t.name, "description": t.description, "parameters": getattr(t, "input_schema", None)}
                   for t in tools]
            server, q = screen_server(name, command, raw)
            quarantined.extend(q)
            if server is None:
                raise ServerQuarantined(f"server {command!r} quarantined: {q[-1].reason}")
            kept.append(server)
            self._key[name] = key
            self._docs[name] = list(server.tools)
        self.report = CollectReport(servers=kept, quarantined=quarantined)
        return self

    def docs(self) -> dict[str, list[ToolDoc]]:
        """``{server name: its kept tools}``."""
        return {k: list(v) for k, v in self._docs.items()}

    def call(self, server: str, instance: tuple[int, int], name: str, arguments: dict[str, Any]) -> dict:
        """Run one tool call on the server's session (``instance`` is ignored: the server owns its state)."""
        key = self._key.get(server)
        if key is None:
            raise ServerError(f"user server {server!r} is not open")
        self.calls += 1
        return self.sessions.call(key, name, arguments)

    def close(self) -> None:
        """Stop every server."""
        self.sessions.close_all()

    def __enter__(self) -> "UserServers":
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()


def _one_line(text: str) -> str:
    return " ".join(text.split())
