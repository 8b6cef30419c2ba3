"""The ``transformers`` backend: a causal LM in-process (CPU by default), greedy generation and scoring.

Torch and transformers are imported when a backend is built, not with this module.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eval.backends.base import _clean_messages, budgets
from eval.backends.scoring import scored_bytes, scored_ids
from eval.errors import BackendError
from eval.models import ChatRequest, ContinuationScore

__all__ = ["TransformersBackend", "SCORE_BATCH_SIZE"]

SCORE_BATCH_SIZE = 1
"""Rows per scoring forward pass on a CPU (``benchmarks/eval_scoring.py``)."""


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
        Requests per forward pass when scoring (rows sorted by length, right-padded, no attention mask: see
        :meth:`score`); default :data:`SCORE_BATCH_SIZE` on a CPU and ``batch_size`` elsewhere.
    cache_dir : str or None
        Folder of the :class:`eval.token_cache.TokenCache` of this model's tokenizer: encoded requests are
        read from it and new ones added, so every model of an experiment (one shared tokenizer) encodes
        each benchmark item once. None encodes every time.
    """

    name = "transformers"

    def __init__(self, model: str, *, batch_size: int = 8, device: str = "cpu", threads: int | None = None,
                 model_obj: Any = None, tokenizer_obj: Any = None, score_batch_size: int | None = None,
                 cache_dir: str | Path | None = None) -> None:
        import torch

        if threads:
            torch.set_num_threads(threads)
        self.batch_size = max(1, int(batch_size))
        self.score_batch_size = max(1, int(score_batch_size or (SCORE_BATCH_SIZE if device == "cpu"
                                                                 else self.batch_size)))
        self.device = device
        self.tokenizer = tokenizer_obj if tokenizer_obj is not None else self._load_tokenizer(model)
        self.cache = self._token_cache(cache_dir)
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

    def _token_cache(self, folder: str | Path | None) -> Any:
        """The :class:`eval.token_cache.TokenCache` of this tokenizer under ``folder`` (None: no cache, or a
        tokenizer that cannot be fingerprinted)."""
        if folder is None:
            return None
        from eval.token_cache import TokenCache
        from train import tokenizer_fingerprint

        fingerprint = tokenizer_fingerprint(self.tokenizer)
        return TokenCache(folder, fingerprint) if fingerprint else None

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

    def _cached(self, kind: str, request: ChatRequest | str, compute: Any) -> Any:
        """``compute()``, through the token cache when there is one (keyed by ``kind`` and the request)."""
        if self.cache is None:
            return compute()
        from eval.token_cache import request_key

        return self.cache.get(request_key(kind, request), compute)

    def save_cache(self) -> int:
        """Write the encodings computed since the last save to the token cache; returns how many."""
        return self.cache.save() if self.cache is not None else 0

    def _prompt_ids(self, request: ChatRequest) -> list[int]:
        def compute() -> list[int]:
            text = self.tokenizer.apply_chat_template(_clean_messages(request.messages), tools=request.tools,
                                                      tokenize=False, add_generation_prompt=True)
            return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

        return self._cached("prompt", request, compute)

    def _eos_ids(self) -> list[int]:
        """End-of-turn ids: the tokenizer's eos plus the model's generation config's (pretrained models)."""
        ids = [self.tokenizer.eos_token_id]
        gen = getattr(getattr(self.model, "generation_config", None), "eos_token_id", None)
        ids += gen if isinstance(gen, list) else [gen]
        return sorted({int(i) for i in ids if i is not None})

    def token_count(self, text: str) -> int:
        """Tokens of ``text`` under this model's tokenizer (sizes per-item generation budgets)."""
        return self._cached("count", text, lambda: len(self.tokenizer(text, add_special_tokens=False)["input_ids"]))

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
        self.save_cache()
        return out

    def _scored_ids(self, request: ChatRequest) -> tuple[list[int], list[int]]:
        """(token ids, 0/1 mask of the assistant tokens to score) for one conversation."""
        return scored_ids(self.tokenizer, request)

    def _scored(self, request: ChatRequest) -> tuple[list[int], list[int], int]:
        """(token ids, 0/1 mask of the scored tokens, UTF-8 bytes of the scored text), through the token cache
        (the mask is stored as ``[start, end)`` spans)."""
        def compute() -> list[Any]:
            ids, mask = self._scored_ids(request)
            return [ids, _spans(mask), self._scored_bytes(ids, mask)]

        ids, spans, n_bytes = self._cached("scored", request, compute)
        mask = [0] * len(ids)
        for a, b in spans:
            mask[a:b] = [1] * (b - a)
        return ids, mask, n_bytes

    def score(self, requests: list[ChatRequest], *, detail: bool = False) -> list[ContinuationScore]:
        """Sum of log p(token | prefix) over each conversation's assistant tokens, in nats.

        Notes
        -----
        ``logprob = sum_t m_t * log softmax(z_{t-1})[x_t]`` with ``m`` the assistant mask; the mean
        per-token loss of a set of items is ``-sum logprob / sum n_tokens``. Requests are sorted by length
        and scored ``score_batch_size`` at a time, right-padded and without an attention mask: under the
        causal mask no real token sees the padding after it, so each row's log-probabilities are those of
        the row alone, and the forward pass keeps the unmasked causal attention kernel (a left-padded,
        masked batch costs more on a CPU than the batch saves: ``benchmarks/eval_scoring.py``). This holds
        for position encodings that do not depend on the padded length (RoPE, learned absolute positions).
        Only the logits from the batch's first scored position on are computed (``logits_to_keep``), so a
        150k-token vocabulary stays cheap.
        ``detail`` also returns each scored token's id and log-probability (:mod:`eval.diagnostics`).
        """
        import torch

        encoded = [self._scored(r) for r in requests]
        order = sorted(range(len(encoded)), key=lambda i: len(encoded[i][0]))
        out: list[ContinuationScore | None] = [None] * len(encoded)
        pad = self.tokenizer.pad_token_id
        for start in range(0, len(order), self.score_batch_size):
            batch = order[start:start + self.score_batch_size]
            width = max(len(encoded[i][0]) for i in batch)
            ids = torch.full((len(batch), width), pad, dtype=torch.long)
            tmask = torch.zeros((len(batch), width), dtype=torch.float32)
            for row, i in enumerate(batch):
                x, m, _ = encoded[i]
                ids[row, :len(x)] = torch.tensor(x, dtype=torch.long)
                tmask[row, :len(m)] = torch.tensor(m, dtype=torch.float32)
            scored_cols = torch.nonzero(tmask.sum(0) > 0)
            first = max(int(scored_cols.min().item()), 1) if len(scored_cols) else width - 1
            keep = width - first + 1  # logits at positions first-1 .. width-1 predict tokens first .. width
            with torch.no_grad():
                logits = self._forward(ids, keep)
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
                out[i] = ContinuationScore(logprob=float(tok_lp[row].sum().item()), n_tokens=n, n_bytes=encoded[i][2],
                                           **extra)
        self.save_cache()
        return [s for s in out if s is not None]

    def _scored_bytes(self, ids: list[int], mask: list[int]) -> int:
        """UTF-8 bytes of the scored text (:func:`scored_bytes`)."""
        return scored_bytes(self.tokenizer, ids, mask)

    def _forward(self, ids: Any, keep: int) -> Any:
        """Logits of the last ``keep`` positions of unmasked rows (all positions for models without
        ``logits_to_keep``, then cut)."""
        kwargs = dict(input_ids=ids.to(self.device))
        try:
            logits = self.model(**kwargs, logits_to_keep=keep).logits
        except TypeError:  # an architecture without logits_to_keep
            logits = self.model(**kwargs).logits
        return logits[:, -keep:]


def _spans(mask: Sequence[int]) -> list[list[int]]:
    """``[start, end)`` index ranges of the ones in a 0/1 mask."""
    spans: list[list[int]] = []
    for i, m in enumerate(mask):
        if m and spans and spans[-1][1] == i:
            spans[-1][1] = i + 1
        elif m:
            spans.append([i, i + 1])
    return spans
