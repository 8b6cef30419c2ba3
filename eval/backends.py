"""Generation backends behind one small interface, registered by name and imported lazily.

A backend turns :class:`~eval.models.ChatRequest` objects into completion *text* in the pinned
tool-call format (interface 3), which :func:`eval.parsing.parse_output` then reads; backends that
can also score a given continuation (transformers) feed the likelihood metrics.

* ``transformers`` (default): ``generate`` on the CPU (or the model's device), greedy, batched
  with left padding; ``score`` sums the log-probabilities of the assistant tokens of a
  conversation (the chat template's ``{% generation %}`` mask, else the last assistant turn).
* ``openai``: any OpenAI-compatible ``/chat/completions`` endpoint (how a vLLM server is used on GPU
  machines), via the standard library's ``urllib``; structured ``tool_calls`` in the response are
  written back in the pinned text format.
* ``vllm``: vLLM in-process, only where ``import vllm`` works (never beside our pinned torch here).
"""

from __future__ import annotations

import importlib
import json
import urllib.error
import urllib.request
from pathlib import Path
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from eval.errors import BackendError
from eval.models import ChatRequest, ContinuationScore
from eval.parsing import CLOSE_TAG, OPEN_TAG
from toolscale.errors import UsageError

__all__ = ["Backend", "BACKENDS", "get_backend", "budgets", "TransformersBackend", "OpenAIBackend", "VLLMBackend",
           "tool_calls_to_text", "scored_ids", "scored_bytes"]


@runtime_checkable
class Backend(Protocol):
    """What the runner needs from a model."""

    name: str

    def generate(self, requests: list[ChatRequest], *, max_new_tokens: int | Sequence[int]) -> list[str]:
        """One greedy completion (text, special tokens removed) per request, in order.

        ``max_new_tokens`` is one cap for all requests or one per request; a completion never
        depends on which other requests share its batch.
        """
        ...  # pragma: no cover

    def score(self, requests: list[ChatRequest]) -> list[ContinuationScore] | None:
        """Log-likelihood of each conversation's assistant turns, or None when unsupported."""
        ...  # pragma: no cover


BACKENDS: dict[str, str] = {
    "transformers": "eval.backends:TransformersBackend",
    "openai": "eval.backends:OpenAIBackend",
    "vllm": "eval.backends:VLLMBackend",
    "vllm-server": "eval.vllm_server:VLLMServerBackend",
}
"""Backend name -> ``"module:class"``; each class takes ``(model, **options)``."""


def get_backend(name: str, model: str, **options: Any) -> Backend:
    """Instantiate backend ``name`` for ``model`` (a folder, a hub id on a cluster, or a served model name)."""
    if name not in BACKENDS:
        raise UsageError(f"unknown backend {name!r}; known: {', '.join(BACKENDS)}")
    module, attr = BACKENDS[name].split(":")
    return getattr(importlib.import_module(module), attr)(model, **options)


def budgets(max_new_tokens: int | Sequence[int], n: int) -> list[int]:
    """One token budget per request from a single cap or a per-request list (checked)."""
    if isinstance(max_new_tokens, int):
        out = [max_new_tokens] * n
    else:
        out = [int(b) for b in max_new_tokens]
        if len(out) != n:
            raise UsageError(f"max_new_tokens has {len(out)} budgets for {n} requests")
    if any(b < 1 for b in out):
        raise UsageError(f"max_new_tokens must be >= 1, got {min(out)}")
    return out


