"""The scored tokens of a conversation: one definition for every backend that scores continuations."""

from __future__ import annotations

from typing import Any

from eval.backends.base import _clean_messages
from eval.errors import BackendError
from eval.models import ChatRequest

__all__ = ["scored_ids", "scored_bytes"]


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
