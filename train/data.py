"""Training data: trajectory JSONL rows (pinned interface 1) in, token ids and loss masks out.

Reading and validation happen at this edge; :func:`tokenize_rows` is pure given a tokenizer.
Rows are whole multi-turn conversations with their tool schemas; the loss mask covers the
assistant turns (content, tool calls, closing ``<|im_end|>``), never system, user or tool turns.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from train.chat import normalize_messages, parse_tools, render
from train.errors import TrainDataError

if TYPE_CHECKING:  # pragma: no cover
    from transformers import PreTrainedTokenizerBase

__all__ = ["DATA_FILE", "data_file", "read_rows", "count_rows", "validate_row", "render_corpus", "tokenize_rows",
           "TokenizedData", "dataset_id", "apply_loss_weights"]

DATA_FILE = "train.jsonl"
"""File name synth writes in a dataset folder."""

ROLES = ("system", "user", "assistant", "tool")


def data_file(data_dir: str | Path) -> Path:
    """The JSONL file of a dataset folder (``DIR/train.jsonl``), or ``data_dir`` itself if it is a file."""
    path = Path(data_dir)
    if path.is_file():
        return path
    if not path.exists():
        raise TrainDataError(f"data folder {str(path)!r} does not exist (expected the output of `toolscale synth`)")
    file = path / DATA_FILE
    if not file.is_file():
        raise TrainDataError(f"data folder {str(path)!r} has no {DATA_FILE} (expected the output of `toolscale synth`)")
    return file


def validate_row(row: Any) -> None:
    """Raise ``ValueError`` naming the first problem of a trajectory row, or return None."""
    if not isinstance(row, dict):
        raise ValueError(f"a row must be a JSON object, got {type(row).__name__}")
    messages = row.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ValueError("'messages' must be a non-empty list")
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict) or msg.get("role") not in ROLES:
            role = msg.get("role") if isinstance(msg, dict) else msg
            raise ValueError(f"message {i}: role must be one of {', '.join(ROLES)}, got {role!r}")
        content = msg.get("content")
        if content is not None and not isinstance(content, str):
            raise ValueError(f"message {i}: content must be a string or null, got {type(content).__name__}")
        for call in msg.get("tool_calls") or []:
            fn = call.get("function") if isinstance(call, dict) else None
            if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
                raise ValueError(f"message {i}: each tool call needs function.name, got {call!r}"[:200])
    if not any(m["role"] == "assistant" for m in messages):
        raise ValueError("no assistant message: nothing to learn from this row")
    parse_tools(row.get("tools"))


def read_rows(data_dir: str | Path) -> list[dict[str, Any]]:
    """All rows of a dataset folder's ``train.jsonl``, validated; ``meta`` and unknown keys are kept.

    Raises :class:`train.errors.TrainDataError` naming file, line and problem.
    """
    file = data_file(data_dir)
    rows = []
    with open(file, encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                validate_row(row)
            except (json.JSONDecodeError, ValueError) as err:
                raise TrainDataError(f"{file}:{lineno}: not a trajectory row: {err}") from None
            rows.append(row)
    if not rows:
        raise TrainDataError(f"{file} holds no rows")
    return rows


def count_rows(data_dir: str | Path) -> int:
    """Non-blank lines of a dataset's JSONL file: its row count when the file is valid (:func:`read_rows`
    checks that), without parsing it."""
    with open(data_file(data_dir), "rb") as f:
        return sum(1 for line in f if line.strip())


def render_corpus(rows: Iterable[dict[str, Any]]) -> list[str]:
    """Rendered conversations (:func:`train.chat.render`): the tokenizer's training corpus."""
    return [render(r["messages"], r.get("tools")) for r in rows]


class TokenizedData(dict):
    """Result of :func:`tokenize_rows`: ``examples`` (input_ids, assistant_masks) and counts.

    Keys: ``examples`` (list of dicts), ``n_rows``, ``n_truncated`` (rows cut at ``max_len``),
    ``n_dropped`` (rows left without assistant tokens after the cut), ``tokens`` (total ids),
    ``loss_tokens`` (ids under the assistant mask).
    """


def _loss_weights(row: dict[str, Any]) -> dict[str, float]:
    """``meta.loss_weights`` of a row (``{call_id: weight}``; ``meta`` may be a JSON string), else ``{}``."""
    meta = row.get("meta")
    if isinstance(meta, str):
        meta = json.loads(meta) if meta.strip().startswith("{") else {}
    return dict(meta.get("loss_weights") or {}) if isinstance(meta, dict) else {}


