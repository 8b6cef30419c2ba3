"""The ``vllm`` backend: vLLM in-process, only where ``import vllm`` works (never beside our pinned torch here)."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

from eval.backends.base import _clean_messages, budgets
from eval.errors import BackendError
from eval.models import ChatRequest

__all__ = ["VLLMBackend"]


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
