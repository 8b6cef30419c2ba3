"""Backends registered by name, as ``"module:class"`` so that naming one never imports torch or vllm."""

from __future__ import annotations

import importlib
from typing import Any

from eval.backends.base import Backend
from toolscale.errors import UsageError

__all__ = ["BACKENDS", "get_backend"]

BACKENDS: dict[str, str] = {
    "transformers": "eval.backends.transformers:TransformersBackend",
    "openai": "eval.backends.openai:OpenAIBackend",
    "vllm": "eval.backends.vllm:VLLMBackend",
    "vllm-server": "eval.vllm_server:VLLMServerBackend",
}
"""Backend name -> ``"module:class"``; each class takes ``(model, **options)``."""


def get_backend(name: str, model: str, **options: Any) -> Backend:
    """Instantiate backend ``name`` for ``model`` (a folder, a hub id on a cluster, or a served model name)."""
    if name not in BACKENDS:
        raise UsageError(f"unknown backend {name!r}; known: {', '.join(BACKENDS)}")
    module, attr = BACKENDS[name].split(":")
    return getattr(importlib.import_module(module), attr)(model, **options)
