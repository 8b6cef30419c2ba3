"""The interface every generation backend implements, and what all of them share (token budgets, messages)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from eval.models import ChatRequest, ContinuationScore
from toolscale.errors import UsageError

__all__ = ["Backend", "budgets"]


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