def _clean_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages for a chat template: ``None`` fields dropped, tool-call arguments as one-line JSON strings."""
    try:
        from train import normalize_messages
    except ImportError:  # pragma: no cover - train is part of this checkout
        return [{k: v for k, v in m.items() if v is not None} for m in messages]
    return normalize_messages(messages)


# --------------------------------------------------------------------------------------------- scoring


def scored_ids(tokenizer: Any, request: ChatRequest) -> tuple[list[int], list[int]]:
    """(token ids, 0/1 mask of the assistant tokens to score) of one conversation under ``tokenizer``.

    The mask comes from the chat template's ``{% generation %}`` blocks; a template without them scores the
    last assistant turn as the continuation of its generation prompt. Every backend that scores (in-process,
    or a vLLM server given these ids) uses this one function, so their scores compare token for token.
    """
    messages = _clean_messages(request.messages)
    enc = tokenizer.apply_chat_template(messages, tools=request.tools, tokenize=True, return_dict=True,
                                        return_assistant_tokens_mask=True)
    ids = list(enc["input_ids"])
    mask = list(enc.get("assistant_masks") or [])
    if len(mask) == len(ids) and any(mask):
        return ids, mask
    last = max(i for i, m in enumerate(messages) if m.get("role") == "assistant")
    prompt = tokenizer.apply_chat_template(messages[:last], tools=request.tools, tokenize=False,
                                           add_generation_prompt=True)
    full = tokenizer.apply_chat_template(messages[:last + 1], tools=request.tools, tokenize=False)
    if not full.startswith(prompt):
        raise BackendError("the chat template does not render an assistant turn as a continuation of its "
                           "generation prompt; cannot score continuations")
    p = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    c = tokenizer(full[len(prompt):], add_special_tokens=False)["input_ids"]
    return p + c, [0] * len(p) + [1] * len(c)


def scored_bytes(tokenizer: Any, ids: list[int], mask: list[int]) -> int:
    """UTF-8 bytes of the scored text: each contiguous masked span decoded as the chat template rendered it
    (special tokens kept), so the count depends on the text, not on the tokenizer."""
    total, span = 0, []
    for t, m in zip([*ids, -1], [*mask, 0]):
        if m:
            span.append(t)
        elif span:
            total += len(tokenizer.decode(span, skip_special_tokens=False).encode("utf-8"))
            span = []
    return total


# --------------------------------------------------------------------------------------------- transformers


class TransformersBackend:
    """A causal LM loaded with ``from_pretrained`` from a folder (offline), greedy decoding.

    Parameters
    ----------
    model : str
        Model folder (model + tokenizer with a chat template), or a loaded ``(model, tokenizer)``
        is passed through ``model_obj``/``tokenizer_obj``.
    batch_size : int
        Requests per forward pass when generating.
    device : str
        ``cpu`` (default) or ``cuda``.
    threads : int or None
        ``torch.set_num_threads`` when given.
    score_batch_size : int or None
        Requests per forward pass when scoring; default 1 on a CPU and ``batch_size`` elsewhere. On a
        CPU an unpadded row takes the causal attention kernel, and a left-padded batch the masked one,
        which costs more than the batch saves (1.5x slower on the demo's proxy models).
    """

    name = "transformers"

    def __init__(self, model: str, *, batch_size: int = 8, device: str = "cpu", threads: int | None = None,
                 model_obj: Any = None, tokenizer_obj: Any = None, score_batch_size: int | None = None) -> None:
        import torch

        if threads:
            torch.set_num_threads(threads)
        self.batch_size = max(1, int(batch_size))
        self.score_batch_size = max(1, int(score_batch_size or (1 if device == "cpu" else self.batch_size)))
        self.device = device
        self.tokenizer = tokenizer_obj if tokenizer_obj is not None else self._load_tokenizer(model)
        self.model = model_obj if model_obj is not None else self._load_model(model)
        self.model.to(device)
        self.model.eval()
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        if not getattr(self.tokenizer, "chat_template", None):
            raise BackendError(f"the tokenizer of {model!r} has no chat template; expected one that renders tools "
                               "and <tool_call> blocks (train.chat.CHAT_TEMPLATE)")
        self.generated_tokens = 0
        """Tokens generated so far (for throughput figures)."""

    @staticmethod
    def _load_tokenizer(path: str) -> Any:
        if not Path(path).exists():
            raise BackendError(f"model folder {path!r} does not exist; expected a folder written by "
                               "save_pretrained (or 'gold')")
        try:
            from train import load_tokenizer

            return load_tokenizer(path)
        except ImportError:  # pragma: no cover
            from transformers import AutoTokenizer

            return AutoTokenizer.from_pretrained(path)
        except Exception as err:  # train's own error type, or transformers'
            raise BackendError(f"cannot load a tokenizer from {path!r}: {str(err).splitlines()[0]}") from None

    @staticmethod
    def _load_model(path: str) -> Any:
        from transformers import AutoModelForCausalLM
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # "Loading weights" bars would clutter every eval's stderr
        try:
            return AutoModelForCausalLM.from_pretrained(path)
        except (OSError, ValueError) as err:
            raise BackendError(f"cannot load a model from {path!r}: {str(err).splitlines()[0]}") from None

    def _prompt_ids(self, request: ChatRequest) -> list[int]:
        text = self.tokenizer.apply_chat_template(_clean_messages(request.messages), tools=request.tools,
                                                  tokenize=False, add_generation_prompt=True)
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def _eos_ids(self) -> list[int]:
        """End-of-turn ids: the tokenizer's eos plus the model's generation config's (pretrained models)."""
        ids = [self.tokenizer.eos_token_id]
        gen = getattr(getattr(self.model, "generation_config", None), "eos_token_id", None)
        ids += gen if isinstance(gen, list) else [gen]
        return sorted({int(i) for i in ids if i is not None})

    def token_count(self, text: str) -> int:
        """Tokens of ``text`` under this model's tokenizer (sizes per-item generation budgets)."""
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def generate(self, requests: list[ChatRequest], *, max_new_tokens: int | Sequence[int] = 128) -> list[str]:
        """Greedy completions, ``batch_size`` at a time, left-padded; sorted by length to waste little padding.

        A batch runs to its largest budget and each row is cut to its own, so every completion is
        the same as when generated alone.
        """
        import torch

        limits = budgets(max_new_tokens, len(requests))
        prompts = [self._prompt_ids(r) for r in requests]
        order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
        out: list[str] = [""] * len(prompts)
        pad = self.tokenizer.pad_token_id
        eos = self._eos_ids()
        for start in range(0, len(order), self.batch_size):
            batch = order[start:start + self.batch_size]
            width = max(len(prompts[i]) for i in batch)
            ids = torch.full((len(batch), width), pad, dtype=torch.long)
            mask = torch.zeros((len(batch), width), dtype=torch.long)
            for row, i in enumerate(batch):  # left padding: generation continues right after each prompt
                n = len(prompts[i])
                ids[row, width - n:] = torch.tensor(prompts[i], dtype=torch.long)
                mask[row, width - n:] = 1
            with torch.no_grad():
                gen = self.model.generate(input_ids=ids.to(self.device), attention_mask=mask.to(self.device),
                                          max_new_tokens=max(limits[i] for i in batch), do_sample=False,
                                          pad_token_id=pad,
                                          eos_token_id=eos)
            new = gen[:, width:].cpu()
            for row, i in enumerate(batch):
                tokens = new[row].tolist()[:limits[i]]
                stop = next((k for k, t in enumerate(tokens) if t in eos), None)
                if stop is not None:
                    tokens = tokens[:stop + 1]
                self.generated_tokens += len(tokens)
                out[i] = self.tokenizer.decode(tokens, skip_special_tokens=True)
        return out

    def _scored_ids(self, request: ChatRequest) -> tuple[list[int], list[int]]:
        """(token ids, 0/1 mask of the assistant tokens to score) for one conversation."""
        return scored_ids(self.tokenizer, request)

    def score(self, requests: list[ChatRequest], *, detail: bool = False) -> list[ContinuationScore]:
        """Sum of log p(token | prefix) over each conversation's assistant tokens, in nats.

        Notes
        -----
        ``logprob = sum_t m_t * log softmax(z_{t-1})[x_t]`` with ``m`` the assistant mask; the mean
        per-token loss of a set of items is ``-sum logprob / sum n_tokens``. Batches are left-padded
        (explicit position ids), so the scored tokens sit at the end of every row and only the last
        ``K`` positions' logits are computed (``logits_to_keep``): a 150k-token vocabulary stays cheap.
        ``detail`` also returns each scored token's id and log-probability (:mod:`eval.diagnostics`).
        """
        import torch

        encoded = [self._scored_ids(r) for r in requests]
        n_bytes = [self._scored_bytes(x, m) for x, m in encoded]
        order = sorted(range(len(encoded)), key=lambda i: len(encoded[i][0]))
        out: list[ContinuationScore | None] = [None] * len(encoded)
        pad = self.tokenizer.pad_token_id
        for start in range(0, len(order), self.score_batch_size):
            batch = order[start:start + self.score_batch_size]
            width = max(len(encoded[i][0]) for i in batch)
            ids = torch.full((len(batch), width), pad, dtype=torch.long)
            attn = torch.zeros((len(batch), width), dtype=torch.long)
            tmask = torch.zeros((len(batch), width), dtype=torch.float32)
            for row, i in enumerate(batch):
                x, m = encoded[i]
                ids[row, width - len(x):] = torch.tensor(x, dtype=torch.long)
                attn[row, width - len(x):] = 1
                tmask[row, width - len(m):] = torch.tensor(m, dtype=torch.float32)
            scored_cols = torch.nonzero(tmask.sum(0) > 0)
            first = int(scored_cols.min().item()) if len(scored_cols) else width - 1
            keep = width - max(first - 1, 0)  # logits at positions first-1 .. width-1 predict tokens first .. width
            positions = (attn.cumsum(-1) - 1).clamp(min=0)
            with torch.no_grad():
                logits = self._forward(ids, attn, positions, keep)
            logp = torch.log_softmax(logits[:, :-1].float(), dim=-1).cpu()
            target = ids[:, width - keep + 1:]
            tok_lp = logp.gather(-1, target.unsqueeze(-1)).squeeze(-1) * tmask[:, width - keep + 1:]
            for row, i in enumerate(batch):
                m_row = tmask[row, width - keep + 1:]
                n = int(m_row.sum().item())
                extra = {}
                if detail:
                    where = m_row > 0
                    extra = {"token_ids": [int(t) for t in target[row][where].tolist()],
                             "token_logprobs": [float(v) for v in tok_lp[row][where].tolist()]}
                out[i] = ContinuationScore(logprob=float(tok_lp[row].sum().item()), n_tokens=n, n_bytes=n_bytes[i],
                                           **extra)
        return [s for s in out if s is not None]

    def _scored_bytes(self, ids: list[int], mask: list[int]) -> int:
        """UTF-8 bytes of the scored text (:func:`scored_bytes`)."""
        return scored_bytes(self.tokenizer, ids, mask)

    def _forward(self, ids: Any, attn: Any, positions: Any, keep: int) -> Any:
        """Logits of the last ``keep`` positions (all of them for models without ``logits_to_keep``)."""
        kwargs = dict(input_ids=ids.to(self.device), attention_mask=attn.to(self.device),
                      position_ids=positions.to(self.device))
        try:
            logits = self.model(**kwargs, logits_to_keep=keep).logits
        except TypeError:  # an architecture without logits_to_keep
            logits = self.model(**kwargs).logits
        return logits[:, -keep:]


# --------------------------------------------------------------------------------------------- openai


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


# --------------------------------------------------------------------------------------------- vllm


class VLLMBackend:
    """vLLM in-process (GPU machines only; vLLM cannot be installed beside our pinned torch)."""

    name = "vllm"

    def __init__(self, model: str, **options: Any) -> None:
        try:
            vllm = importlib.import_module("vllm")
        except ImportError:
            raise BackendError("the vllm backend needs the vllm package, which is not importable here; "
                               "serve the model with `vllm serve` and use --backend openai") from None
        self._vllm = vllm
        self.llm = vllm.LLM(model=model, **{k: v for k, v in options.items() if k in ("dtype", "max_model_len")})

    def generate(self, requests: list[ChatRequest], *, max_new_tokens: int | Sequence[int] = 128) -> list[str]:
        """Greedy completions through the model's own chat template."""
        out = []
        for r, limit in zip(requests, budgets(max_new_tokens, len(requests)), strict=True):
            # tools differ per request, and LLM.chat takes one tools list per call
            params = self._vllm.SamplingParams(temperature=0.0, max_tokens=limit)
            res = self.llm.chat([_clean_messages(r.messages)], params, tools=r.tools, use_tqdm=False)
            out.append(res[0].outputs[0].text)
        return out

    def score(self, requests: list[ChatRequest]) -> None:
        """Not implemented for vLLM: the likelihood metrics are left out."""
        return None
