"""A scripted OpenAI-compatible endpoint: fault cases for tests, a fixed-latency server for benchmarks.

Real HTTP on 127.0.0.1 (a minimal HTTP/1.1 server with keep-alive on ``asyncio`` streams, in a
background thread), so the client is exercised exactly as against vLLM. Each ``POST
/v1/chat/completions`` gets the next :class:`Action` of the script: a completion, a status code (429
with ``Retry-After``, 500...), a hang (the client times out), a body that is not JSON, or a dropped
connection. ``GET /v1/models`` lists the configured model names.

The server measures what the client kept it doing: requests received, most and mean requests in flight
(time-weighted over the busy window from the first arrival to the last reply), and the busy window.

Examples
--------
>>> with ScriptedEndpoint([status(500), reply("hi")]) as ep:  # doctest: +SKIP
...     ep.url
'http://127.0.0.1:PORT/v1'
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Action", "ScriptedEndpoint", "reply", "tool_call", "status", "hang", "raw", "disconnect", "main"]


@dataclass(frozen=True)
class Action:
    """What the endpoint does with one chat request."""

    kind: str
    """``reply``, ``status``, ``hang``, ``raw``, ``drip`` or ``disconnect``."""
    body: dict | None = None
    """Response JSON (``reply``, ``status``)."""
    code: int = 200
    """HTTP status (``status``)."""
    headers: tuple[tuple[str, str], ...] = ()
    """Extra response headers, e.g. ``(("Retry-After", "0.1"),)``."""
    text: bytes = b""
    """Raw response body (``raw``)."""
    seconds: float = 0.0
    """How long to hang before closing the connection (``hang``), or between two bytes (``drip``), in seconds."""


def tool_call(name: str, arguments: str | dict, call_id: str | None = None) -> dict:
    """One OpenAI tool call; ``arguments`` given as a dict is sent as its JSON string."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id or f"call_{name}", "type": "function", "function": {"name": name, "arguments": args}}


def reply(content: str | None = "", tool_calls: list[dict] | None = None, finish_reason: str | None = None,
          prompt_tokens: int | None = 10, completion_tokens: int | None = 5) -> Action:
    """A well-formed completion (``usage`` left out when either token count is None)."""
    msg: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        msg["tool_calls"] = tool_calls
    finish = finish_reason or ("tool_calls" if tool_calls else "stop")
    body: dict[str, Any] = {"id": "cmpl-scripted", "object": "chat.completion", "created": 0, "model": "scripted",
                            "choices": [{"index": 0, "message": msg, "finish_reason": finish}]}
    if prompt_tokens is not None and completion_tokens is not None:
        body["usage"] = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                         "total_tokens": prompt_tokens + completion_tokens}
    return Action("reply", body=body)


def status(code: int, retry_after: float | str | None = None, message: str = "scripted error") -> Action:
    """An error status with an OpenAI-style error body, optionally with ``Retry-After``."""
    headers = (("Retry-After", str(retry_after)),) if retry_after is not None else ()
    return Action("status", body={"error": {"message": message, "code": code}}, code=code, headers=headers)


def hang(seconds: float) -> Action:
    """Hold the request ``seconds`` without answering, then drop the connection."""
    return Action("hang", seconds=seconds)


def raw(text: str | bytes, headers: tuple[tuple[str, str], ...] = ()) -> Action:
    """A 200 whose body is ``text`` verbatim (e.g. not JSON, or gzip with ``Content-Encoding: gzip``)."""
    return Action("raw", text=text.encode() if isinstance(text, str) else text, headers=headers)


def drip(action: Action, every_s: float) -> Action:
    """``action``'s response (a ``reply`` or ``raw``), its body sent one byte every ``every_s`` seconds."""
    body = action.text if action.kind == "raw" else json.dumps(action.body or {}).encode()
    return Action("drip", text=body, seconds=every_s, headers=action.headers)


def disconnect() -> Action:
    """Close the connection without any response."""
    return Action("disconnect")


_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 429: "Too Many Requests",
            500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable"}


