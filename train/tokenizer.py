"""Byte-level BPE tokenizers trained locally for the proxy ladder (no downloads).

:func:`train_tokenizer` learns merges with the ``tokenizers`` library on local text and wraps
the result as a ``PreTrainedTokenizerFast`` that carries the special tokens and the chat
template of :mod:`train.chat`. Saved folders name their class explicitly
(``tokenizer_class = "PreTrainedTokenizerFast"``), so ``AutoTokenizer.from_pretrained`` reloads
the very same pipeline; a model-specific class (e.g. ``Qwen2Tokenizer`` for a Qwen config)
would split text differently and silently lower accuracy.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolscale.errors import UsageError
from train.chat import BOS_TOKEN, CHAT_TEMPLATE, EOS_TOKEN, PAD_TOKEN, SPECIAL_TOKENS, TOOL_TOKENS
from train.errors import TrainError

if TYPE_CHECKING:  # pragma: no cover
    from transformers import PreTrainedTokenizerFast

__all__ = ["train_tokenizer", "load_tokenizer", "min_vocab_size", "tokenizer_id", "tokenizer_fingerprint",
           "TOKENIZER_CLASS"]

TOKENIZER_CLASS = "PreTrainedTokenizerFast"
"""Class name written to ``tokenizer_config.json`` of every tokenizer trained here."""

_BYTE_ALPHABET = 256


def min_vocab_size() -> int:
    """Smallest vocabulary a byte-level BPE with our added tokens can have (256 bytes + added tokens)."""
    return _BYTE_ALPHABET + len(SPECIAL_TOKENS) + len(TOOL_TOKENS)


def train_tokenizer(texts: Iterable[str], vocab_size: int, *, min_frequency: int = 2) -> "PreTrainedTokenizerFast":
    """Train a byte-level BPE tokenizer on local text.

    Parameters
    ----------
    texts
        Training corpus, e.g. rendered conversations (:func:`train.chat.render`).
    vocab_size
        Size of the full vocabulary (tokens), special and tool tokens included; at least
        :func:`min_vocab_size`. A small corpus may learn fewer merges, so ``len(tokenizer)``
        can be smaller, never larger.
    min_frequency
        Occurrences a pair needs to be merged.

    Returns
    -------
    PreTrainedTokenizerFast
        With ``pad_token`` ``<|endoftext|>``, ``bos_token`` ``<|im_start|>``, ``eos_token``
        ``<|im_end|>``, the tool tags as single non-special tokens, and the chat template.

    Notes
    -----
    Training is deterministic for a fixed corpus (``tokenizers`` BPE breaks ties by order).
    Token ids: specials 0-2, then the 256 byte symbols, then merges, then the tool tags.
    """
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    if not isinstance(vocab_size, int) or vocab_size < min_vocab_size():
        raise UsageError(f"vocab_size must be an integer >= {min_vocab_size()} "
                         f"(256 bytes + {min_vocab_size() - 256} added tokens), got {vocab_size!r}")
    corpus = [t for t in texts if t]
    if not corpus:
        raise UsageError("train_tokenizer needs at least one non-empty text, got none")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size - len(TOOL_TOKENS), min_frequency=min_frequency,
        special_tokens=list(SPECIAL_TOKENS), initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False)
    tok.train_from_iterator(corpus, trainer=trainer)
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in TOOL_TOKENS])
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=BOS_TOKEN, eos_token=EOS_TOKEN, pad_token=PAD_TOKEN,
        unk_token=None, model_max_length=1_000_000, padding_side="right", clean_up_tokenization_spaces=False)
    wrapped.chat_template = CHAT_TEMPLATE
    wrapped.init_kwargs["tokenizer_class"] = TOKENIZER_CLASS
    if len(wrapped) > vocab_size:  # pragma: no cover - guards a tokenizers behaviour change
        raise TrainError(f"trained tokenizer has {len(wrapped)} tokens, more than vocab_size={vocab_size}")
    return wrapped


def load_tokenizer(path: str | Path) -> "PreTrainedTokenizerFast":
    """Load a saved tokenizer folder (or, on a cluster, a hub id).

    A folder written by this package (``tokenizer_class`` ``TokenizersBackend`` or
    ``PreTrainedTokenizerFast`` beside a ``tokenizer.json``) is loaded as exactly that class,
    whatever the model's config says: ``AutoTokenizer`` would pick ``Qwen2Tokenizer`` for a
    Qwen2 config and split text differently. Anything else goes through ``AutoTokenizer``.
    Raises :class:`train.errors.TrainError` with the path when nothing loadable is there.
    """
    import json

    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    folder = Path(path)
    try:
        config_file = folder / "tokenizer_config.json"
        if folder.is_dir() and config_file.is_file() and (folder / "tokenizer.json").is_file():
            declared = json.loads(config_file.read_text(encoding="utf-8")).get("tokenizer_class")
            if declared in ("TokenizersBackend", TOKENIZER_CLASS):
                return PreTrainedTokenizerFast.from_pretrained(str(folder))
        return AutoTokenizer.from_pretrained(str(path))
    except (OSError, ValueError) as err:
        raise TrainError(f"cannot load a tokenizer from {str(path)!r}: {str(err).splitlines()[0]}") from None


def tokenizer_id(path: str | Path) -> str:
    """Content hash of a saved tokenizer folder's ``tokenizer.json``: ``sha256:<first 16 hex digits>``.

    Raises :class:`train.errors.TrainError` naming the folder when it holds no ``tokenizer.json``.
    """
    import hashlib

    file = Path(path) / "tokenizer.json"
    if not file.is_file():
        raise TrainError(f"tokenizer folder {str(path)!r} has no tokenizer.json")
    return "sha256:" + hashlib.sha256(file.read_bytes()).hexdigest()[:16]


def tokenizer_fingerprint(tokenizer: Any) -> str | None:
    """sha256 (16 hex digits) of a loaded fast tokenizer's whole pipeline (vocabulary, merges, normalisation,
    added tokens), its chat template and special tokens: equal fingerprints encode every text and render every
    conversation identically. None for a tokenizer without a serialisable pipeline (caches then stay off)."""
    import hashlib
    import json

    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return None
    h = hashlib.sha256()
    for part in (type(tokenizer).__name__, backend.to_str(), str(getattr(tokenizer, "chat_template", "") or ""),
                 json.dumps(getattr(tokenizer, "special_tokens_map", {}), sort_keys=True, default=str)):
        h.update(part.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()[:16]
