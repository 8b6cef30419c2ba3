"""An OpenAI-compatible chat-completions server over a saved causal LM on CPU (``toolscale serve-model``).

Routes: ``GET /v1/models``, ``POST /v1/chat/completions``, ``POST /v1/completions``, ``GET /health``. A request's ``messages`` and
``tools`` go through the model's own chat template (``apply_chat_template(messages, tools=tools,
add_generation_prompt=True)``); the completion is parsed as vLLM's ``hermes`` tool parser does:

- every ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` block becomes one entry of
  ``message.tool_calls`` (``function.arguments`` the JSON string of the arguments), ``content`` is the
  text before the first block (None when empty), and ``finish_reason`` is ``tool_calls``;
- if any block does not parse (invalid JSON, no name, unterminated), no tool call is reported and the
  whole completion is the ``content``, as in vLLM;
- otherwise ``finish_reason`` is ``length`` when the completion was cut at ``max_tokens``, else ``stop``.

Decoding is greedy at ``temperature`` 0, sampled otherwise (seeded by the request's ``seed`` when given).
``/v1/completions`` speaks the part of vLLM's protocol that scoring uses: ``prompt`` as token ids (one list,
or a list of lists: one choice each), ``max_tokens`` (greedy continuation) and vLLM's ``prompt_logprobs`` extension:
each choice carries ``prompt_logprobs``, ``null`` for the first position and then, per position, a dict from
token id (a string in JSON) to ``{"logprob", "rank", "decoded_token"}`` holding the prompt's own token and the
``prompt_logprobs`` most likely ones, exactly as ``vllm serve`` answers. So the vLLM scoring client
(:mod:`eval.vllm_server`) is tested against a real model here.

One request generates at a time (a lock: CPU generation does not overlap usefully); FastAPI runs the
handler in its thread pool, so ``/health`` stays responsive. Errors use OpenAI's shape
``{"error": {"message", "type", "code"}}``: 404 for another model name, 400 for a prompt longer than the
model's context, streaming, or ``n`` > 1.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from eval.backends import TransformersBackend, _clean_messages
from eval.errors import BackendError
from eval.parsing import parse_output

__all__ = ["ChatCompletionRequest", "CompletionRequest", "ModelServer", "build_app", "hermes_tool_calls",
           "DEFAULT_MAX_TOKENS"]

DEFAULT_MAX_TOKENS = 256
"""Completion tokens when a request gives no ``max_tokens``."""


class _Function(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str = Field(min_length=1)
    arguments: str | dict[str, Any] = ""


class _ToolCall(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str | None = None
    type: Literal["function"] = "function"
    function: _Function


class ChatMessage(BaseModel):
    """One OpenAI chat message as this server accepts it (a request with another shape is a 400)."""

    model_config = ConfigDict(extra="allow")

    role: Literal["system", "developer", "user", "assistant", "tool"]
    """Who speaks."""
    content: str | list[dict[str, Any]] | None = None
    """Text, or OpenAI content parts."""
    tool_calls: list[_ToolCall] | None = None
    """The assistant's tool calls."""
    tool_call_id: str | None = None
    """The call a ``tool`` message answers."""
    name: str | None = None
    """Optional speaker or tool name."""


class _ToolSchema(BaseModel):
    model_config = ConfigDict(extra="allow")

    type: Literal["function"] = "function"
    function: _Function | dict[str, Any]

    @field_validator("function")
    @classmethod
    def _named(cls, v: Any) -> Any:
        if not isinstance(v, _Function) and not (isinstance(v, dict) and isinstance(v.get("name"), str)
                                                  and v["name"]):
            raise ValueError("a tool's function needs a name")
        return v


def _check(model: type[BaseModel], value: Any, where: str) -> None:
    """``ValueError`` with one short line (``messages[0].role: Field required``) when ``value`` is not a ``model``."""
    from pydantic import ValidationError

    try:
        model.model_validate(value)
    except ValidationError as err:
        first = err.errors()[0]
        loc = ".".join(str(p) for p in first.get("loc", ()))
        raise ValueError(f"{where}{'.' + loc if loc else ''}: {first.get('msg', 'invalid')}") from None