def _runs(mask: list[int]) -> list[tuple[int, int]]:
    """``[start, end)`` spans of consecutive 1s."""
    spans, start = [], None
    for i, m in enumerate([*mask, 0]):
        if m and start is None:
            start = i
        elif not m and start is not None:
            spans.append((start, i))
            start = None
    return spans


def apply_loss_weights(ids: list[int], mask: list[int], messages: list[dict[str, Any]], weights: dict[str, float],
                       tag_ids: tuple[int, int], *, seed: str) -> list[int]:
    """The assistant mask with the tokens of down-weighted tool calls removed (``probes.repair`` downweight).

    A call with weight w keeps its tokens (``<tool_call>`` ... ``</tool_call>``) in the loss with
    probability w, drawn once per (seed, call id): 0 drops the action, 1 keeps it, and a fraction
    weights it in expectation over the dataset. The assistant text around calls keeps its loss.
    ``tag_ids`` are the ids of the single-token ``<tool_call>`` and ``</tool_call>`` tags.
    Raises ``ValueError`` when the mask's assistant spans or call tags do not match ``messages``.
    """
    turns = [[c.get("id") for c in (m.get("tool_calls") or [])] for m in messages if m.get("role") == "assistant"]
    spans = _runs(mask)
    if len(spans) != len(turns):
        raise ValueError(f"{len(spans)} assistant spans in the tokens but {len(turns)} assistant messages")
    out = list(mask)
    for (start, end), call_ids in zip(spans, turns, strict=True):
        opens = [i for i in range(start, end) if ids[i] == tag_ids[0]]
        closes = [i for i in range(start, end) if ids[i] == tag_ids[1]]
        if len(opens) != len(call_ids) or len(closes) != len(call_ids):
            raise ValueError(f"an assistant turn has {len(call_ids)} tool calls but {len(opens)} <tool_call> tags")
        for call_id, lo, hi in zip(call_ids, opens, closes, strict=True):
            w = weights.get(call_id)
            if w is not None and random.Random(f"{seed}:{call_id}").random() >= float(w):
                out[lo:hi + 1] = [0] * (hi + 1 - lo)
    return out


def tokenize_rows(rows: Iterable[dict[str, Any]], tokenizer: "PreTrainedTokenizerBase",
                  max_len: int, *, seed: int = 0) -> TokenizedData:
    """Token ids and assistant masks of each conversation, cut to ``max_len`` tokens (keep the start).

    Rows whose assistant tokens all fall beyond ``max_len`` are dropped (they carry no loss).
    Tool calls with a ``meta.loss_weights`` entry lose their mask with probability 1 - weight
    (:func:`apply_loss_weights`, seeded by ``seed`` and the row's position).
    """
    examples, n_rows, n_trunc, n_drop, tokens, loss_tokens = [], 0, 0, 0, 0, 0
    for row in rows:
        n_rows += 1
        messages = normalize_messages(row["messages"])
        out = tokenizer.apply_chat_template(messages, tools=parse_tools(row.get("tools")), tokenize=True,
                                            return_dict=True, return_assistant_tokens_mask=True)
        ids, mask = list(out["input_ids"]), list(out["assistant_masks"])
        weights = _loss_weights(row)
        if weights:
            try:
                mask = apply_loss_weights(ids, mask, messages, weights, _tag_ids(tokenizer),
                                          seed=f"{seed}:{n_rows - 1}")
            except ValueError as err:
                raise TrainDataError(f"row {n_rows}: cannot apply meta.loss_weights: {err}") from None
        if len(ids) > max_len:
            n_trunc += 1
            ids, mask = ids[:max_len], mask[:max_len]
        if not any(mask):
            n_drop += 1
            continue
        examples.append({"input_ids": ids, "assistant_masks": mask})
        tokens += len(ids)
        loss_tokens += sum(mask)
    return TokenizedData(examples=examples, n_rows=n_rows, n_truncated=n_trunc, n_dropped=n_drop,
                         tokens=tokens, loss_tokens=loss_tokens)


def _tag_ids(tokenizer: "PreTrainedTokenizerBase") -> tuple[int, int]:
    """Ids of ``<tool_call>`` and ``</tool_call>``; ``ValueError`` if either is not one token."""
    ids = []
    for tag in ("<tool_call>", "</tool_call>"):
        enc = tokenizer.encode(tag, add_special_tokens=False)
        if len(enc) != 1:
            raise ValueError(f"the tokenizer splits {tag} into {len(enc)} tokens, so calls cannot be located")
        ids.append(enc[0])
    return ids[0], ids[1]


def dataset_id(data_dir: str | Path) -> str:
    """Content hash of the training file: ``sha256:<first 16 hex digits>``."""
    digest = hashlib.sha256()
    with open(data_file(data_dir), "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return "sha256:" + digest.hexdigest()[:16]
