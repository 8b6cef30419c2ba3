"""Mid-training (seed 001): next-token pre-training on synth's tool-interaction corpus before SFT.

The corpus is synth's ``corpus.jsonl`` (one ``{"text": ...}`` document per line: tool-ecosystem documents,
trajectory narratives, failure write-ups). :func:`train_midtrain` trains a causal LM on it through TRL's
language-modelling path (``SFTTrainer`` on a ``text`` dataset: the loss is on every token), and writes a
``from_pretrained``-loadable folder that the SFT stage starts from (``train_sft(..., init=...)``).

The tokenizer is the experiment's shared one when given, else one trained on the corpus together with the
SFT conversations (``sft_texts``), so both stages use the same ids. Accounting is :mod:`train.accounting`'s
``6 N D`` with D the corpus tokens fed, recorded per stage.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from pathlib import Path

from grid.models import TrainStats
from toolscale.config import ModelSize, training_flops
from toolscale.errors import UsageError
from train.accounting import accounting_callback, loss_curve, read_accounting
from train.checkpoint import RUN_FILE, STATS_FILE, checkpoint_dir, clear_checkpoints, last_checkpoint
from train.errors import TrainDataError

__all__ = ["CORPUS_FILE", "corpus_file", "read_corpus", "corpus_id", "prepare_midtrain", "train_midtrain"]

CORPUS_FILE = "corpus.jsonl"
"""File name of the continued-pretraining corpus synth writes in a dataset folder."""


def corpus_file(path: str | Path) -> Path:
    """The corpus JSONL of a dataset folder (``DIR/corpus.jsonl``), or ``path`` itself if it is a file."""
    p = Path(path)
    if p.is_dir():
        p = p / CORPUS_FILE
    if not p.is_file():
        raise TrainDataError(f"mid-training corpus {str(p)!r} does not exist (synthesise with narratives = true, "
                             "or give a JSONL file of {\"text\": ...} documents)")
    return p


def read_corpus(path: str | Path) -> list[str]:
    """The documents of a corpus file: one JSON object with a non-empty string ``text`` per line.

    Raises :class:`~train.errors.TrainDataError` naming the file and line of the first bad line.
    """
    file = corpus_file(path)
    texts = []
    for n, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
        except ValueError:
            raise TrainDataError(f"{file}:{n}: not a JSON line (a corpus is JSONL with a 'text' field)") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("text"), str) or not doc["text"].strip():
            raise TrainDataError(f"{file}:{n}: expected an object with a non-empty string 'text' field")
        texts.append(doc["text"])
    if not texts:
        raise TrainDataError(f"mid-training corpus {str(file)!r} holds no document")
    return texts


def corpus_id(texts: list[str]) -> str:
    """Content hash of a corpus (16 hex digits)."""
    import hashlib

    h = hashlib.sha256()
    for t in texts:
        h.update(t.encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def prepare_midtrain(corpus: str | Path, data_dir: str | Path, size: ModelSize,
                     tokenizer_dir: str | Path) -> tuple[float, float, float]:
    """Train (once) the tokenizer both stages share, and measure what the stage plan needs.

    The tokenizer is trained on the corpus and the rendered SFT conversations and saved in
    ``tokenizer_dir`` (reused when it is there). Returns the mean tokens per SFT sequence, the mean tokens
    per corpus document and the tokens of one pass over the corpus, all truncated at ``size.max_seq_len``.
    """
    from train.data import read_rows, render_corpus, tokenize_rows
    from train.tokenizer import load_tokenizer, train_tokenizer

    texts, rows = read_corpus(corpus), read_rows(data_dir)
    tok_dir = Path(tokenizer_dir)
    if not (tok_dir / "tokenizer.json").is_file():
        train_tokenizer([*texts, *render_corpus(rows)], size.vocab_size).save_pretrained(tok_dir)
    tokenizer = load_tokenizer(tok_dir)
    examples = tokenize_rows(rows, tokenizer, size.max_seq_len, seed=0)["examples"]
    sft = sum(len(e["input_ids"]) for e in examples) / max(len(examples), 1)
    docs = [min(len(tokenizer(t)["input_ids"]), size.max_seq_len) for t in texts]
    return sft, sum(docs) / max(len(docs), 1), float(sum(docs))


def _tokenizer(size: ModelSize, out: Path, texts: list[str], sft_texts: Iterable[str], tokenizer_dir, resume: bool):
    from train.tokenizer import load_tokenizer, train_tokenizer

    if tokenizer_dir is not None:
        return load_tokenizer(tokenizer_dir)
    if resume and (out / "tokenizer.json").is_file():
        return load_tokenizer(out)
    tok = train_tokenizer([*texts, *sft_texts], size.vocab_size)
    tok.save_pretrained(out)
    return tok


def train_midtrain(corpus: str | Path, size: ModelSize, out_dir: str | Path, *, max_steps: int, seed: int = 0,
                   threads: int | None = None, resume: bool = True, sft_texts: Iterable[str] = (),
                   tokenizer_dir: str | Path | None = None,
                   on_step: Callable[[int, int, float | None], None] | None = None) -> TrainStats:
    """Mid-train one proxy model on a corpus with the causal-LM objective; write it to ``out_dir``.

    Parameters
    ----------
    corpus
        ``corpus.jsonl`` or the dataset folder holding it.
    size
        Ladder rung (a proxy built from config; pretrained rungs are already pre-trained).
    max_steps
        Optimizer steps (batch ``size.batch_size`` documents of at most ``size.max_seq_len`` tokens).
    sft_texts
        Rendered SFT conversations, added to the tokenizer's training text when no ``tokenizer_dir`` is given.

    Returns
    -------
    grid.models.TrainStats
        N, D (non-padding corpus tokens fed), ``6 N D``, wall seconds, final loss, steps.
    """
    import torch
    from datasets import Dataset

    from train.proxy import build_model, count_params
    from train.sft import make_trainer, quiet_progress, read_stats, sft_config

    if size.pretrained:
        raise UsageError(f"model size {size.name!r} is pretrained; the midtrain stage builds proxy models only")
    if not isinstance(max_steps, int) or max_steps < 1:
        raise UsageError(f"midtrain steps must be a positive integer, got {max_steps!r}")
    if threads is not None:
        torch.set_num_threads(threads)
    texts = read_corpus(corpus)
    out = Path(out_dir)
    identity = {"stage": "midtrain", "corpus_id": corpus_id(texts), "steps": max_steps, "seed": seed,
                "model_size": size.model_dump(mode="json", exclude={"gpus", "cpus", "mem_gb", "timeout_min",
                                                                      "micro_batch_size"})}
    if resume and (out / RUN_FILE).is_file():
        if json.loads((out / RUN_FILE).read_text(encoding="utf-8")) != identity:
            raise UsageError(f"{str(out)!r} holds a different mid-training run; use another output folder")
        previous = read_stats(out)
        if previous is not None:
            return TrainStats.model_validate(previous["train"])
    if not resume:
        clear_checkpoints(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / RUN_FILE).write_text(json.dumps(identity, indent=1), encoding="utf-8")

    tokenizer = _tokenizer(size, out, texts, sft_texts, tokenizer_dir, resume)
    model = build_model(size, seed=seed)
    params, params_nonemb = count_params(model)
    dataset = Dataset.from_list([{"text": t} for t in texts])
    config = sft_config(size, checkpoint_dir(out), max_steps=max_steps, seed=seed, save_steps=max(10, max_steps // 4),
                        dataset_text_field="text", completion_only_loss=False)
    checkpoint = last_checkpoint(out) if resume else None
    accounting = accounting_callback(read_accounting(checkpoint).get("wall_s", 0.0), on_step=on_step)
    with quiet_progress():
        trainer = make_trainer(model, tokenizer, dataset, config, callbacks=[accounting])
        trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
        trainer.model.save_pretrained(out)
        tokenizer.save_pretrained(out)
    state = trainer.state
    curve = loss_curve(state.log_history)
    tokens = float(state.num_input_tokens_seen)
    final = curve[-1]["loss"] if curve else None
    stats = TrainStats(params=float(params), params_nonembedding=float(params_nonemb), train_tokens=tokens,
                       train_flops=training_flops(params, tokens), wall_s=accounting.wall_s,
                       final_loss=final if final is None or math.isfinite(final) else None, steps=int(state.global_step))
    payload = {"objective": "midtrain", "train": stats.model_dump(mode="json"), "loss_curve": curve,
               "corpus": {"documents": len(texts), "corpus_id": identity["corpus_id"]}, "model_size": size.name,
               "steps": max_steps, "seed": seed}
    tmp = out / (STATS_FILE + ".tmp")
    tmp.write_text(json.dumps(payload, indent=1), encoding="utf-8")
    tmp.replace(out / STATS_FILE)
    return stats