class ChatCompletionRequest(BaseModel):
    """The chat-completions fields this server reads; other standard fields (``top_p``...) are accepted
    and ignored."""

    model_config = ConfigDict(extra="allow")

    model: str
    """Model name; must be the served one."""
    messages: list[dict[str, Any]] = Field(min_length=1)
    """OpenAI chat messages."""
    tools: list[dict[str, Any]] | None = None
    """OpenAI tool schemas, rendered by the chat template."""
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    """0 or None: greedy; above 0: sampling at this temperature."""
    max_tokens: int | None = Field(default=None, ge=1)
    """Most completion tokens (``max_completion_tokens`` is read too)."""
    max_completion_tokens: int | None = Field(default=None, ge=1)
    """The newer name of ``max_tokens``."""
    seed: int | None = None
    """Sampling seed (temperature > 0)."""
    stream: bool = False
    """Streaming is not supported (400)."""
    n: int = 1
    """Choices per request; only 1 is supported."""

    @field_validator("messages")
    @classmethod
    def _messages(cls, v: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Each message has a known role and well-formed tool calls (else 400, not a 500 from the template)."""
        for i, m in enumerate(v):
            _check(ChatMessage, m, f"messages[{i}]")
        return v

    @field_validator("tools")
    @classmethod
    def _tools(cls, v: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
        for i, t in enumerate(v or []):
            _check(_ToolSchema, t, f"tools[{i}]")
        return v


class CompletionRequest(BaseModel):
    """The ``/v1/completions`` fields this server reads (token-id prompts; vLLM's ``prompt_logprobs``)."""

    model_config = ConfigDict(extra="allow")

    model: str
    """Model name; must be the served one."""
    prompt: list[int] | list[list[int]] = Field(min_length=1)
    """Token ids (text prompts are not supported: scoring tokenizes locally, so ids are exact)."""
    max_tokens: int = Field(default=16, ge=1, le=4096)
    """Greedy continuation tokens per prompt."""
    prompt_logprobs: int | None = Field(default=None, ge=0, le=20)
    """vLLM's extension: log-probabilities of the prompt tokens, plus this many most likely tokens each."""
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    """Only greedy decoding (0 or None) is served."""


def hermes_tool_calls(text: str, call_prefix: str) -> tuple[str | None, list[dict[str, Any]]]:
    """``(content, tool_calls)`` of a completion, parsed like vLLM's hermes parser (module docstring).

    Examples
    --------
    >>> hermes_tool_calls('ok <tool_call>{"name": "f", "arguments": {"x": 1}}</tool_call>', "c")
    ('ok', [{'id': 'call_c_0', 'type': 'function', 'function': {'name': 'f', 'arguments': '{"x": 1}'}}])
    >>> hermes_tool_calls('<tool_call>{"name": "f", "argu', "c")
    ('<tool_call>{"name": "f", "argu', [])
    """
    if "<tool_call>" not in text:
        return (text or None), []
    parsed = parse_output(text)
    if parsed.malformed or not parsed.calls:
        return (text or None), []
    calls = [{"id": f"call_{call_prefix}_{i}", "type": "function",
              "function": {"name": c.name, "arguments": json.dumps(c.arguments, ensure_ascii=False)}}
             for i, c in enumerate(parsed.calls)]
    head = text[:text.find("<tool_call>")].strip()
    return (head or None), calls


class ModelServer:
    """The loaded model, its tokenizer and one generation at a time.

    Parameters
    ----------
    model_dir : str or Path
        A folder written by ``save_pretrained`` (model and tokenizer with a chat template).
    model_name : str, optional
        Name served (default: the folder's name).
    threads : int, optional
        ``torch.set_num_threads``.
    """

    def __init__(self, model_dir: str | Path, *, model_name: str | None = None, threads: int | None = None):
        self.backend = TransformersBackend(str(model_dir), batch_size=1, threads=threads)
        self.model_name = model_name or Path(model_dir).resolve().name
        self.context = int(getattr(self.backend.model.config, "max_position_embeddings", 0) or 0)
        self._lock = threading.Lock()
        self.created = int(time.time())

    def prompt_ids(self, req: ChatCompletionRequest) -> list[int]:
        """Token ids of the rendered conversation with the generation prompt; ``ValueError`` when the chat
        template cannot render the request (it is the request's shape, so a 400)."""
        tok = self.backend.tokenizer
        try:
            text = tok.apply_chat_template(_clean_messages(req.messages), tools=req.tools, tokenize=False,
                                           add_generation_prompt=True)
        except Exception as err:  # noqa: BLE001 - jinja's errors, KeyError, TypeError...: all the request's
            raise ValueError(f"the chat template cannot render these messages: {type(err).__name__}: "
                             f"{str(err)[:200]}") from None
        return tok(text, add_special_tokens=False)["input_ids"]

    def complete(self, req: ChatCompletionRequest) -> dict[str, Any]:
        """One chat completion as the OpenAI response body; ``ValueError`` for a prompt over the context."""
        import torch

        ids = self.prompt_ids(req)
        limit = req.max_completion_tokens or req.max_tokens or DEFAULT_MAX_TOKENS
        if self.context:
            if len(ids) >= self.context:
                raise ValueError(f"the prompt has {len(ids)} tokens; this model's context is {self.context}")
            limit = min(limit, self.context - len(ids))
        eos = self.backend._eos_ids()
        pad = self.backend.tokenizer.pad_token_id
        sample = bool(req.temperature)
        kwargs: dict[str, Any] = {"do_sample": sample}
        if sample:
            kwargs.update(temperature=float(req.temperature), top_k=0, top_p=1.0)
        with self._lock, torch.no_grad():
            if sample and req.seed is not None:
                torch.manual_seed(req.seed)
            x = torch.tensor([ids], dtype=torch.long)
            out = self.backend.model.generate(input_ids=x, attention_mask=torch.ones_like(x), max_new_tokens=limit,
                                              pad_token_id=pad, eos_token_id=eos, **kwargs)
        new = out[0, len(ids):].tolist()
        stop = next((k for k, t in enumerate(new) if t in eos), None)
        if stop is not None:
            new = new[:stop + 1]
        text = self.backend.tokenizer.decode(new, skip_special_tokens=True)
        digest = hashlib.sha256(json.dumps([ids, new]).encode()).hexdigest()[:12]
        content, calls = hermes_tool_calls(text, digest)
        finish = "tool_calls" if calls else ("length" if stop is None and len(new) >= limit else "stop")
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            message["tool_calls"] = calls
        return {"id": f"chatcmpl-{digest}", "object": "chat.completion", "created": int(time.time()),
                "model": self.model_name,
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {"prompt_tokens": len(ids), "completion_tokens": len(new),
                          "total_tokens": len(ids) + len(new)}}


def _prompt_logprobs(server: ModelServer, ids: list[int], top: int | None, max_tokens: int) -> dict[str, Any]:
    """One ``/v1/completions`` choice: greedy continuation and vLLM-shaped ``prompt_logprobs`` of ``ids``."""
    import torch

    backend = server.backend
    if server.context and len(ids) >= server.context:
        raise ValueError(f"the prompt has {len(ids)} tokens; this model's context is {server.context}")
    x = torch.tensor([ids], dtype=torch.long)
    with server._lock, torch.no_grad():
        logits = backend.model(input_ids=x).logits[0].float()
        out = backend.model.generate(input_ids=x, attention_mask=torch.ones_like(x), max_new_tokens=max_tokens,
                                     do_sample=False, pad_token_id=backend.tokenizer.pad_token_id)
    new = out[0, len(ids):].tolist()
    choice: dict[str, Any] = {"text": backend.tokenizer.decode(new, skip_special_tokens=False), "logprobs": None,
                              "finish_reason": "length"}
    if top is not None:
        logp = torch.log_softmax(logits, dim=-1)
        rows: list[Any] = [None]
        for t in range(1, len(ids)):
            lp = logp[t - 1]
            wanted = [ids[t], *torch.topk(lp, k=top).indices.tolist()] if top else [ids[t]]
            ranks = (lp.unsqueeze(0) > lp[wanted].unsqueeze(1)).sum(1) + 1
            rows.append({str(tok): {"logprob": float(lp[tok]), "rank": int(r),
                                    "decoded_token": backend.tokenizer.decode([tok], skip_special_tokens=False)}
                         for tok, r in zip(wanted, ranks.tolist())})
        choice["prompt_logprobs"] = rows
    return choice


def _error(status: int, message: str, kind: str = "invalid_request_error") -> Any:
    from fastapi.responses import JSONResponse

    return JSONResponse(status_code=status, content={"error": {"message": message, "type": kind, "code": status}})


def build_app(server: ModelServer) -> Any:
    """The FastAPI application serving ``server`` (see the module docstring for the routes)."""
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError

    app = FastAPI(title="toolscale serve-model", version="1")

    @app.exception_handler(RequestValidationError)
    async def _bad_request(request: Request, exc: RequestValidationError) -> Any:  # noqa: ARG001
        first = exc.errors()[0] if exc.errors() else {}
        loc = ".".join(str(p) for p in first.get("loc", ()) if p != "body") or "body"
        return _error(400, f"{loc}: {first.get('msg', 'invalid request')}")

    @app.get("/health")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/v1/models")
    def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": server.model_name, "object": "model", "created": server.created,
                                            "owned_by": "toolscale"}]}

    @app.post("/v1/chat/completions")
    def chat(req: ChatCompletionRequest) -> Any:
        if req.model != server.model_name:
            return _error(404, f"the model {req.model!r} does not exist; this server serves {server.model_name!r}",
                          "NotFoundError")
        if req.stream:
            return _error(400, "streaming is not supported by toolscale serve-model")
        if req.n != 1:
            return _error(400, f"n must be 1, got {req.n}")
        try:
            return server.complete(req)
        except ValueError as err:
            return _error(400, str(err))
        except BackendError as err:
            return _error(500, str(err), "internal_error")

    @app.post("/v1/completions")
    def completions(req: CompletionRequest) -> Any:
        if req.model != server.model_name:
            return _error(404, f"the model {req.model!r} does not exist; this server serves {server.model_name!r}",
                          "NotFoundError")
        if req.temperature:
            return _error(400, "only greedy completions (temperature 0) are served on /v1/completions")
        prompts = req.prompt if isinstance(req.prompt[0], list) else [req.prompt]
        try:
            choices = [{"index": i, **_prompt_logprobs(server, list(p), req.prompt_logprobs, req.max_tokens)}
                       for i, p in enumerate(prompts)]
        except ValueError as err:
            return _error(400, str(err))
        n_in = sum(len(p) for p in prompts)
        return {"id": "cmpl-" + hashlib.sha256(json.dumps(prompts).encode()).hexdigest()[:12],
                "object": "text_completion", "created": int(time.time()), "model": server.model_name,
                "choices": choices, "usage": {"prompt_tokens": n_in, "completion_tokens": req.max_tokens * len(prompts),
                                              "total_tokens": n_in + req.max_tokens * len(prompts)}}

    return app