@dataclass
class _Stats:
    dripped: int = 0
    requests: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    area: float = 0.0
    last_t: float = 0.0
    first_t: float | None = None
    end_t: float | None = None
    bodies: list = field(default_factory=list)
    headers: list = field(default_factory=list)


class ScriptedEndpoint:
    """An OpenAI-compatible server on 127.0.0.1 that plays a script.

    Parameters
    ----------
    script : sequence of Action, or callable ``(n, body) -> Action``
        A sequence is played in order, then ``then`` answers every later request; a callable gets the
        request number (0-based) and its JSON body.
    latency_s : float
        Delay before every chat answer, in seconds (requests overlap: the delay does not block others).
    models : sequence of str
        Names ``GET /v1/models`` lists.
    then : Action, optional
        Answer after a sequence script is used up (default: ``reply("ok")``).
    """

    def __init__(self, script: Sequence[Action] | Callable[[int, dict], Action] = (), *, latency_s: float = 0.0,
                 models: Sequence[str] = ("scripted",), then: Action | None = None):
        self._script = script
        self._then = then or reply("ok")
        self.latency_s = latency_s
        self.models = list(models)
        self._stats = _Stats()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.base_events.Server | None = None
        self.port = 0

    # ---- measurements ------------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        """The base URL clients use, ``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def requests(self) -> int:
        """Chat requests received so far."""
        return self._stats.requests

    @property
    def bodies(self) -> list[dict]:
        """JSON bodies of the chat requests received, in arrival order."""
        return list(self._stats.bodies)

    @property
    def headers(self) -> list[dict[str, str]]:
        """Headers (lower-case names) of the chat requests received, in arrival order."""
        return list(self._stats.headers)

    @property
    def max_in_flight(self) -> int:
        """Most chat requests being answered at one time."""
        return self._stats.max_in_flight

    @property
    def busy_s(self) -> float:
        """Seconds from the first chat request's arrival to the last answer."""
        s = self._stats
        return 0.0 if s.first_t is None or s.end_t is None else s.end_t - s.first_t

    @property
    def mean_in_flight(self) -> float:
        """Time-weighted mean of requests in flight over :attr:`busy_s`."""
        return self._stats.area / self.busy_s if self.busy_s > 0 else 0.0

    def stats(self) -> dict[str, float]:
        """The measurements as one mapping (also served at ``GET /_stats``; ``POST /_stats`` resets them)."""
        return {"requests": self.requests, "max_in_flight": self.max_in_flight,
                "mean_in_flight": self.mean_in_flight, "busy_s": self.busy_s}

    def reset_stats(self) -> None:
        """Forget the measurements (not the script position)."""
        with self._lock:
            self._stats = _Stats(requests=self._stats.requests)

    def _enter(self) -> None:
        with self._lock:
            s, now = self._stats, time.perf_counter()
            if s.first_t is None:
                s.first_t = s.last_t = now
            s.area += s.in_flight * (now - s.last_t)
            s.last_t = now
            s.in_flight += 1
            s.max_in_flight = max(s.max_in_flight, s.in_flight)

    def _leave(self) -> None:
        with self._lock:
            s, now = self._stats, time.perf_counter()
            s.area += s.in_flight * (now - s.last_t)
            s.last_t = s.end_t = now
            s.in_flight -= 1

    # ---- serving ----------------------------------------------------------------------------------------
    def _next(self, body: dict, headers: dict[str, str]) -> Action:
        with self._lock:
            n = self._stats.requests
            self._stats.requests += 1
            self._stats.bodies.append(body)
            self._stats.headers.append(headers)
        if callable(self._script):
            return self._script(n, body)
        return self._script[n] if n < len(self._script) else self._then

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await self._serve(reader, writer)
        except (asyncio.CancelledError, ConnectionError):  # stop() cancels, or the client went away
            pass
        finally:
            writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                return
            lines = head.decode("latin-1").split("\r\n")
            method, path, _ = (lines[0].split(" ", 2) + ["", ""])[:3]
            headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:] if ln)}
            n = int(headers.get("content-length", "0") or 0)
            payload = await reader.readexactly(n) if n else b""
            if path.rstrip("/") == "/_stats":  # the measurements, for a server in another process
                if method == "POST":
                    self.reset_stats()
                await self._send(writer, 200, self.stats())
                continue
            if method == "GET" and path.rstrip("/").endswith("/models"):
                await self._send(writer, 200, {"object": "list",
                                               "data": [{"id": m, "object": "model"} for m in self.models]})
                continue
            if method != "POST" or not path.rstrip("/").endswith("/chat/completions"):
                await self._send(writer, 404, {"error": {"message": f"no route {method} {path}"}})
                continue
            try:
                body = json.loads(payload or b"{}")
            except ValueError:
                body = {}
            self._enter()
            try:
                action = self._next(body, headers)
                if self.latency_s:
                    await asyncio.sleep(self.latency_s)
                if action.kind == "hang":
                    await asyncio.sleep(action.seconds)
                    return
                if action.kind == "disconnect":
                    return
                if action.kind == "raw":
                    await self._send(writer, 200, action.text, action.headers)
                elif action.kind == "drip":
                    await self._drip(writer, action)
                else:
                    await self._send(writer, action.code, action.body or {}, action.headers)
            finally:
                self._leave()

    async def _drip(self, writer: asyncio.StreamWriter, action: Action) -> None:
        """Headers at once, then the body a byte at a time; counts the body bytes sent (``dripped``)."""
        extra = "".join(f"{k}: {v}\r\n" for k, v in action.headers)
        writer.write(f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(action.text)}\r\n"
                     f"{extra}\r\n".encode())
        await writer.drain()
        for i in range(len(action.text)):
            await asyncio.sleep(action.seconds)
            writer.write(action.text[i:i + 1])
            await writer.drain()
            with self._lock:
                self._stats.dripped += 1

    @property
    def dripped(self) -> int:
        """Body bytes sent by ``drip`` actions so far."""
        with self._lock:
            return self._stats.dripped

    @staticmethod
    async def _send(writer: asyncio.StreamWriter, code: int, body: dict | bytes,
                    headers: tuple[tuple[str, str], ...] = ()) -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        extra = "".join(f"{k}: {v}\r\n" for k, v in headers)
        writer.write(f"HTTP/1.1 {code} {_REASONS.get(code, 'Status')}\r\nContent-Type: application/json\r\n"
                     f"Content-Length: {len(data)}\r\n{extra}\r\n".encode() + data)
        await writer.drain()

    # ---- lifecycle ----------------------------------------------------------------------------------------
    def start(self) -> "ScriptedEndpoint":
        """Listen on a free port of 127.0.0.1 (see :attr:`url`)."""
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(target=loop.run_forever, name="scripted-endpoint", daemon=True)
        self._thread.start()

        async def serve() -> None:
            self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0, backlog=512)
            self.port = self._server.sockets[0].getsockname()[1]

        asyncio.run_coroutine_threadsafe(serve(), loop).result()
        return self

    def stop(self) -> None:
        """Stop listening, drop open connections and end the thread (idempotent)."""
        loop = self._loop
        if loop is None:
            return
        self._loop = None

        async def shutdown() -> None:
            if self._server is not None:
                self._server.close()
                if hasattr(self._server, "close_clients"):
                    self._server.close_clients()
            for t in asyncio.all_tasks():
                if t is not asyncio.current_task():
                    t.cancel()

        asyncio.run_coroutine_threadsafe(shutdown(), loop).result()
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join()
        loop.close()

    def __enter__(self) -> "ScriptedEndpoint":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    """``python -m synth.llm.scripted [--latency S]``: serve ``reply("ok")`` after ``S`` seconds per request,
    printing the base URL on stdout, until interrupted (for benchmarks with the endpoint in its own process)."""
    import argparse
    import sys

    ap = argparse.ArgumentParser(prog="python -m synth.llm.scripted")
    ap.add_argument("--latency", type=float, default=0.2, help="seconds before each answer (default 0.2)")
    args = ap.parse_args(argv)
    ep = ScriptedEndpoint([], latency_s=args.latency).start()
    print(ep.url, flush=True)
    try:
        sys.stdin.read()  # until the parent closes our stdin
    except KeyboardInterrupt:
        pass
    ep.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
