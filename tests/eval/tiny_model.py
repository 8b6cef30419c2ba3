"""A randomly initialised tiny model with a locally trained tokenizer, saved to a folder (test helper)."""

from __future__ import annotations

from pathlib import Path


def save_tiny_model(out_dir: Path, items, *, vocab_size: int = 512, seed: int = 0) -> str:
    """Train a BPE tokenizer on the items' reference conversations, build a 1-layer Llama, save both."""
    import torch

    from eval.prompts import reference_request
    from toolscale.config import ModelSize
    from train.chat import render
    from train.proxy import build_model
    from train.tokenizer import train_tokenizer

    torch.set_num_threads(1)
    texts = [render(reference_request(it).messages, reference_request(it).tools) for it in items]
    tok = train_tokenizer(texts, vocab_size=vocab_size)
    model = build_model(ModelSize(name="t", hidden_size=32, num_layers=1, num_heads=2, vocab_size=vocab_size,
                                  max_seq_len=4096), vocab_size=len(tok), seed=seed)
    model.save_pretrained(out_dir)
    tok.save_pretrained(out_dir)
    return str(out_dir)
