"""Supervised fine-tuning with TRL's ``SFTTrainer`` (pinned interface 4).

:func:`train_sft` trains one model of a ladder rung on one synthesised dataset and writes a
``from_pretrained``-loadable folder (model + tokenizer) plus ``train_stats.json``. Proxy rungs
get a byte-level BPE tokenizer trained on the dataset itself and a model built from config;
``pretrained`` rungs load their own model, tokenizer and chat template.

Settings chosen for tiny CPU models (TRL's defaults are for GPUs; measured on 2 cores):
float32 (``SFTConfig(use_cpu=True)`` defaults to bf16), no gradient checkpointing (default on),
the rung's learning rate (TRL's default 2e-5 barely moves a random model), no packing (3.5x
slower on CPU), and the plain causal-LM loss instead of TRL's tiled fused LM head (1.4-1.6x
slower on CPU); see ``benchmarks/train_throughput.py``.

Loss is on assistant tokens only: conversations are tokenized here (:func:`train.data.tokenize_rows`,
with the chat template's ``{% generation %}`` masks) and handed to TRL as ``input_ids`` +
``assistant_masks``, from which TRL builds the labels (-100 elsewhere). TRL's own
``assistant_only_loss`` flag only applies when TRL tokenizes, so it stays off; tokenizing here
keeps the token counts exact and the dataset's ``meta`` column out of the trainer.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from grid.models import TrainStats
from toolscale.config import ModelSize, training_flops
from toolscale.errors import UsageError
from train.accounting import accounting_callback, loss_curve, read_accounting
from train.checkpoint import RUN_FILE, STATS_FILE, checkpoint_dir, clear_checkpoints, last_checkpoint
from train.data import dataset_id, read_rows, render_corpus, tokenize_rows
from train.tokenizer import tokenizer_id
from train.errors import TrainError

__all__ = ["train_sft", "sft_config", "read_stats", "make_trainer", "quiet_progress", "divergence_callback",
           "planned_epochs", "DivergedError"]


class DivergedError(TrainError):
    """The training loss became NaN or infinite; the message holds the step and the log's last losses."""


def planned_epochs(steps: int, batch_size: int, rows: int) -> float:
    """Passes over a dataset of ``rows`` sequences: ``steps x batch_size / rows``."""
    return steps * batch_size / max(rows, 1)


def divergence_callback(tail: int = 5):
    """A ``TrainerCallback`` that stops a run whose logged loss is not finite, raising :class:`DivergedError`
    with the step and the last ``tail`` logged losses (the log tail a failed learning-rate scan run keeps)."""
    from transformers import TrainerCallback

    class DivergenceCallback(TrainerCallback):
        def __init__(self):
            self.losses: list[tuple[int, float]] = []

        def on_log(self, args, state, control, logs=None, **kwargs):
            if not logs or "loss" not in logs:
                return
            loss = float(logs["loss"])
            self.losses.append((int(state.global_step), loss))
            if not math.isfinite(loss):
                shown = ", ".join(f"step {st}: {lo:.4g}" for st, lo in self.losses[-tail:])
                raise DivergedError(f"training loss diverged ({loss}) at step {state.global_step} of "
                                    f"{state.max_steps}; last logged losses: {shown}")

    return DivergenceCallback()


_RESOURCE_FIELDS = {"gpus", "cpus", "mem_gb", "timeout_min"}
"""Rung fields that do not change what is trained (a requeued job may get other resources)."""


