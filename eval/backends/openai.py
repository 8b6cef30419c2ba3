"""The ``openai`` backend: any OpenAI-compatible ``/chat/completions`` endpoint (how a vLLM server is used on
GPU machines), through the standard library's ``urllib``; structured ``tool_calls`` in a response are
written back in the pinned text format (:func:`tool_calls_to_text`)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any

from eval.backends.base import _clean_messages, budgets
from eval.errors import BackendError
from eval.models import ChatRequest
from eval.parsing import CLOSE_TAG, OPEN_TAG
from toolscale.errors import UsageError

__all__ = ["OpenAIBackend", "tool_calls_to_text"]


def tool_calls_to_text(content: str | None, tool_calls: list[dict[str, Any]] | None) -> str:
    """An OpenAI response message as text in the pinned format (content, then one block per call).

    Arguments that are not valid JSON are kept as a JSON string, which the parser flags as malformed.
    """
    parts = [content or ""]
    for call in tool_calls or []:
        fn = call.get("function") or {}
        args: Any = fn.get("arguments", {})
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except ValueError:
                pass  # stays a string: malformed
        parts.append(OPEN_TAG + json.dumps({"name": fn.get("name"), "arguments": args}, ensure_ascii=False)
                     + CLOSE_TAG)
    return "".join(parts)


class OpenAIBackend:
    """An OpenAI-compatible chat-completions endpoint (e.g. ``vllm serve MODEL``), greedy, one request each.

    Parameters
    ----------
    model : str
        Served model name; ``""`` or ``"auto"`` asks ``GET {endpoint}/models`` for the first one.
    endpoint : str
        Base URL, e.g. ``http://localhost:8000/v1``.
    api_key : str or None
        Sent as a bearer token when given.
    timeout_s : float
        Per-request timeout in seconds.
    """

    name = "openai"

    def __init__(self, model: str, *, endpoint: str | None = None, api_key: str | None = None,
                 timeout_s: float = 120.0, **_: Any) -> None:
        if not endpoint:
            raise UsageError("the openai backend needs an endpoint URL, e.g. http://localhost:8000/v1; got none")
        if not endpoint.startswith(("http://", "https://")):
            raise UsageError(f"endpoint must be an http(s) URL, got {endpoint!r}")
        self.endpoint = endpoint.rstrip("/")
        self.api_key = api_key
        self.timeout_s = timeout_s
        self.model = model if model and model != "auto" else self._first_model()

    def _call(self, path: str, payload: dict[str, Any] | None = None) -> dict[str, Any]:
        url = f"{self.endpoint}/{path}"
        data = json.dumps(payload).encode() if payload is not None else None
        req = urllib.request.Request(url, data=data, method="POST" if data else "GET",
                                     headers={"Content-Type": "application/json",
                                              **({"Authorization": f"Bearer {self.api_key}"} if self.api_key else {})})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:  # noqa: S310 - user-given URL
                return json.loads(resp.read().decode("utf-8"))
        except urllib.error.HTTPError as err:
            body = err.read().decode("utf-8", "replace")[:200].replace("\n", " ")
            raise BackendError(f"{url} answered HTTP {err.code}: {body}") from None
        except (urllib.error.URLError, OSError, ValueError) as err:
            raise BackendError(f"cannot reach {url}: {err}") from None

    def _first_model(self) -> str:
        data = self._call("models").get("data") or []
        if not data:
            raise BackendError(f"{self.endpoint}/models lists no model; pass the served model name")
        return str(data[0]["id"])

    def generate(self, requests: list[ChatRequest], *, max_new_tokens: int | Sequence[int] = 128) -> list[str]:
        """One chat completion per request (temperature 0)."""
        out = []
        for r, limit in zip(requests, budgets(max_new_tokens, len(requests)), strict=True):
            payload: dict[str, Any] = {"model": self.model, "messages": _clean_messages(r.messages),
                                       "temperature": 0.0, "max_tokens": limit}
            if r.tools:
                payload["tools"] = r.tools
            resp = self._call("chat/completions", payload)
            try:
                msg = resp["choices"][0]["message"]
            except (KeyError, IndexError, TypeError):
                raise BackendError(f"unexpected response from {self.endpoint}: {str(resp)[:200]}") from None
            out.append(tool_calls_to_text(msg.get("content"), msg.get("tool_calls")))
        return out

    def score(self, requests: list[ChatRequest]) -> None:
        """Not supported over chat completions: the likelihood metrics are left out."""
        return None
