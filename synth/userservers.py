"""The user's own stdio MCP servers, live for one synthesis job: collected, observed and executed safely.

:class:`UserServers` opens every server of ``[synth].servers`` (a recipe's ``servers``) once, concurrently;
lists and screens its tools over that same session (:func:`synth.collect.screen_server`'s rules, with
``min_tools = 1``: the user named the server); observes what its read-only tools return
(:func:`synth.observe.harvest`), so tasks chain its tools and state only values the server showed or the
user gave; and then serves every tool call of the job over that session (:attr:`UserServers.connects`).

**Write tools never touch real resources.** A tool that is not read-only (MCP ``readOnlyHint`` /
``destructiveHint``, else its name: :func:`synth.observe.effect`) runs only when the server has
``scratch = "copy:PATH"`` -- PATH is copied once per job to a temporary folder, the server is started on
the copy (PATH in the command line replaced), arguments naming PATH are sent naming the copy and results
naming the copy are read back naming PATH, so the data looks as if run on PATH, which is never touched --
or ``emulate_writes = true`` (the emulator role plays them). Otherwise the tool is left out and
:attr:`UserServers.warnings` says so.

A server that fails to start, or keeps no usable tool, is quarantined and the job stops with one line
naming the command and the last line of its stderr (:class:`ServerQuarantined`, exit code 2).
"""

from __future__ import annotations

import json
import shlex
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from synth.collect import raw_tool, screen_server
from synth.errors import ServerError, UsageError
from synth.live import LiveSessions, split_command
from synth.models import CollectReport, Quarantined, ToolDoc
from synth.observe import Observations, effect, harvest
from toolscale.config import UserServer

__all__ = ["ServerQuarantined", "UserServers", "as_entry"]


class ServerQuarantined(UsageError):
    """A user server that cannot be used (did not start, or no usable tool); the message says why."""


def as_entry(server: str | UserServer | dict) -> UserServer:
    """A server setting as a :class:`~toolscale.config.UserServer` (a string is its command)."""
    if isinstance(server, UserServer):
        return server
    if isinstance(server, dict):
        return UserServer.model_validate(server)
    return UserServer(command=server if isinstance(server, str) else shlex.join(server))


