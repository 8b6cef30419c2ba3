"""Where a model's bits go: bits per byte by span type, on seen and unseen tools, beside two baselines.

A reference answer in the pinned format is ``<tool_call>{"name": "f", "arguments": {"k": v}}</tool_call>``
(one block per call) and the end-of-turn token. :func:`char_classes` labels every character of it:

* ``tool``: the characters of a tool's name;
* ``arg``: the characters of an argument value (a string's content, a number's digits); ``arg_copied``
  when the value's text occurs in the prompt (held-out-database items name every value in the request, so
  a model that can copy from its prompt gets these right) and ``arg_other`` otherwise;
* ``json``: structure: tags, braces, keys, quotes, separators, end-of-turn;
* ``text``: anything outside a tool call (free text).

A token's bits are shared among the classes of its characters in proportion to their bytes, so each class's
``bpb_<class> = sum_t b_t,c (-log2 p_t) / b_t / sum_t b_t,c`` over the items (``b_t`` a token's bytes,
``b_t,c`` those of class ``c``). Items whose every called tool the run trained on are *seen* (``bpb_seen``),
the others *unseen* (``bpb_unseen``); ``seen_share`` is the share of scored items that are seen (the run's
coverage of the benchmark, which the tool axis should not be). Two baselines are scored on the same tokens:
``bpb_uniform`` (every token of the vocabulary equally likely: ``log2 V`` bits per token) and ``bpb_unigram``
(the run's own training tokens' frequencies, add-one smoothed): a model worse than them is confidently wrong.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from grid.models import MetricResult

__all__ = ["Diagnostics", "char_classes", "token_classes", "diagnostic_metrics", "unigram_logprobs", "CLASSES"]

CLASSES = ("tool", "arg", "arg_copied", "arg_other", "json", "text")
"""Span types reported (``arg`` is ``arg_copied`` and ``arg_other`` together)."""
_OPEN, _CLOSE = "<tool_call>", "</tool_call>"
_LN2 = math.log(2.0)


@dataclass(frozen=True)
class Diagnostics:
    """What the diagnostics need beyond the scores: the run's tools and its unigram model."""

    seen_tools: frozenset[str] = field(default_factory=frozenset)
    """``server.tool`` names the run's training data used (its dataset manifest's ``tools``)."""
    unigram: Sequence[float] | None = None
    """Log-probability (nats) of each token id under the run's training tokens (:func:`unigram_logprobs`)."""
    vocab_size: int = 0
    """Tokens in the vocabulary (the uniform baseline's ``V``)."""


def _mark(labels: list[str], start: int, end: int, label: str) -> None:
    for i in range(max(start, 0), min(end, len(labels))):
        labels[i] = label


def _value_span(text: str, start: int) -> tuple[int, int, Any]:
    """``(first char, end, value)`` of the JSON value at ``start``, a string's quotes excluded."""
    value, end = json.JSONDecoder().raw_decode(text, start)
    if text[start] == '"':
        return start + 1, end - 1, value
    return start, end, value


def _label_call(text: str, lo: int, hi: int, labels: list[str], prompt: str) -> None:
    """Label one ``{"name": ..., "arguments": {...}}`` object between ``lo`` and ``hi``."""
    m = re.compile(r'"name"\s*:\s*').search(text, lo, hi)
    if m:
        try:
            s, e, _ = _value_span(text, m.end())
            _mark(labels, s, e, "tool")
        except ValueError:
            pass
    m = re.compile(r'"arguments"\s*:\s*\{').search(text, lo, hi)
    if not m:
        return
    pos, dec = m.end(), json.JSONDecoder()
    while pos < hi:
        while pos < hi and text[pos] in " \t\n\r,":
            pos += 1
        if pos >= hi or text[pos] != '"':
            return
        try:
            _, pos = dec.raw_decode(text, pos)  # the key: structure
            while pos < hi and text[pos] in " \t\n\r:":
                pos += 1
            vstart = pos
            s, e, value = _value_span(text, pos)
        except ValueError:
            return
        shown = value if isinstance(value, str) else json.dumps(value)
        _mark(labels, s, e, "arg_copied" if shown and shown in prompt else "arg_other")
        pos = e + 1 if text[vstart] == '"' else e


def char_classes(text: str, prompt: str = "") -> list[str]:
    """One class per character of a reference answer (module docstring); ``prompt`` is the request's text."""
    labels = ["text"] * len(text)
    start = 0
    while (i := text.find(_OPEN, start)) >= 0:
        j = text.find(_CLOSE, i)
        j = len(text) if j < 0 else j + len(_CLOSE)
        _mark(labels, i, j, "json")
        _label_call(text, i + len(_OPEN), j, labels, prompt)
        start = j
    for special in re.finditer(r"<\|[a-z_]+\|>", text):
        _mark(labels, special.start(), special.end(), "json")
    return labels


