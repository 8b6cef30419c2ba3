"""The OpenAI-compatible chat-completions client shared by every LLM role (async core, sync wrappers).

Only the standard protocol is spoken: ``POST {base_url}/chat/completions`` with ``model``, ``messages``,
``temperature``, ``max_tokens`` and, when given, ``tools``; the reply's first choice gives ``content``
and ``tool_calls`` (``function.arguments`` a JSON string). ``GET {base_url}/models`` is used once by
:meth:`LLMClient.check` when the endpoint has it. No toolscale-specific field is sent or expected.

Outcomes of one request (each is a retry, a counted rejection, or a clean failure; never a silent pass):

=====================================  =========================================================
endpoint did                           client does
=====================================  =========================================================
200 with a well-formed completion      returns a :class:`~synth.llm.models.ChatReply`, caches it
429 or 5xx                             retries after ``Retry-After`` (capped) or backoff, at most
                                       ``max_tries`` attempts, then :class:`LLMEndpointError`
timeout, connection refused or reset   retries likewise, then :class:`LLMEndpointError`
no whole reply within ``timeout_s``    (a total deadline on connect, send and read: a server that drips
                                       one byte a second) retries likewise, then :class:`LLMEndpointError`
200 that is not JSON or not a          retries likewise, then :class:`LLMReplyError`
completion (no choices, bad shapes,    (``reason="malformed_reply"``): the caller rejects the sample
nested too deep to parse), or larger
than :func:`reply_cap` once decoded
400, 413, 422                          :class:`LLMReplyError` (``reason="http_400"``...), no retry
401, 403, 404 and other 4xx            :class:`LLMEndpointError` naming the URL, no retry
=====================================  =========================================================

Backoff before attempt ``k + 1`` is ``min(max_backoff_s, backoff_s * 2**k)`` times a uniform factor in
[0.5, 1] (so concurrent clients spread out); a ``Retry-After`` of seconds or an HTTP date replaces it,
capped at ``max_retry_after_s``. Truncated tool calls, unknown tool names and arguments that violate the
schema are *content*: they come back in the reply and :func:`synth.llm.toolcalls.check_tool_calls`
names them.

Concurrency: each role holds at most ``concurrency`` requests in flight: it owns that many HTTP clients of
one keep-alive connection each, and a request waits for a free one.
The sync :meth:`LLMClient.chat` and :meth:`LLMClient.chat_many` run the async core on one background
event loop, so threads can share one client and its limits.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import os
import random
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from synth.errors import LLMConfigError, LLMEndpointError, LLMReplyError
from synth.llm.cache import ResponseCache, request_key
from synth.llm.http import TransportFailure, read_capped, reply_cap
from synth.llm.models import ChatReply, LLMUsage, ReplyToolCall
from toolscale.config import LLM_ROLES, LLMRoleSpec

__all__ = ["LLMClient", "retry_after_s", "parse_completion", "request_body"]

_RETRY_STATUS = frozenset({429, 500, 502, 503, 504}) | frozenset(range(505, 600))
_REJECT_STATUS = frozenset({400, 413, 422})
@dataclass
class _Counters:
    requests: int = 0
    retries: int = 0
    cache_hits: int = 0
    failures: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    unmetered: int = 0
    dollars: float = 0.0
    dollars_spent: float = 0.0


def retry_after_s(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (seconds or an HTTP date); None if absent or unreadable.

    Examples
    --------
    >>> retry_after_s("1.5"), retry_after_s(None), retry_after_s("soon")
    (1.5, None, None)
    """
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _tls_context() -> Any:
    """The TLS context of every connection: the system's defaults with certifi's CA bundle (as httpx uses)."""
    import ssl

    try:
        import certifi
    except ImportError:  # pragma: no cover - httpx depends on certifi
        return ssl.create_default_context()
    return ssl.create_default_context(cafile=certifi.where())


def _clean_message(m: Mapping[str, Any]) -> dict[str, Any]:
    """A message without None-valued keys (``tool_calls: null`` upsets some servers)."""
    return {k: v for k, v in m.items() if v is not None}