class UserServers:
    """One live session per user server for a whole job (see the module docstring).

    Examples
    --------
    >>> with UserServers(["python -m mcp_server_git --repository ."]) as live:  # doctest: +SKIP
    ...     docs = live.docs()                     # {"mcp-git": [ToolDoc, ...]} (read-only tools here)
    ...     live.call("mcp-git", (0, 0), "git_status", {"repo_path": "."})
    """

    def __init__(self, servers: Sequence[str | UserServer | dict], timeout_s: float = 30.0,
                 arg_values: dict[str, list] | None = None):
        self.entries = [as_entry(s) for s in servers]
        self.commands = [e.command for e in self.entries]
        self.arg_values = dict(arg_values or {})
        self.sessions = LiveSessions(timeout_s=timeout_s, startup_timeout_s=timeout_s)
        self._key: dict[str, str] = {}
        self._docs: dict[str, list[ToolDoc]] = {}
        self._swap: dict[str, tuple[str, str]] = {}
        self._tmp: list[str] = []
        self.report: CollectReport | None = None
        """What was collected and quarantined at :meth:`open`."""
        self.observations: dict[str, Observations] = {}
        """What each server's read-only tools returned at :meth:`open`."""
        self.emulated: dict[str, set[str]] = {}
        """Write tools played by the emulator, per server."""
        self.warnings: list[str] = []
        """Tools left out, with why (one line each)."""
        self.command_of: dict[str, str] = {}
        """The command each server was named by (PATH, not the scratch copy)."""
        self.calls = 0
        """Tool calls served (observation calls included)."""

    @property
    def connects(self) -> int:
        """Sessions opened so far (at most one per server)."""
        return self.sessions.opened

    def _scratch(self, entry: UserServer) -> tuple[str, tuple[str, str] | None]:
        """The command to start and the ``(PATH, copy)`` swap of a scratch server (raises UsageError)."""
        if entry.scratch is None:
            return entry.command, None
        path = entry.scratch.removeprefix("copy:")
        if not Path(path).exists():
            raise UsageError(f"scratch path {path!r} of server {entry.command!r} does not exist")
        if path not in entry.command:
            raise UsageError(f"scratch path {path!r} does not appear in the server command {entry.command!r}")
        tmp = tempfile.mkdtemp(prefix="toolscale-scratch-")
        self._tmp.append(tmp)
        copy = str(Path(tmp) / (Path(path).name or "root"))
        if Path(path).is_dir():
            shutil.copytree(path, copy, symlinks=True)
        else:
            shutil.copy2(path, copy)
        return entry.command.replace(path, copy), (path.rstrip("/"), copy)

    def open(self) -> "UserServers":
        """Start every server once, collect, screen and observe its tools; raises :class:`ServerQuarantined`."""
        started = [self._scratch(e) for e in self.entries]
        argvs = [split_command(c) for c, _ in started]
        keys = [f"user-{i}" for i in range(len(argvs))]
        infos = self.sessions.open_many(list(zip(keys, argvs)))
        kept, quarantined = [], []
        used: set[str] = set()
        for key, argv, entry, (_, swap) in zip(keys, argvs, self.entries, started):
            tools = self._list(key, argv, entry.command, infos[key], quarantined)
            name = str(infos[key].get("name") or argv[-1])
            if name in used:
                name = f"{name}#{len(used)}"
            used.add(name)
            server, q = screen_server(name, entry.command, [raw_tool(t) for t in tools], min_tools=1)
            quarantined.extend(q)
            if server is None:
                raise ServerQuarantined(f"server {entry.command!r} quarantined: {q[-1].reason}")
            self._key[name] = key
            self.command_of[name] = entry.command
            if swap is not None:
                self._swap[name] = swap
            docs = self._allowed(name, entry, list(server.tools))
            obs = harvest(docs, lambda tool, args, n=name: self.call(n, (0, 0), tool, args), self.arg_values,
                          entry.command)
            self.observations[name] = obs
            self._docs[name] = [d.model_copy(update={"output_fields": list(dict.fromkeys(
                [*d.output_fields, *obs.fields.get(d.name, {})]))}) for d in docs]
            kept.append(server)
        self.report = CollectReport(servers=kept, quarantined=quarantined)
        return self

    def _list(self, key: str, argv: list[str], command: str, info: Any, quarantined: list) -> list[Any]:
        try:
            if isinstance(info, ServerError):
                raise info
            return self.sessions.list_tools(key)
        except ServerError as err:
            tail = self.sessions.stderr_tail(key)
            why = str(err).removeprefix(f"server {shlex.join(argv)!r} ")
            why = why if (not tail or tail in why) else f"{why}; stderr: {tail}"
            quarantined.append(Quarantined(server=command, tool=None, reason=why))
            raise ServerQuarantined(f"server {command!r} quarantined: {' '.join(why.split())}") from None

    def _allowed(self, name: str, entry: UserServer, docs: list[ToolDoc]) -> list[ToolDoc]:
        """The tools that may run: read-only ones, and write tools on a scratch copy or emulated."""
        out = []
        for d in docs:
            kind = effect(d)
            if kind == "read" or entry.scratch is not None:
                out.append(d)
            elif entry.emulate_writes:
                self.emulated.setdefault(name, set()).add(d.name)
                out.append(d)
            else:
                self.warnings.append(f"server {name}: {kind} tool {d.name} left out (it could change your data); "
                                     "give the server scratch = \"copy:PATH\" or emulate_writes = true to use it")
        return out

    def docs(self) -> dict[str, list[ToolDoc]]:
        """``{server name: its usable tools}`` (output fields include those observed)."""
        return {k: list(v) for k, v in self._docs.items()}

    def observed(self, server: str) -> dict[str, list[Any]]:
        """Every field's observed values on ``server``."""
        obs = self.observations.get(server)
        return obs.values() if obs is not None else {}

    def _swapped(self, value: Any, old: str, new: str) -> Any:
        return json.loads(json.dumps(value).replace(json.dumps(old)[1:-1], json.dumps(new)[1:-1]))

    def call(self, server: str, instance: tuple[int, int], name: str, arguments: dict[str, Any]) -> dict:
        """Run one tool call on the server's session (``instance`` is ignored: the server owns its state);
        on a scratch server PATH is swapped for its copy on the way in and back on the way out."""
        key = self._key.get(server)
        if key is None:
            raise ServerError(f"user server {server!r} is not open")
        self.calls += 1
        swap = self._swap.get(server)
        if swap is None:
            return self.sessions.call(key, name, arguments)
        try:
            out = self.sessions.call(key, name, self._swapped(arguments, *swap))
        except Exception as err:
            if swap[1] in str(err):
                err.args = (str(err).replace(swap[1], swap[0]),) + tuple(err.args[1:])
            raise
        return self._swapped(out, swap[1], swap[0])

    def close(self) -> None:
        """Stop every server and remove the scratch copies."""
        self.sessions.close_all()
        for tmp in self._tmp:
            shutil.rmtree(tmp, ignore_errors=True)
        self._tmp.clear()

    def __enter__(self) -> "UserServers":
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()