def token_classes(ids: Sequence[int], decode: Callable[[list[int]], str], prompt: str = ""
                  ) -> list[dict[str, int]] | None:
    """Bytes of each class in each token (``[{class: bytes}]``), or None when the tokens do not decode to one text
    piece by piece (then the item is left out of the diagnostics)."""
    pieces, prev = [], ""
    for k in range(len(ids)):
        cur = decode(list(ids[:k + 1]))
        if not cur.startswith(prev):
            return None
        pieces.append(cur[len(prev):])
        prev = cur
    labels = char_classes(prev, prompt)
    out, pos = [], 0
    for piece in pieces:
        counts: dict[str, int] = {}
        for ch in piece:
            counts[labels[pos]] = counts.get(labels[pos], 0) + len(ch.encode("utf-8"))
            pos += 1
        out.append(counts)
    return out


def unigram_logprobs(token_counts: Sequence[int]) -> list[float]:
    """Add-one smoothed unigram log-probabilities (nats) from token counts indexed by id."""
    total = sum(token_counts) + len(token_counts)
    return [math.log((c + 1) / total) for c in token_counts]


def _prompt_text(item: Any) -> str:
    return " ".join(str(m.get("content") or "") for m in item.messages if m.get("role") == "user")


def _seen(item: Any, tools: frozenset[str]) -> bool:
    names = [name for call in item.ground_truth for name in call]
    return bool(names) and all(f"{item.source}.{n}" in tools for n in names)


def diagnostic_metrics(info: Any, items: Sequence[Any], scores: Sequence[Any], decode: Callable[[list[int]], str],
                       diag: Diagnostics, version: str = "") -> list[MetricResult]:
    """``bpb_<class>``, ``bpb_seen``, ``bpb_unseen``, ``seen_share``, ``bpb_uniform`` and ``bpb_unigram`` of the
    items with a reference call, from per-token scores (``ContinuationScore.token_ids`` and
    ``token_logprobs``). Lower is better for every bpb; ``seen_share`` is a share."""
    bits = {c: 0.0 for c in CLASSES}
    nbytes = {c: 0 for c in CLASSES}
    by_seen = {True: [0.0, 0], False: [0.0, 0]}
    uni = [0.0, 0.0]  # uniform bits, unigram bits
    total_bytes, n_seen, n = 0, 0, 0
    for it, sc in zip(items, scores, strict=True):
        if not it.ground_truth or not sc.token_ids:
            continue
        per_tok = token_classes(sc.token_ids, decode, _prompt_text(it))
        if per_tok is None:
            continue
        n += 1
        seen = _seen(it, diag.seen_tools)
        n_seen += seen
        item_bits, item_bytes = 0.0, 0
        for tid, lp, counts in zip(sc.token_ids, sc.token_logprobs, per_tok):
            b = sum(counts.values())
            if not b:
                continue
            t_bits = -lp / _LN2
            for c, cb in counts.items():
                bits[c] += t_bits * cb / b
                nbytes[c] += cb
                if c.startswith("arg_"):
                    bits["arg"] += t_bits * cb / b
                    nbytes["arg"] += cb
            item_bits += t_bits
            item_bytes += b
            if diag.vocab_size:
                uni[0] += math.log2(diag.vocab_size)
            if diag.unigram is not None and tid < len(diag.unigram):
                uni[1] += -diag.unigram[tid] / _LN2
        by_seen[seen][0] += item_bits
        by_seen[seen][1] += item_bytes
        total_bytes += item_bytes
    rows = []

    def row(metric: str, value: float, higher: bool = False, items_n: int = n) -> None:
        rows.append(MetricResult(benchmark=info.name, metric=metric, version=version or info.version, score=value,
                                 n_items=items_n, higher_is_better=higher))

    for c in CLASSES:
        if nbytes[c]:
            row(f"bpb_{c}", bits[c] / nbytes[c])
    for flag, name in ((True, "bpb_seen"), (False, "bpb_unseen")):
        if by_seen[flag][1]:
            row(name, by_seen[flag][0] / by_seen[flag][1], items_n=n_seen if flag else n - n_seen)
    if n:
        row("seen_share", n_seen / n, higher=True)
    if total_bytes and diag.vocab_size:
        row("bpb_uniform", uni[0] / total_bytes)
    if total_bytes and diag.unigram is not None:
        row("bpb_unigram", uni[1] / total_bytes)
    return rows
