"""Causal LMs of the ladder: proxy models built from config, or pretrained ones loaded from a folder.

Proxy models are Llama- or Qwen3-style decoders, randomly initialised, with untied input and
output embeddings and no biases, so their parameter count is exactly
:attr:`toolscale.config.ModelSize.approx_params` (tested). Everything runs in float32 on the CPU
here; on a cluster the same functions load a pretrained model by hub id or folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from toolscale.config import ModelSize
from toolscale.errors import UsageError
from train.errors import TrainError

if TYPE_CHECKING:  # pragma: no cover
    from transformers import PreTrainedConfig, PreTrainedModel

__all__ = ["model_config", "build_model", "load_model", "count_params", "PAD_TOKEN_ID", "BOS_TOKEN_ID",
           "EOS_TOKEN_ID"]

PAD_TOKEN_ID = 0
"""Id of ``<|endoftext|>`` in tokenizers from :func:`train.tokenizer.train_tokenizer`."""
BOS_TOKEN_ID = 1
"""Id of ``<|im_start|>``."""
EOS_TOKEN_ID = 2
"""Id of ``<|im_end|>``."""


def model_config(size: ModelSize, vocab_size: int | None = None) -> "PreTrainedConfig":
    """The transformers config of a proxy rung (``LlamaConfig`` or ``Qwen3Config``).

    Parameters
    ----------
    size
        The ladder rung; must not be ``pretrained``.
    vocab_size
        Rows of the embedding matrices; default ``size.vocab_size``.

    Notes
    -----
    Full multi-head attention (``num_key_value_heads = num_heads``), head width
    ``hidden_size / num_heads``, SiLU-gated MLP of width ``size.ffn_size``, RMSNorm, RoPE,
    ``max_position_embeddings = size.max_seq_len``.
    """
    if size.pretrained:
        raise UsageError(f"model size {size.name!r} is pretrained ({size.pretrained!r}); use load_model, "
                         "not a config")
    vocab = size.vocab_size if vocab_size is None else vocab_size
    if not isinstance(vocab, int) or vocab < 1:
        raise UsageError(f"vocab_size must be a positive integer, got {vocab!r}")
    if size.hidden_size % size.num_heads:
        raise UsageError(f"model size {size.name!r}: hidden_size ({size.hidden_size}) must be divisible by "
                         f"num_heads ({size.num_heads})")
    common = dict(
        vocab_size=vocab, hidden_size=size.hidden_size, intermediate_size=size.ffn_size,
        num_hidden_layers=size.num_layers, num_attention_heads=size.num_heads,
        num_key_value_heads=size.num_heads, head_dim=size.hidden_size // size.num_heads,
        max_position_embeddings=size.max_seq_len, hidden_act="silu", rms_norm_eps=1e-6,
        tie_word_embeddings=False, attention_bias=False, use_cache=True,
        pad_token_id=PAD_TOKEN_ID, bos_token_id=BOS_TOKEN_ID, eos_token_id=EOS_TOKEN_ID)
    if size.architecture == "qwen3":
        from transformers import Qwen3Config

        return Qwen3Config(**common)
    from transformers import LlamaConfig

    return LlamaConfig(**common, mlp_bias=False)


def build_model(size: ModelSize, vocab_size: int | None = None, *, seed: int = 0) -> "PreTrainedModel":
    """A randomly initialised proxy model of rung ``size`` (float32).

    Parameters
    ----------
    size
        Ladder rung (built from config).
    vocab_size
        Embedding rows; default ``size.vocab_size``. With the default, the parameter count
        equals ``size.approx_params``: ``N = 2 V h + L (4 h^2 + 3 h f + 2 h) + h``
        (+ ``2 L h / heads`` for Qwen3's q/k norms).
    seed
        Seed of the initialisation (same seed, same weights).
    """
    import torch
    from transformers import AutoModelForCausalLM

    config = model_config(size, vocab_size)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    return model


def count_params(model: "PreTrainedModel") -> tuple[int, int]:
    """``(N, N without embeddings)``: all parameters, and those outside the input/output embeddings."""
    total = sum(p.numel() for p in model.parameters())
    emb = model.get_input_embeddings().weight.numel()
    out = model.get_output_embeddings()
    if out is not None and out.weight is not model.get_input_embeddings().weight:
        emb += out.weight.numel()
    return total, total - emb


def load_model(path_or_id: str | Path) -> "PreTrainedModel":
    """Load a causal LM with ``from_pretrained`` (a local folder here; a hub id works on a cluster).

    Raises :class:`train.errors.TrainError` naming the path when nothing loadable is there.
    """
    import torch
    from transformers import AutoModelForCausalLM

    path = str(path_or_id)
    local = Path(path)
    if (local.is_absolute() or path.startswith(".")) and not local.is_dir():
        raise TrainError(f"model folder {path!r} does not exist")
    try:
        return AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    except (OSError, ValueError) as err:
        raise TrainError(f"cannot load a model from {path!r}: {str(err).splitlines()[0]}") from None