def sft_config(size: ModelSize, output_dir: str | Path, *, max_steps: int, seed: int = 0,
               save_steps: int = 0, logging_steps: int | None = None, **overrides: Any):
    """The ``SFTConfig`` of one run (the one adapter between our settings and TRL's).

    ``save_steps=0`` disables checkpoints. ``overrides`` replace any field (benchmarks use it
    to compare TRL's defaults).
    """
    import torch
    from trl import SFTConfig

    gpu = torch.cuda.is_available()
    kwargs: dict[str, Any] = dict(
        output_dir=str(output_dir), use_cpu=not gpu, bf16=gpu and torch.cuda.is_bf16_supported(), fp16=False,
        activation_checkpointing=False, learning_rate=size.learning_rate, lr_scheduler_type="cosine",
        warmup_steps=max(1, max_steps // 20), weight_decay=0.0, max_grad_norm=1.0,
        per_device_train_batch_size=size.batch_size, gradient_accumulation_steps=1, max_steps=max_steps,
        max_length=size.max_seq_len, packing=False, assistant_only_loss=False, seed=seed, data_seed=seed,
        logging_steps=logging_steps or max(1, max_steps // 200), logging_first_step=True,
        save_strategy="steps" if save_steps else "no", save_steps=save_steps or 500, save_total_limit=1,
        report_to="none", disable_tqdm=True, include_num_input_tokens_seen="non_padding",
        dataloader_num_workers=0, remove_unused_columns=True, dataset_num_proc=None, logging_nan_inf_filter=False)
    kwargs.update(overrides)
    return SFTConfig(**kwargs)


def make_trainer(model, tokenizer, dataset, config, *, plain_loss: bool = True, callbacks=()):
    """An ``SFTTrainer`` over a pre-tokenized dataset (``input_ids`` + ``assistant_masks``).

    ``plain_loss=True`` computes the model's own causal-LM loss on the labels TRL built
    (assistant tokens only) instead of TRL's fused LM head; TRL's token-accuracy and entropy
    metrics are then not logged.
    """
    from transformers import PrinterCallback, ProgressCallback, Trainer
    from trl import SFTTrainer

    class _PlainLossSFTTrainer(SFTTrainer):
        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            return Trainer.compute_loss(self, model, inputs, return_outputs=return_outputs,
                                        num_items_in_batch=num_items_in_batch)

    cls = _PlainLossSFTTrainer if plain_loss else SFTTrainer
    trainer = cls(model=model, args=config, train_dataset=dataset, processing_class=tokenizer,
                  callbacks=list(callbacks))
    for cb in (PrinterCallback, ProgressCallback):  # both print to stdout; the CLI draws its own bar
        trainer.remove_callback(cb)
    return trainer


@contextlib.contextmanager
def quiet_progress():
    """Silence the progress bars of datasets and transformers (they write to the terminal) for a block."""
    import datasets
    from transformers.utils import logging as hf_logging

    ds_on, hf_on = datasets.is_progress_bar_enabled(), hf_logging.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if ds_on:
            datasets.enable_progress_bars()
        if hf_on:
            hf_logging.enable_progress_bar()


def read_stats(out_dir: str | Path) -> dict[str, Any] | None:
    """The ``train_stats.json`` of a finished run, or None."""
    path = Path(out_dir) / STATS_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _tokenizer_for(size: ModelSize, out_dir: Path, rows, resume: bool):
    from train.tokenizer import load_tokenizer, train_tokenizer

    if size.pretrained:
        tok = load_tokenizer(size.pretrained)
        if not tok.chat_template or "generation" not in tok.chat_template:
            raise TrainError(f"the chat template of {size.pretrained!r} has no {{% generation %}} markers; "
                             "assistant-only loss needs them")
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
        return tok
    if resume and (out_dir / "tokenizer.json").is_file() and (out_dir / RUN_FILE).is_file():
        return load_tokenizer(out_dir)
    tok = train_tokenizer(render_corpus(rows), size.vocab_size)
    tok.save_pretrained(out_dir)  # before training, so a resumed run uses the very same ids
    return tok


def train_sft(data_dir: str | Path, size: ModelSize, out_dir: str | Path, *, max_steps: int | None = None,
              seed: int = 0, threads: int | None = None, resume: bool = True, save_steps: int | None = None,
              on_step: Callable[[int, int, float | None], None] | None = None, tokenizer_dir: str | Path | None = None,
              learning_rate: float | None = None, max_epochs: float | None = None,
              label: str | None = None, init: str | Path | None = None) -> TrainStats:
    """Train one model with SFT on a synthesised dataset; write it to ``out_dir``.

    Parameters
    ----------
    data_dir
        Dataset folder written by synth (``DIR/train.jsonl``, pinned interface 1), or the JSONL file.
    size
        Ladder rung: built from config (proxy) or ``pretrained``.
    out_dir
        Run folder: the final model and tokenizer (``from_pretrained``-loadable), ``train_stats.json``
        and ``checkpoints/``.
    max_steps
        Optimizer steps; default ``size.max_steps``.
    seed
        Seeds the initialisation, the data order and dropout; same seed, same run (CPU).
    threads
        torch CPU threads (None leaves torch's setting).
    resume
        Pick up the last complete checkpoint in ``out_dir`` (a preempted run), and return the stored
        accounting of an identical finished run without training again; a folder holding a different
        run (dataset, rung, steps or seed) is a UsageError. False starts over.
    save_steps
        Steps between checkpoints; default ``max(10, max_steps // 4)``; 0 disables them.
    on_step
        Progress hook ``on_step(step, max_steps, last_loss)``.
    init
        Start from this saved model folder and its tokenizer (a mid-trained proxy, :mod:`train.midtrain`)
        instead of a new proxy model; its ``run.json`` is part of this run's identity.
    tokenizer_dir
        A saved tokenizer (the experiment's shared one) used instead of training one on this dataset;
        proxy rungs only. Its content hash is part of the run's identity.
    learning_rate
        Peak learning rate; default ``size.learning_rate`` (a learning-rate scan's rule passes its own).
    max_epochs
        Refuse, before training, a run that would pass over its dataset more than this many times
        (``steps x batch_size / rows``, :func:`planned_epochs`); the message names ``label``.
    label
        The run's name in messages (its run id).

    A loss that turns NaN or infinite stops the run with :class:`DivergedError` (step and last losses).

    Returns
    -------
    grid.models.TrainStats
        N (with and without embeddings), D (non-padding tokens seen), ``6 N D``, wall seconds
        (all sessions), final loss, steps. ``train_stats.json`` also holds the loss curve.
    """
    import torch

    from train.proxy import build_model, count_params, load_model

    steps = size.max_steps if max_steps is None else max_steps
    if not isinstance(steps, int) or steps < 1:
        raise UsageError(f"max_steps must be a positive integer, got {steps!r}")
    if threads is not None:
        if threads < 1:
            raise UsageError(f"threads must be >= 1, got {threads}")
        torch.set_num_threads(threads)
    out = Path(out_dir)
    rows = read_rows(data_dir)
    name = label or str(out)
    if max_epochs is not None:
        epochs = planned_epochs(steps, size.batch_size, len(rows))
        if epochs > max_epochs + 1e-9:
            raise UsageError(f"run {name}: {epochs:.2f} epochs ({steps} steps x {size.batch_size} sequences over "
                             f"{len(rows)} rows) exceed train.max_epochs = {max_epochs:g}; synthesise more tasks "
                             "or train fewer steps")
    if learning_rate is not None:
        if not (isinstance(learning_rate, float | int) and math.isfinite(learning_rate) and learning_rate > 0):
            raise UsageError(f"learning_rate must be a positive number, got {learning_rate!r}")
        size = size.model_copy(update={"learning_rate": float(learning_rate)})
    if tokenizer_dir is not None and size.pretrained:
        raise UsageError(f"model size {size.name!r} is pretrained and brings its own tokenizer; "
                         "tokenizer_dir is for proxy rungs")
    data_id = dataset_id(data_dir)
    identity = {"dataset_id": data_id, "steps": steps, "seed": seed,
                "model_size": size.model_dump(mode="json", exclude=_RESOURCE_FIELDS)}
    if tokenizer_dir is not None:
        identity["tokenizer_id"] = tokenizer_id(tokenizer_dir)
    if init is not None:
        if size.pretrained:
            raise UsageError(f"model size {size.name!r} is pretrained; init is for proxy rungs (a mid-trained model)")
        init_run = Path(init) / RUN_FILE
        if not init_run.is_file():
            raise TrainError(f"init folder {str(init)!r} holds no finished toolscale run ({RUN_FILE} missing)")
        identity["init"] = json.loads(init_run.read_text(encoding="utf-8"))
    run_file = out / RUN_FILE
    if resume and run_file.is_file():
        before = json.loads(run_file.read_text(encoding="utf-8"))
        if before != identity:
            changed = sorted(k for k in identity if before.get(k) != identity[k])
            raise UsageError(f"{str(out)!r} holds a run with a different {', '.join(changed)}; pass resume=False "
                             "(--no-resume) to replace it, or use another output folder")
        previous = read_stats(out)
        if previous is not None:
            return TrainStats.model_validate(previous["train"])
    if not resume:
        clear_checkpoints(out)
        (out / STATS_FILE).unlink(missing_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    _write_json(run_file, identity)

    if init is not None:
        from train.tokenizer import load_tokenizer
        tokenizer = load_tokenizer(init)
    elif tokenizer_dir is not None:
        from train.tokenizer import load_tokenizer

        tokenizer = load_tokenizer(tokenizer_dir)
        tokenizer.save_pretrained(out)
    else:
        tokenizer = _tokenizer_for(size, out, rows, resume)
    data = tokenize_rows(rows, tokenizer, size.max_seq_len, seed=seed)
    if not data["examples"]:
        raise TrainError(f"no row of {data_dir} keeps an assistant token within max_seq_len={size.max_seq_len}")
    if size.pretrained or init is not None:
        with quiet_progress():
            model = load_model(size.pretrained or init)
    else:
        model = build_model(size, seed=seed)
        if len(tokenizer) > model.config.vocab_size:
            raise TrainError(f"tokenizer has {len(tokenizer)} tokens, model vocabulary {model.config.vocab_size}")
    params, params_nonemb = count_params(model)

    from datasets import Dataset

    dataset = Dataset.from_list(data["examples"])
    every = max(10, steps // 4) if save_steps is None else save_steps
    config = sft_config(size, checkpoint_dir(out), max_steps=steps, seed=seed, save_steps=every)
    checkpoint = last_checkpoint(out) if resume else None
    accounting = accounting_callback(read_accounting(checkpoint).get("wall_s", 0.0), on_step=on_step)
    with quiet_progress():
        trainer = make_trainer(model, tokenizer, dataset, config, callbacks=[accounting, divergence_callback()])
        trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
        trainer.model.save_pretrained(out)
        tokenizer.save_pretrained(out)

    state = trainer.state
    curve = loss_curve(state.log_history)
    tokens = float(state.num_input_tokens_seen)
    final_loss = curve[-1]["loss"] if curve else None
    stats = TrainStats(params=float(params), params_nonembedding=float(params_nonemb), train_tokens=tokens,
                       train_flops=training_flops(params, tokens), wall_s=accounting.wall_s,
                       final_loss=final_loss if final_loss is None or math.isfinite(final_loss) else None,
                       steps=int(state.global_step))
    payload = {"objective": "sft", "train": stats.model_dump(mode="json"), "loss_curve": curve,
               "dataset_id": data_id, "model_size": size.name, "steps": steps, "seed": seed, "resumed_from": checkpoint and checkpoint.name,
               "data": {k: v for k, v in data.items() if k != "examples"}}
    _write_json(out / STATS_FILE, payload)
    return stats


def _write_json(path: Path, payload: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(payload, indent=1), encoding="utf-8")
    tmp.replace(path)