def request_body(spec: LLMRoleSpec, messages: Sequence[Mapping[str, Any]],
                 tools: Sequence[Mapping[str, Any]] | None) -> dict[str, Any]:
    """The JSON body of one chat-completions request (standard fields only)."""
    body: dict[str, Any] = {"model": spec.model, "messages": [_clean_message(m) for m in messages],
                            "temperature": spec.temperature, "max_tokens": spec.max_tokens}
    if tools:
        body["tools"] = [dict(t) for t in tools]
    return body


def parse_completion(data: Any, role: str, model: str, key: str, cached: bool) -> ChatReply:
    """The first choice of a chat-completions response body; ``ValueError`` naming what is malformed."""
    if not isinstance(data, dict):
        raise ValueError(f"response is a {type(data).__name__}, not an object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ValueError("response has no choices")
    msg = choices[0].get("message")
    if not isinstance(msg, dict):
        raise ValueError("choices[0] has no message")
    content = msg.get("content")
    if content is not None and not isinstance(content, str):
        raise ValueError("message.content is not a string")
    raw_calls = msg.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise ValueError("message.tool_calls is not a list")
    calls = []
    for i, c in enumerate(raw_calls):
        fn = c.get("function") if isinstance(c, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise ValueError(f"tool_calls[{i}] has no function name")
        args = fn.get("arguments", "")
        if isinstance(args, dict):  # a non-standard object; normalise to the standard JSON string
            args = json.dumps(args, ensure_ascii=False)
        if not isinstance(args, str):
            raise ValueError(f"tool_calls[{i}].function.arguments is not a string")
        cid = c.get("id") if isinstance(c.get("id"), str) and c.get("id") else f"call_{key[:12]}_{i}"
        calls.append(ReplyToolCall(id=cid, name=fn["name"], arguments=args))
    finish = choices[0].get("finish_reason")
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    t_in, t_out = usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)
    t_in = t_in if isinstance(t_in, int) and t_in >= 0 else 0
    t_out = t_out if isinstance(t_out, int) and t_out >= 0 else 0
    return ChatReply(role=role, model=model, content=content or "", tool_calls=calls,
                     finish_reason=finish if isinstance(finish, str) else None,
                     tokens_in=t_in, tokens_out=t_out, cached=cached, key=key)


class LLMClient:
    """Chat completions for the configured roles, with retries, a response cache and accounting.

    Parameters
    ----------
    roles : mapping of role name to LLMRoleSpec
        The configured roles (``[synth.llm.<role>]``); names must be in :data:`toolscale.config.LLM_ROLES`.
    cache : ResponseCache, path or None
        Response cache (a folder path is opened as one); None caches nothing.
    env : mapping, optional
        Where API keys are looked up (default ``os.environ``); read once, here.
    backoff_s, max_backoff_s : float
        First backoff and its cap, in seconds (see the module docstring).
    max_retry_after_s : float
        Longest ``Retry-After`` honoured, in seconds.

    Raises
    ------
    LLMConfigError
        An unknown role, or an ``api_key_env`` whose variable is not set (the message names it).

    Examples
    --------
    >>> from toolscale.config import LLMRoleSpec
    >>> LLMClient({"judge": LLMRoleSpec(base_url="http://127.0.0.1:8000/v1", model="m")}).roles
    ('judge',)
    """

    def __init__(self, roles: Mapping[str, LLMRoleSpec], *, cache: ResponseCache | str | os.PathLike | None = None,
                 env: Mapping[str, str] | None = None, backoff_s: float = 0.5, max_backoff_s: float = 8.0,
                 max_retry_after_s: float = 60.0):
        env = os.environ if env is None else env
        self._specs: dict[str, LLMRoleSpec] = {}
        self._keys: dict[str, str | None] = {}
        for name, spec in roles.items():
            if name not in LLM_ROLES:
                raise LLMConfigError(f"unknown LLM role {name!r}; expected one of {', '.join(LLM_ROLES)}")
            if not isinstance(spec, LLMRoleSpec):
                spec = LLMRoleSpec.model_validate(spec)
            key = None
            if spec.api_key_env is not None:
                key = env.get(spec.api_key_env)
                if not key:
                    raise LLMConfigError(f"llm.{name}.api_key_env: environment variable {spec.api_key_env!r} "
                                         "is not set (it must hold the endpoint's API key)")
            self._specs[name], self._keys[name] = spec, key
        self.cache = ResponseCache(cache) if isinstance(cache, str | os.PathLike) else cache
        self.backoff_s, self.max_backoff_s, self.max_retry_after_s = backoff_s, max_backoff_s, max_retry_after_s
        self._counters = {name: _Counters() for name in self._specs}
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._http: Any = None
        self._lanes: dict[str, asyncio.Queue] = {}
        self._all_lanes: list[Any] = []
        self._jitter = random.Random()

    # ---- configuration -------------------------------------------------------------------------------
    @property
    def roles(self) -> tuple[str, ...]:
        """Configured role names, in configuration order."""
        return tuple(self._specs)

    def has(self, role: str) -> bool:
        """Whether ``role`` is configured (else its offline template is used)."""
        return role in self._specs

    def spec(self, role: str) -> LLMRoleSpec:
        """The configuration of ``role``; LLMConfigError listing the configured ones otherwise."""
        try:
            return self._specs[role]
        except KeyError:
            known = ", ".join(self._specs) or "none"
            raise LLMConfigError(f"LLM role {role!r} is not configured (configured: {known})") from None

    # ---- event loop plumbing --------------------------------------------------------------------------
    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                t = threading.Thread(target=loop.run_forever, name="llm-client", daemon=True)
                t.start()
                self._loop, self._thread = loop, t
            return self._loop

    def _run(self, coro: Any) -> Any:
        fut: Future = asyncio.run_coroutine_threadsafe(coro, self._ensure_loop())
        return fut.result()

    def _client(self) -> Any:
        """The HTTP client of the preflight check (one connection)."""
        if self._http is None:
            import httpx

            self._http = httpx.AsyncClient(limits=httpx.Limits(max_connections=1), follow_redirects=False,
                                           verify=_tls_context())
        return self._http

    def _lane_queue(self, role: str) -> asyncio.Queue:
        """``concurrency`` one-connection HTTP clients of ``role``; taking one is the concurrency limit.

        One pool of many connections would do, but httpcore's pool scans all its connections for every
        request (quadratic in the connections in use): at 32 in flight that cost ~3 ms of CPU a request.
        """
        if role not in self._lanes:
            import httpx

            q: asyncio.Queue = asyncio.Queue()
            tls = _tls_context()  # one for all: building one per client costs ~0.1 s each
            for _ in range(self._specs[role].concurrency):
                c = httpx.AsyncClient(limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
                                      follow_redirects=False, verify=tls)
                self._all_lanes.append(c)
                q.put_nowait(c)
            self._lanes[role] = q
        return self._lanes[role]

    def _headers(self, role: str) -> dict[str, str]:
        h = {"Content-Type": "application/json"}
        if self._keys[role]:
            h["Authorization"] = f"Bearer {self._keys[role]}"
        return h

    # ---- requests ---------------------------------------------------------------------------------------
    async def achat(self, role: str, messages: Sequence[Mapping[str, Any]],
                    tools: Sequence[Mapping[str, Any]] | None = None, *, salt: str = "") -> ChatReply:
        """One chat completion for ``role`` (the async core; see the module docstring for outcomes).

        It must run on the client's own loop: from synchronous code call :meth:`chat`, :meth:`submit` or
        :meth:`chat_many`; from other async code ``await asyncio.wrap_future(client.submit(...))``.

        Parameters
        ----------
        role : str
            A configured role.
        messages : list of dict
            OpenAI chat messages (``role``, ``content``, ``tool_calls``, ``tool_call_id``, ``name``).
        tools : list of dict, optional
            OpenAI tool schemas ``{"type": "function", "function": {...}}``.
        salt : str
            Part of the cache key only (e.g. a sample index), never sent.
        """
        spec = self.spec(role)
        body = request_body(spec, messages, tools)
        key = request_key(spec.base_url, body, salt)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                try:
                    reply = parse_completion(hit, role, spec.model, key, cached=True)
                except (ValueError, RecursionError):
                    reply = None
                if reply is not None:
                    self._account(role, reply, sent=False)
                    return reply
        lanes = self._lane_queue(role)
        http = await lanes.get()
        try:
            data = await self._post(role, spec, body, http)
        finally:
            lanes.put_nowait(http)
        reply = parse_completion(data, role, spec.model, key, cached=False)
        if self.cache is not None:
            self.cache.put(key, data)
        self._account(role, reply, sent=True)
        return reply

    async def _post(self, role: str, spec: LLMRoleSpec, body: dict[str, Any], http: Any, *,
                    path: str = "/chat/completions", check: Any = None) -> dict[str, Any]:
        url = spec.base_url.rstrip("/") + path
        last = ""
        malformed = False
        for attempt in range(spec.max_tries):
            wait = None
            try:
                async with asyncio.timeout(spec.timeout_s):  # the whole attempt: connect, send, every byte read
                    status, headers, data = await self._attempt(http, url, body, self._headers(role),
                                                                spec.timeout_s, reply_cap(spec))
            except TimeoutError:
                last, malformed = f"no whole reply within {spec.timeout_s:g} s", False
            except ValueError as err:  # past the size cap, an unknown encoding, a body that does not inflate
                last, malformed = f"malformed reply: {err}", True
            except TransportFailure as err:
                last, malformed = str(err), False
            else:
                if status == 200:
                    try:
                        parsed = json.loads(data)
                        if check is not None:
                            check(parsed)
                        else:
                            parse_completion(parsed, role, spec.model, "0" * 12, cached=False)
                        return parsed
                    except (ValueError, RecursionError) as err:  # RecursionError: JSON nested too deep
                        why = "nested too deeply" if isinstance(err, RecursionError) else str(err)[:80]
                        last, malformed = f"malformed reply: {why}", True
                elif status in _RETRY_STATUS:
                    last, malformed = f"HTTP {status}", False
                    wait = retry_after_s(headers.get("retry-after"))
                elif status in _REJECT_STATUS:
                    self._count(role, "failures")
                    text = data[:120].decode("utf-8", "replace")
                    raise LLMReplyError(f"LLM endpoint {url} (role {role}) refused the request: HTTP {status} "
                                        f"{text!r}", reason=f"http_{status}")
                else:
                    self._count(role, "failures")
                    hint = " (check the URL and model name)" if status == 404 else \
                        " (check the API key)" if status in (401, 403) else ""
                    raise LLMEndpointError(f"LLM endpoint {url} (role {role}, model {spec.model!r}) answered "
                                           f"HTTP {status}{hint}")
            if attempt + 1 < spec.max_tries:
                self._count(role, "retries")
                if wait is None:
                    wait = min(self.max_backoff_s, self.backoff_s * 2 ** attempt) * (0.5 + 0.5 * self._jitter.random())
                await asyncio.sleep(min(wait, self.max_retry_after_s))
        self._count(role, "failures")
        if malformed:
            raise LLMReplyError(f"LLM endpoint {url} (role {role}): {last} after {spec.max_tries} tries",
                                reason="malformed_reply")
        raise LLMEndpointError(f"LLM endpoint {url} (role {role}): {last} after {spec.max_tries} tries")

    @staticmethod
    async def _attempt(http: Any, url: str, body: dict[str, Any], headers: dict[str, str], timeout_s: float,
                       cap: int) -> tuple[int, Any, bytes]:
        """One POST, streamed: ``(status, headers, decoded body)``; the body is read (and decompressed) only up
        to ``cap`` bytes (:class:`ValueError` past it), so neither a huge reply nor a gzip bomb is held."""
        import httpx

        try:
            async with http.stream("POST", url, json=body, headers={**headers, "Accept-Encoding": "gzip, deflate"},
                                   timeout=httpx.Timeout(timeout_s)) as resp:
                return resp.status_code, resp.headers, await read_capped(resp, cap)
        except httpx.TimeoutException:
            raise TimeoutError from None
        except httpx.TransportError as err:
            raise TransportFailure(f"unreachable ({type(err).__name__})") from None

    def chat(self, role: str, messages: Sequence[Mapping[str, Any]],
             tools: Sequence[Mapping[str, Any]] | None = None, *, salt: str = "") -> ChatReply:
        """:meth:`achat` from synchronous code (any thread); raises what it raises."""
        return self._run(self.achat(role, messages, tools, salt=salt))

    def submit(self, role: str, messages: Sequence[Mapping[str, Any]],
               tools: Sequence[Mapping[str, Any]] | None = None, *, salt: str = "") -> Future:
        """Start :meth:`achat` on the client's loop; a ``concurrent.futures.Future`` of its reply.

        For callers that keep many requests going from synchronous code (e.g. one rollout per thread).
        """
        return asyncio.run_coroutine_threadsafe(self.achat(role, messages, tools, salt=salt), self._ensure_loop())

    def chat_many(self, role: str, requests: Sequence[Mapping[str, Any]]) -> list[ChatReply | LLMReplyError]:
        """Many requests at once, up to the role's ``concurrency`` in flight; results in request order.

        Each request is a mapping with ``messages`` and optionally ``tools`` and ``salt``. A request whose
        reply is unusable gives its :class:`LLMReplyError` in its place (the caller counts the rejection);
        an :class:`LLMEndpointError` (endpoint down) is raised for the whole batch, and the batch's other
        requests are cancelled.
        """
        async def one(r: Mapping[str, Any]) -> ChatReply | LLMReplyError:
            try:
                return await self.achat(role, r["messages"], r.get("tools"), salt=r.get("salt", ""))
            except LLMReplyError as err:
                return err

        async def run() -> list[ChatReply | LLMReplyError]:
            tasks = [asyncio.ensure_future(one(r)) for r in requests]
            try:
                return list(await asyncio.gather(*tasks))
            except BaseException:  # the endpoint is down: stop the rest instead of retrying in the background
                for t in tasks:
                    t.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                raise

        return self._run(run())

    def post_many(self, role: str, path: str, bodies: Sequence[Mapping[str, Any]], *,
                  check: Any = None) -> list[dict[str, Any]]:
        """POST each body to ``{base_url}{path}`` of ``role``'s endpoint with the same concurrency limit and
        retries as chat requests; the JSON replies in order (nothing is cached).

        For the other routes of an OpenAI-compatible server (vLLM's ``/completions`` with ``prompt_logprobs``,
        chat requests with per-request ``max_tokens``). ``check(reply)`` raises ``ValueError`` for a malformed
        reply, which is retried like one. Raises like :meth:`chat_many` (an unusable reply's
        :class:`LLMReplyError` or a down endpoint's :class:`LLMEndpointError`, the rest cancelled).
        """
        spec = self.spec(role)

        async def one(body: Mapping[str, Any]) -> dict[str, Any]:
            lanes = self._lane_queue(role)
            http = await lanes.get()
            try:
                return await self._post(role, spec, dict(body), http, path=path,
                                        check=check or (lambda data: None))
            finally:
                lanes.put_nowait(http)

        async def run() -> list[dict[str, Any]]:
            tasks = [asyncio.ensure_future(one(b)) for b in bodies]
            try:
                return list(await asyncio.gather(*tasks))
            except BaseException:
                for t in tasks:
                    t.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                raise

        return self._run(run())

    # ---- preflight -------------------------------------------------------------------------------------
    def check(self) -> None:
        """Reach every configured endpoint once (``GET /models``) and check its model names; fails in seconds.

        Raises :class:`LLMEndpointError` naming the URL when an endpoint is unreachable or refuses the key,
        and :class:`LLMConfigError` when ``/models`` lists models and the configured one is not among them.
        Endpoints without a ``/models`` route (404, 405) are trusted.
        """
        self._run(self._check())

    async def _check(self) -> None:
        import httpx

        listed: dict[tuple[str, str | None], list[str] | None] = {}
        for role, spec in self._specs.items():
            ck = (spec.base_url, self._keys[role])
            if ck not in listed:
                listed[ck] = await self._models(role, spec, httpx)
            names = listed[ck]
            if names is not None and spec.model not in names:
                raise LLMConfigError(f"llm.{role}.model: unknown model {spec.model!r} at {spec.base_url}; "
                                     f"it serves: {', '.join(names) or 'none'}")

    async def _models(self, role: str, spec: LLMRoleSpec, httpx: Any) -> list[str] | None:
        url = spec.base_url.rstrip("/") + "/models"
        timeout = httpx.Timeout(min(spec.timeout_s, 10.0))
        last = ""
        for attempt in range(2):
            try:
                resp = await self._client().get(url, headers=self._headers(role), timeout=timeout)
            except httpx.TimeoutException:
                last = f"no reply within {min(spec.timeout_s, 10.0):g} s"
            except httpx.TransportError as err:
                last = f"unreachable ({type(err).__name__})"
            else:
                if resp.status_code in (404, 405):
                    return None
                if resp.status_code in (401, 403):
                    raise LLMEndpointError(f"LLM endpoint {url} (role {role}) refused the API key: HTTP "
                                           f"{resp.status_code}")
                if resp.status_code == 200:
                    try:
                        data = resp.json().get("data")
                        return [m["id"] for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)]
                    except (ValueError, AttributeError, TypeError):
                        return None
                last = f"HTTP {resp.status_code}"
            if attempt == 0:
                await asyncio.sleep(0.5)
        raise LLMEndpointError(f"LLM endpoint {url} (role {role}) is not usable: {last}")

    # ---- accounting ------------------------------------------------------------------------------------
    def _count(self, role: str, what: str) -> None:
        with self._lock:
            c = self._counters[role]
            setattr(c, what, getattr(c, what) + 1)

    def _account(self, role: str, reply: ChatReply, sent: bool) -> None:
        spec = self._specs[role]
        cost = reply.tokens_in * spec.price_in / 1e6 + reply.tokens_out * spec.price_out / 1e6
        with self._lock:
            c = self._counters[role]
            c.tokens_in += reply.tokens_in
            c.tokens_out += reply.tokens_out
            c.dollars += cost
            c.unmetered += reply.tokens_in == 0 and reply.tokens_out == 0
            if sent:
                c.requests += 1
                c.dollars_spent += cost
            else:
                c.cache_hits += 1

    def usage(self, accepted: int | None = None) -> dict[str, LLMUsage]:
        """Usage per configured role so far; with ``accepted`` (trajectories kept) also dollars per trajectory."""
        out = {}
        with self._lock:
            for role, c in self._counters.items():
                per = c.dollars / accepted if accepted else None
                out[role] = LLMUsage(requests=c.requests, retries=c.retries, cache_hits=c.cache_hits,
                                     failures=c.failures, tokens_in=c.tokens_in, tokens_out=c.tokens_out,
                                     unmetered=c.unmetered, dollars=round(c.dollars, 9),
                                     dollars_spent=round(c.dollars_spent, 9),
                                     dollars_per_accepted=None if per is None else round(per, 9))
        return out

    # ---- lifecycle -------------------------------------------------------------------------------------
    def close(self) -> None:
        """Close the HTTP connections and stop the background loop (idempotent)."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None:
            return
        clients = self._all_lanes + ([self._http] if self._http is not None else [])

        async def close_all() -> None:
            for c in clients:
                await c.aclose()

        asyncio.run_coroutine_threadsafe(close_all(), loop).result()
        self._http, self._all_lanes = None, []
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join()
        loop.close()
        self._lanes = {}

    def __enter__(self) -> "LLMClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
