"""Live stdio MCP sessions from synchronous code: one session per server, reused for every call.

:class:`LiveSessions` runs an asyncio loop on a background thread. Each opened server gets one task
that owns its ``stdio_client`` and ``ClientSession`` (``mcp`` 2.x) for its whole life and serves
requests from a queue, so the SDK's context managers are entered and left in the same task. Every
request has a timeout: a server that hangs raises :class:`~synth.errors.ServerError` ("timed out"), one
that dies raises it too ("crashed"); the caller decides what to drop. Tool-level errors (``is_error``
results) raise :class:`~synth.errors.ToolCallError` with the server's message.

:class:`LiveBackend` is the rollout backend over the bundled servers (``python -m synth.servers.run``),
opening one process per ``(server, seed, variant)`` and closing the previous one when the rollout moves
to the next instance (rollouts are grouped by instance), so a dataset holds at most one connection per
server instance.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from typing import Any

from synth.errors import ServerError, ToolCallError, UsageError

__all__ = ["LiveSessions", "LiveBackend", "bundled_command", "split_command"]


def split_command(command: str | Sequence[str]) -> list[str]:
    """``"python -m pkg.server --flag"`` -> argv list (a list is returned as is)."""
    if isinstance(command, str):
        try:
            argv = shlex.split(command)
        except ValueError as err:
            raise UsageError(f"cannot parse server command {command!r}: {err}") from None
    else:
        argv = list(command)
    if not argv:
        raise UsageError("empty server command; expected e.g. 'python -m synth.servers.run travel'")
    return argv


def bundled_command(domain: str, seed: int = 0, variant: int = 0) -> list[str]:
    """The command line of one bundled server instance."""
    return [sys.executable, "-m", "synth.servers.run", domain, "--seed", str(seed), "--variant", str(variant)]


class LiveSessions:
    """Open stdio MCP sessions by key; synchronous ``open``/``list_tools``/``call``/``close``."""

    def __init__(self, timeout_s: float = 30.0, startup_timeout_s: float = 30.0):
        self.timeout_s = timeout_s
        self.startup_timeout_s = startup_timeout_s
        self.opened = 0
        """Connections opened so far (one per server process)."""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="mcp-sessions", daemon=True)
        self._thread.start()
        self._queues: dict[str, asyncio.Queue] = {}
        self._tasks: dict[str, Any] = {}
        self._errlogs: dict[str, Any] = {}
        """Each server's stderr, captured to a temporary file (its tail names why a start failed)."""

    # ---- sync API ---------------------------------------------------------------------------------
    def open(self, key: str, command: str | Sequence[str], env: dict[str, str] | None = None) -> dict[str, Any]:
        """Start a server and initialise its session; returns ``{"name", "version"}`` of the server."""
        if key in self._queues:
            raise UsageError(f"server {key!r} is already open")
        argv = split_command(command)
        fut = asyncio.run_coroutine_threadsafe(self._start(key, argv, env), self._loop)
        try:
            return fut.result(self.startup_timeout_s + 5)
        except ServerError:
            raise
        except Exception as err:  # noqa: BLE001 - every start failure is one ServerError
            raise ServerError(f"server {shlex.join(argv)!r} failed to start: {_why(err)}") from None

    def open_many(self, items: Sequence[tuple[str, Sequence[str]]]) -> dict[str, dict[str, Any] | ServerError]:
        """Start several servers concurrently; ``{key: info or the ServerError}`` (never raises for one)."""
        futs = []
        for key, command in items:
            argv = split_command(command)
            futs.append((key, argv, asyncio.run_coroutine_threadsafe(self._start(key, argv, None), self._loop)))
        out: dict[str, dict[str, Any] | ServerError] = {}
        for key, argv, fut in futs:
            try:
                out[key] = fut.result(self.startup_timeout_s + 5)
            except ServerError as err:
                out[key] = err
            except Exception as err:  # noqa: BLE001
                out[key] = ServerError(f"server {shlex.join(argv)!r} failed to start: {_why(err)}")
        return out

    def list_tools(self, key: str) -> list[Any]:
        """The server's tools (``mcp.types.Tool``), all pages."""
        return self._request(key, "list_tools", None)

    def call(self, key: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Call a tool; the JSON result as a dict (non-JSON text as ``{"result": text}``)."""
        return self._request(key, "call", (name, arguments))

    def close(self, key: str) -> None:
        """Stop one server (no error if it already died)."""
        q = self._queues.pop(key, None)
        task = self._tasks.pop(key, None)
        if q is None:
            return
        self._loop.call_soon_threadsafe(q.put_nowait, ("close", None, None))
        if task is not None:
            try:
                asyncio.run_coroutine_threadsafe(_wait(task), self._loop).result(15)
            except Exception:  # noqa: BLE001 - a server that will not stop is abandoned (daemon loop)
                pass

    def close_all(self) -> None:
        """Stop every server (concurrently) and the loop thread."""
        tasks = []
        for key in list(self._queues):
            q = self._queues.pop(key)
            tasks.append(self._tasks.pop(key, None))
            self._loop.call_soon_threadsafe(q.put_nowait, ("close", None, None))
        live = [t for t in tasks if t is not None]
        if live:
            try:
                asyncio.run_coroutine_threadsafe(_wait(asyncio.gather(*live, return_exceptions=True)),
                                                 self._loop).result(20)
            except Exception:  # noqa: BLE001 - servers that will not stop are abandoned
                pass
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        for f in self._errlogs.values():
            f.close()
        self._errlogs.clear()

    def stderr_tail(self, key: str, limit: int = 300) -> str:
        """The last non-empty line the server ``key`` wrote to stderr ("" if none), at most ``limit`` chars."""
        f = self._errlogs.get(key)
        if f is None:
            return ""
        try:
            f.flush()
            f.seek(0)
            lines = [ln.strip() for ln in f.read().splitlines() if ln.strip()]
        except (OSError, ValueError):
            return ""
        return lines[-1][-limit:] if lines else ""

    # ---- internals --------------------------------------------------------------------------------
    def _request(self, key: str, op: str, payload: Any) -> Any:
        q = self._queues.get(key)
        if q is None:
            raise ServerError(f"server {key!r} is not open (it crashed or was closed)")
        done: asyncio.Future = asyncio.run_coroutine_threadsafe(self._enqueue(q, op, payload), self._loop).result(5)
        try:
            return asyncio.run_coroutine_threadsafe(_wait(done), self._loop).result(self.timeout_s + 5)
        except ToolCallError:
            raise
        except (TimeoutError, asyncio.TimeoutError):
            self._abandon(key)
            raise ServerError(f"server {key!r} timed out after {self.timeout_s:g} s on {op}") from None
        except ServerError:
            self._abandon(key)
            raise
        except Exception as err:  # noqa: BLE001 - connection closed, broken pipe...: the server died
            self._abandon(key)
            raise ServerError(f"server {key!r} crashed during {op}: {_why(err)}") from None

    def _abandon(self, key: str) -> None:
        try:
            self.close(key)
        except Exception:  # noqa: BLE001
            pass

    async def _enqueue(self, q: asyncio.Queue, op: str, payload: Any) -> asyncio.Future:
        fut = self._loop.create_future()
        await q.put((op, payload, fut))
        return fut

    async def _start(self, key: str, argv: list[str], env: dict[str, str] | None) -> dict[str, Any]:
        ready = self._loop.create_future()
        q: asyncio.Queue = asyncio.Queue()
        self._queues[key] = q
        self._tasks[key] = asyncio.ensure_future(self._serve(key, argv, env, q, ready))
        try:
            return await asyncio.wait_for(asyncio.shield(ready), self.startup_timeout_s)
        except asyncio.TimeoutError:
            self._queues.pop(key, None)
            task = self._tasks.pop(key, None)
            if task is not None:
                task.cancel()
            raise ServerError(f"server {shlex.join(argv)!r} did not initialise within {self.startup_timeout_s:g} s") \
                from None
        except BaseException:
            self._queues.pop(key, None)
            self._tasks.pop(key, None)
            raise

    async def _serve(self, key: str, argv: list[str], env: dict[str, str] | None, q: asyncio.Queue,
                     ready: asyncio.Future) -> None:
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client

        params = StdioServerParameters(command=argv[0], args=argv[1:], env=env)
        pending: asyncio.Future | None = None
        errlog = self._errlogs.get(key)
        if errlog is None:
            errlog = self._errlogs[key] = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
        try:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    init = await session.initialize()
                    self.opened += 1
                    info = getattr(init, "server_info", None)
                    ready.set_result({"name": getattr(info, "name", None) or argv[-1],
                                      "version": getattr(info, "version", None)})
                    while True:
                        op, payload, pending = await q.get()
                        if op == "close":
                            pending = None
                            break
                        try:
                            res = await asyncio.wait_for(_do(session, op, payload), self.timeout_s)
                        except asyncio.TimeoutError:
                            pending.set_exception(TimeoutError())
                            pending = None
                            break
                        except ToolCallError as err:
                            pending.set_exception(err)
                        except Exception as err:  # noqa: BLE001 - report to the caller, stop serving
                            pending.set_exception(ServerError(f"server {key!r} failed: {_why(err)}"))
                            pending = None
                            break
                        else:
                            pending.set_result(res)
                        pending = None
        except BaseException as err:  # noqa: BLE001 - start failure or a crash while serving
            if not ready.done():
                await asyncio.sleep(0.05)  # let the exited process's stderr reach the file
                tail = self.stderr_tail(key)
                ready.set_exception(ServerError(f"server {shlex.join(argv)!r} failed to start: {_why(err)}"
                                                + (f"; stderr: {tail}" if tail else "")))
            if pending is not None and not pending.done():
                pending.set_exception(ServerError(f"server {key!r} crashed: {_why(err)}"))
            while not q.empty():
                _, _, f = q.get_nowait()
                if f is not None and not f.done():
                    f.set_exception(ServerError(f"server {key!r} is gone"))
            if isinstance(err, asyncio.CancelledError):
                return


async def _wait(fut: Any) -> Any:
    return await fut


async def _do(session: Any, op: str, payload: Any) -> Any:
    if op == "list_tools":
        tools, cursor = [], None
        while True:
            res = await session.list_tools() if cursor is None else await session.list_tools(
                params=_page(cursor))
            tools.extend(res.tools)
            cursor = getattr(res, "next_cursor", None)
            if not cursor:
                return tools
    name, arguments = payload
    res = await session.call_tool(name, arguments)
    texts = [getattr(c, "text", "") for c in (res.content or [])]
    text = "\n".join(t for t in texts if t)
    if getattr(res, "is_error", False):
        raise ToolCallError(text or f"{name}: tool error")
    structured = getattr(res, "structured_content", None)
    if isinstance(structured, dict):
        return structured
    try:
        out = json.loads(text)
    except ValueError:
        return {"result": text}
    return out if isinstance(out, dict) else {"result": out}


def _page(cursor: str) -> Any:
    from mcp import types
    return types.PaginatedRequestParams(cursor=cursor)


def _why(err: BaseException) -> str:
    if isinstance(err, BaseExceptionGroup):
        return "; ".join(_why(e) for e in err.exceptions)
    text = str(err).strip().splitlines()[0] if str(err).strip() else ""
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


class LiveBackend:
    """Rollout backend over live bundled stdio servers (see the module docstring)."""

    def __init__(self, command_for: Callable[[str, tuple[int, int]], list[str]] | None = None,
                 timeout_s: float = 30.0):
        self.sessions = LiveSessions(timeout_s=timeout_s)
        self._command_for = command_for or (lambda server, inst: bundled_command(server, *inst))
        self._current: str | None = None
        self.opened_keys: list[str] = []

    def call(self, server: str, instance: tuple[int, int], name: str, arguments: dict[str, Any]) -> dict:
        key = f"{server}:s{instance[0]}:v{instance[1]}"
        if key != self._current:
            if self._current is not None:
                self.sessions.close(self._current)
            if key in self.opened_keys:
                raise ServerError(f"server {key!r} was already used and closed (rollouts must be grouped)")
            self._current = key
            self.opened_keys.append(key)
            self.sessions.open(key, self._command_for(server, instance))
        return self.sessions.call(key, name, arguments)

    def close(self) -> None:
        self.sessions.close_all()
        self._current = None
