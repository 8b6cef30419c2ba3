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
* ``vllm-server``: a vLLM server this process starts and scores through (:mod:`eval.vllm_server`).

One module per concern: :mod:`eval.backends.base` (the :class:`Backend` interface, token budgets),
:mod:`eval.backends.registry` (names -> ``"module:class"``, :func:`get_backend`),
:mod:`eval.backends.scoring` (the scored tokens and bytes every scoring backend shares), and one module per
backend (:mod:`eval.backends.transformers`, :mod:`eval.backends.openai`, :mod:`eval.backends.vllm`). None of
them imports torch, transformers or vllm at import time.
"""

from eval.backends.base import _clean_messages as _clean_messages  # for eval.serve and eval.vllm_server
from eval.backends.base import Backend, budgets
from eval.backends.openai import OpenAIBackend, tool_calls_to_text
from eval.backends.registry import BACKENDS, get_backend
from eval.backends.scoring import scored_bytes, scored_ids
from eval.backends.transformers import SCORE_BATCH_SIZE, TransformersBackend
from eval.backends.vllm import VLLMBackend

__all__ = ["Backend", "BACKENDS", "get_backend", "budgets", "TransformersBackend", "OpenAIBackend", "VLLMBackend",
           "tool_calls_to_text", "scored_ids", "scored_bytes", "SCORE_BATCH_SIZE"]
