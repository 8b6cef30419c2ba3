"""Supervised fine-tuning with TRL's ``SFTTrainer`` (pinned interface 4).

:func:`train_sft` trains one model of a ladder rung on one synthesised dataset and writes a
``from_pretrained``-loadable folder (model + tokenizer) plus ``train_stats.json``. Proxy rungs
get a byte-level BPE tokenizer trained on the dataset itself and a model built from config;
``pretrained`` rungs load their own model and tokenizer, with a chat template that trains
(:mod:`train.templates`: TRL's stored training variant where the model's own has no
``{% generation %}`` markers), which is saved with the model.

Settings chosen for tiny CPU models (TRL's defaults are for GPUs; measured on 2 cores):
float32 (``SFTConfig(use_cpu=True)`` defaults to bf16), no gradient checkpointing (default on),
the rung's learning rate (TRL's default 2e-5 barely moves a random model), no packing (3.5x
slower on CPU), and the plain causal-LM loss instead of TRL's tiled fused LM head (1.4-1.6x
slower on CPU); see ``benchmarks/train_throughput.py``. On GPUs (:mod:`train.distributed`): one
process per GPU, bf16 mixed precision, FSDP for multi-GPU rungs, a global batch with gradient
accumulation, activation checkpointing, padding-free batches and TRL's chunked LM-head loss;
rank 0 alone writes the run's files, and the final model is saved in ``save_dtype``.

Loss is on assistant tokens only: conversations are tokenized here (:func:`train.data.tokenize_rows`,
with the chat template's ``{% generation %}`` masks, through the tokenised-dataset cache of
:mod:`train.tokenized` when a ``cache_dir`` is given) and handed to TRL as ``input_ids`` + ``labels``
(-100 outside the mask, :meth:`train.tokenized.TokenizedArrays.dataset`) with TRL's dataset preparation
skipped: it would build the same labels with ``Dataset.map`` passes that cost a small run more than its
training. TRL's own ``assistant_only_loss`` flag only applies when TRL tokenizes, so it stays off; tokenizing
here keeps the token counts exact and the dataset's ``meta`` column out of the trainer.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from grid.models import TrainStats
from toolscale.config import ModelSize, TrainSpec, training_flops
from toolscale.errors import UsageError
from train.accounting import accounting_callback, loss_curve, read_accounting
from train.callbacks import DivergedError, divergence_callback, snapshot_callback
from train.checkpoint import RUN_FILE, STATS_FILE, checkpoint_dir, clear_checkpoints, last_checkpoint, snapshot_steps
from train.data import count_rows, dataset_id, read_rows, render_corpus
from train.tokenized import cached_tokenize
from train.tokenizer import tokenizer_id
from train.distributed import save_final
from train.errors import TrainError
from train.interrupt import Interrupted, StopCheck, interrupt_callback
from train.templates import template_name

__all__ = ["train_sft", "sft_config", "schedule_options", "read_stats", "make_trainer", "quiet_progress",
           "divergence_callback", "snapshot_callback", "planned_epochs", "DivergedError"]


def planned_epochs(steps: int, batch_size: int, rows: int) -> float:
    """Passes over a dataset of ``rows`` sequences: ``steps x batch_size / rows``."""
    return steps * batch_size / max(rows, 1)


_RESOURCE_FIELDS = {"gpus", "cpus", "mem_gb", "timeout_min", "micro_batch_size"}
"""Rung fields that do not change what is trained (a requeued job may get other resources)."""


def schedule_options(schedule: str, max_steps: int, wsd_decay: float = 0.2) -> dict[str, Any]:
    """``SFTConfig`` fields of a learning-rate schedule after the linear warm-up.

    ``cosine``: cosine decay to the last step. ``wsd`` (warmup-stable-decay, Hu et al. 2024 "MiniCPM"): the peak
    rate held until the last ``ceil(wsd_decay x max_steps)`` steps, then a linear decay to 0 over them.
    """
    if schedule == "cosine":
        return {"lr_scheduler_type": "cosine"}
    if schedule == "wsd":
        decay = max(1, math.ceil(wsd_decay * max_steps))
        return {"lr_scheduler_type": "warmup_stable_decay",
                "lr_scheduler_kwargs": {"num_decay_steps": decay, "decay_type": "linear"}}
    raise UsageError(f"unknown schedule {schedule!r}; known: cosine, wsd")


def sft_config(size: ModelSize, output_dir: str | Path, *, max_steps: int, seed: int = 0,
               save_steps: int = 0, logging_steps: int | None = None, weight_decay: float = 0.0,
               schedule: str = "cosine", wsd_decay: float = 0.2, train: TrainSpec | None = None,
               **overrides: Any):
    """The ``SFTConfig`` of one run (the one adapter between our settings and TRL's).

    ``save_steps=0`` disables step checkpoints. ``weight_decay`` is AdamW's decoupled decay; ``schedule`` the
    rate's shape after the warm-up (:func:`schedule_options`). ``train`` sets the parallel layout
    (:func:`train.distributed.parallel_settings`: global batch, accumulation, sharding, activation
    checkpointing, padding-free batches) for the processes of this torch-distributed job.
    ``overrides`` replace any field (benchmarks use it to compare TRL's defaults).
    """
    import torch
    from trl import SFTConfig

    from train.distributed import dist_env, parallel_settings

    gpu = torch.cuda.is_available()
    kwargs: dict[str, Any] = dict(
        output_dir=str(output_dir), use_cpu=not gpu, bf16=gpu and torch.cuda.is_bf16_supported(), fp16=False,
        activation_checkpointing=False, learning_rate=size.learning_rate,
        **schedule_options(schedule, max_steps, wsd_decay),
        warmup_steps=max(1, max_steps // 20), weight_decay=weight_decay, max_grad_norm=1.0,
        per_device_train_batch_size=size.batch_size, gradient_accumulation_steps=1, max_steps=max_steps,
        max_length=size.max_seq_len, packing=False, assistant_only_loss=False, seed=seed, data_seed=seed,
        logging_steps=logging_steps or max(1, max_steps // 200), logging_first_step=True,
        save_strategy="steps" if save_steps else "no", save_steps=save_steps or 500, save_total_limit=1,
        report_to="none", disable_tqdm=True, include_num_input_tokens_seen="non_padding",
        dataloader_num_workers=0, remove_unused_columns=True, dataset_num_proc=None, logging_nan_inf_filter=False)
    kwargs.update(parallel_settings(size, train or TrainSpec(), gpu=gpu, world_size=dist_env().world_size))
    kwargs.update(overrides)
    return SFTConfig(**kwargs)


def _reporting(report_to: str, name: str | None) -> dict[str, Any]:
    """TRL's ``report_to`` (``[train].report_to``) and the run name the tracker shows (the toolscale run id)."""
    if report_to == "none":
        return {}
    return {"report_to": report_to, **({"run_name": name} if name else {})}


def make_trainer(model, tokenizer, dataset, config, *, plain_loss: bool = True, callbacks=(), aux_loss=None):
    """An ``SFTTrainer`` over a pre-tokenized dataset (``input_ids`` + ``assistant_masks``).

    ``plain_loss=True`` computes the model's own causal-LM loss on the labels TRL built
    (assistant tokens only) instead of TRL's fused LM head; TRL's token-accuracy and entropy
    metrics are then not logged. ``aux_loss``: an object whose ``loss(model, step)`` (a scalar tensor) is added
    to every training micro-batch's loss (:class:`train.drills.CopyDrills`).
    """
    from transformers import PrinterCallback, ProgressCallback, Trainer
    from trl import SFTTrainer

    class _SFTTrainer(SFTTrainer):
        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            out = (Trainer if plain_loss else SFTTrainer).compute_loss(
                self, model, inputs, return_outputs=return_outputs, num_items_in_batch=num_items_in_batch)
            if aux_loss is None or not model.training:
                return out
            extra = aux_loss.loss(model, self.state.global_step)
            return (out[0] + extra, *out[1:]) if return_outputs else out + extra

    trainer = _SFTTrainer(model=model, args=config, train_dataset=dataset, processing_class=tokenizer,
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
    """The run's tokenizer: a pretrained rung's own, with a training chat template (:mod:`train.templates`)
    checked to put loss on the rows, else one trained on the dataset (rank 0 trains and saves it)."""
    from train.distributed import barrier, is_main
    from train.templates import check_loss_tokens, prepare_tokenizer
    from train.tokenizer import load_tokenizer, train_tokenizer

    if size.pretrained:
        tok = load_tokenizer(size.pretrained)
        prepare_tokenizer(tok, source=repr(size.pretrained))
        check_loss_tokens(tok, rows, max_len=size.max_seq_len, source=repr(size.pretrained))
        return tok
    if resume and (out_dir / "tokenizer.json").is_file() and (out_dir / RUN_FILE).is_file():
        return load_tokenizer(out_dir)
    if is_main():
        tok = train_tokenizer(render_corpus(rows), size.vocab_size)
        tok.save_pretrained(out_dir)  # before training, so a resumed run uses the very same ids
    barrier()
    return tok if is_main() else load_tokenizer(out_dir)


def train_sft(data_dir: str | Path, size: ModelSize, out_dir: str | Path, *, max_steps: int | None = None,
              seed: int = 0, threads: int | None = None, resume: bool = True, save_steps: int | None = None,
              on_step: Callable[[int, int, float | None], None] | None = None, tokenizer_dir: str | Path | None = None,
              learning_rate: float | None = None, max_epochs: float | None = None,
              label: str | None = None, init: str | Path | None = None, weight_decay: float = 0.0,
              schedule: str = "cosine", wsd_decay: float = 0.2, snapshots: int = 0, snapshot_spacing: str = "linear",
              train: TrainSpec | None = None,
              checkpoint_every_s: float | None = None, keep_checkpoints: bool = True,
              save_dtype: str | None = None, should_stop: StopCheck | None = None,
              cache_dir: str | Path | None = None, report_to: str = "none",
              loss_on: str = "assistant", aux_loss: Any = None) -> TrainStats:
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
    weight_decay, schedule, wsd_decay
        AdamW's decoupled weight decay and the learning-rate schedule (:func:`schedule_options`); part of the
        run's identity.
    snapshots
        Keep the model at this many evenly spaced steps, the last the final one (checkpoints as data,
        :func:`train.checkpoint.snapshot_steps`): ``train_stats.json`` lists them (``snapshots``: step, tokens
        seen, folder). A run too short for that many is refused before training, naming ``label``.
    snapshot_spacing
        ``linear`` (evenly spaced) or ``log`` (each at half the next one's step): ``[eval] checkpoint_spacing``;
        part of the run's identity when ``log``.
    train
        ``[train]`` settings of the parallel layout (:func:`train.distributed.parallel_settings`); default
        :class:`~toolscale.config.TrainSpec`'s. Under torch distributed (``torchrun``, or SLURM tasks after
        :mod:`slurm.job`) every process calls this function; rank 0 alone writes
        the run's files.
    checkpoint_every_s
        Also checkpoint every this many seconds of wall time (:func:`train.interrupt.interrupt_callback`).
    should_stop
        Asked after every optimizer step; a reason (the job got SIGUSR2 or SIGTERM) saves a checkpoint at
        that step and raises :class:`train.interrupt.Interrupted`.
    keep_checkpoints
        False removes ``checkpoints/`` (the resume state) once the run has succeeded (the final model and its
        ``snapshots`` are what remain).
    save_dtype
        Dtype of the saved final model (``"bfloat16"``, ``"float32"``); None keeps the training dtype.
    cache_dir
        Folder of the tokenised-dataset cache (:mod:`train.tokenized`): runs sharing this dataset and
        tokenizer (and ``max_seq_len`` and seed) tokenise it once. None tokenises every time.
    loss_on
        ``assistant`` (the loss on assistant turns only, the default) or ``all`` (on every token: system, user
        and tool turns too, as in language modelling); part of the run's identity when ``all``.
    aux_loss
        An auxiliary loss added at every step (:func:`make_trainer`), e.g. the warm start's
        :class:`train.drills.CopyDrills`; its ``identity`` (a dict) is part of the run's identity.

    A loss that turns NaN or infinite stops the run with :class:`DivergedError` (step and last losses).

    Returns
    -------
    grid.models.TrainStats
        N (with and without embeddings), D (non-padding tokens seen), ``6 N D``, wall seconds
        (all sessions), final loss, steps. ``train_stats.json`` also holds the loss curve.
    """
    import torch

    from train.distributed import barrier, is_main

    steps = _steps(size, max_steps, threads)
    out = Path(out_dir)
    rows = _lazy_rows(data_dir)  # read (and validated) only when needed: a cache hit does not
    name = label or str(out)
    size = _checked_size(size, data_dir, steps, name, max_epochs=max_epochs, snapshots=(snapshots, snapshot_spacing),
                         learning_rate=learning_rate, tokenizer_dir=tokenizer_dir)
    data_id = dataset_id(data_dir)
    identity = _full_identity(data_id, steps, seed, size, weight_decay=weight_decay, schedule=schedule,
                              wsd_decay=wsd_decay, snapshots=(snapshots, snapshot_spacing),
                              tokenizer_dir=tokenizer_dir, init=init,
                              loss_on=loss_on) | ({"aux_loss": aux_loss.identity} if aux_loss is not None else {})
    finished = _finished(out, identity) if resume and (out / RUN_FILE).is_file() else None
    if finished is not None:
        return finished
    # bad data is refused before anything is written: with a given tokenizer the rows are tokenised (or read
    # back from the cache, already validated) first; a tokenizer of its own trains on the validated rows
    tokenizer = data = None
    if init is not None or tokenizer_dir is not None:
        from train.tokenizer import load_tokenizer

        tokenizer = load_tokenizer(init if init is not None else tokenizer_dir)
        data = _tokenized(rows, tokenizer, size, seed, data_id, cache_dir, data_dir)
    else:
        rows()
    _prepare_folder(out, identity, resume=resume, tokenizer=tokenizer if init is None else None)
    if tokenizer is None or data is None:
        tokenizer = _tokenizer_for(size, out, rows(), resume)
        data = _tokenized(rows, tokenizer, size, seed, data_id, cache_dir, data_dir)
    model = _model_for(size, init, tokenizer, seed)
    dataset = data.dataset(all_tokens=loss_on == "all")
    every = max(10, steps // 4) if save_steps is None else save_steps
    spec = train or TrainSpec()
    config = sft_config(size, checkpoint_dir(out), max_steps=steps, seed=seed, save_steps=every, train=spec,
                        weight_decay=weight_decay, schedule=schedule, wsd_decay=wsd_decay,
                        dataset_kwargs={"skip_prepare_dataset": True}, **_reporting(report_to, label))
    checkpoint = last_checkpoint(out) if resume else None
    accounting = accounting_callback(read_accounting(checkpoint).get("wall_s", 0.0), on_step=on_step)
    stopper = interrupt_callback(checkpoint_every_s, should_stop)
    chunked = spec.chunked_loss if spec.chunked_loss is not None else torch.cuda.is_available()
    keep = snapshot_steps(steps, snapshots, snapshot_spacing)
    snaps = snapshot_callback(out, keep, tokenizer)
    with quiet_progress():
        trainer = make_trainer(model, tokenizer, dataset, config, plain_loss=not chunked, aux_loss=aux_loss,
                               callbacks=[accounting, divergence_callback(), stopper, *([snaps] if keep else [])])
        trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
        if stopper.stopped_at is not None and trainer.state.global_step < steps:
            raise Interrupted(f"run {name}: {stopper.reason}; checkpoint saved at step "
                              f"{trainer.state.global_step} of {steps}")
        save_final(trainer, out, save_dtype)
        if is_main():
            tokenizer.save_pretrained(out)

    curve = loss_curve(trainer.state.log_history)
    stats = _train_stats(size, model, trainer.state, curve, accounting.wall_s)
    tokens = stats.train_tokens
    payload = {"objective": "sft", "train": stats.model_dump(mode="json"), "loss_curve": curve,
               "snapshots": _snapshots(out, keep, snaps.seen, tokens), "dataset_id": data_id, "model_size": size.name,
               "steps": steps, "seed": seed, "resumed_from": checkpoint and checkpoint.name, "data": dict(data.counts),
               "chat_template": template_name(tokenizer.chat_template), "parallel": _layout(trainer, chunked)}
    if is_main():
        _write_json(out / STATS_FILE, payload)
        if not keep_checkpoints:
            clear_checkpoints(out)
    barrier()
    return stats


def _model_for(size: ModelSize, init: str | Path | None, tokenizer: Any, seed: int) -> Any:
    """The model to train: a pretrained rung's or ``init``'s weights, else a new proxy built from config."""
    from train.proxy import build_model, load_model

    if size.pretrained or init is not None:
        with quiet_progress():
            return load_model(size.pretrained or init)
    model = build_model(size, seed=seed)
    if len(tokenizer) > model.config.vocab_size:
        raise TrainError(f"tokenizer has {len(tokenizer)} tokens, model vocabulary {model.config.vocab_size}")
    return model


def _prepare_folder(out: Path, identity: dict[str, Any], *, resume: bool, tokenizer: Any) -> None:
    """Rank 0 clears a run that starts over, writes ``run.json`` (and the given tokenizer); every rank waits."""
    from train.distributed import barrier, init_process_group, is_main

    init_process_group()
    if is_main():
        if not resume:
            clear_checkpoints(out)
            (out / STATS_FILE).unlink(missing_ok=True)
        out.mkdir(parents=True, exist_ok=True)
        _write_json(out / RUN_FILE, identity)
        if tokenizer is not None:
            tokenizer.save_pretrained(out)
    barrier()


def _train_stats(size: ModelSize, model: Any, state: Any, curve: list[dict[str, Any]], wall_s: float) -> TrainStats:
    """N (with and without embeddings), D (non-padding tokens seen), FLOPs with attention and ``6 N D``, wall
    seconds, the last finite loss and the steps of a finished trainer ``state``."""
    from train.proxy import count_params

    params, params_nonemb = count_params(model)
    tokens = float(state.num_input_tokens_seen)
    final_loss = curve[-1]["loss"] if curve else None
    return TrainStats(params=float(params), params_nonembedding=float(params_nonemb), train_tokens=tokens,
                      train_flops=_flops(size, model, params, params_nonemb, tokens, state.global_step),
                      train_flops_6nd=training_flops(params_nonemb, tokens), wall_s=wall_s,
                      final_loss=final_loss if final_loss is None or math.isfinite(final_loss) else None,
                      steps=int(state.global_step))


LOSS_ON = ("assistant", "all")
"""Which tokens carry the SFT loss: the assistant turns, or every token of the conversation."""


def _lazy_rows(data_dir: str | Path) -> Callable[[], list[dict[str, Any]]]:
    """A function returning the dataset's validated rows, read on its first call only."""
    loaded: list[list[dict[str, Any]]] = []

    def rows() -> list[dict[str, Any]]:
        if not loaded:
            loaded.append(read_rows(data_dir))
        return loaded[0]

    return rows


def _tokenized(rows: Callable[[], list[dict[str, Any]]], tokenizer: Any, size: ModelSize, seed: int, data_id: str,
               cache_dir: str | Path | None, data_dir: str | Path) -> Any:
    """The run's :class:`train.tokenized.TokenizedArrays` (cached); TrainError when no row keeps a loss token."""
    data, _ = cached_tokenize(rows, tokenizer, size.max_seq_len, seed=seed, dataset_id=data_id, folder=cache_dir)
    if not data.n_examples:
        raise TrainError(f"no row of {data_dir} keeps an assistant token within max_seq_len={size.max_seq_len}")
    return data


def _steps(size: ModelSize, max_steps: int | None, threads: int | None) -> int:
    """The run's optimizer steps (``size.max_steps`` by default), after setting torch's CPU threads."""
    import torch

    steps = size.max_steps if max_steps is None else max_steps
    if not isinstance(steps, int) or steps < 1:
        raise UsageError(f"max_steps must be a positive integer, got {steps!r}")
    if threads is not None:
        if threads < 1:
            raise UsageError(f"threads must be >= 1, got {threads}")
        torch.set_num_threads(threads)
    return steps


def _checked_size(size: ModelSize, data_dir: str | Path, steps: int, name: str, *, max_epochs: float | None,
                  snapshots: tuple[int, str], learning_rate: float | None,
                  tokenizer_dir: str | Path | None) -> ModelSize:
    """``size`` with the run's learning rate, after the checks that refuse a run before it trains (epochs over the
    data, more snapshots than steps, a bad rate, a tokenizer for a pretrained rung), each naming the run."""
    if max_epochs is not None:
        n_rows = count_rows(data_dir)
        epochs = planned_epochs(steps, size.batch_size, n_rows)
        if epochs > max_epochs + 1e-9:
            raise UsageError(f"run {name}: {epochs:.2f} epochs ({steps} steps x {size.batch_size} sequences over "
                             f"{n_rows} rows) exceed train.max_epochs = {max_epochs:g}; synthesise more tasks "
                             "or train fewer steps")
    try:
        snapshot_steps(steps, *snapshots)
    except ValueError as e:
        raise UsageError(f"run {name}: [eval] checkpoints = {snapshots[0]} ({snapshots[1]}): {e}; keep fewer "
                         "checkpoints or train more steps") from None
    if learning_rate is not None:
        if not (isinstance(learning_rate, float | int) and math.isfinite(learning_rate) and learning_rate > 0):
            raise UsageError(f"learning_rate must be a positive number, got {learning_rate!r}")
        size = size.model_copy(update={"learning_rate": float(learning_rate)})
    if tokenizer_dir is not None and size.pretrained:
        raise UsageError(f"model size {size.name!r} is pretrained and brings its own tokenizer; "
                         "tokenizer_dir is for proxy rungs")
    return size


def _full_identity(data_id: str, steps: int, seed: int, size: ModelSize, *, weight_decay: float, schedule: str,
                   wsd_decay: float, snapshots: tuple[int, str], tokenizer_dir: str | Path | None,
                   init: str | Path | None, loss_on: str = "assistant") -> dict[str, Any]:
    """The run's identity (:func:`_identity`) with the shared tokenizer's hash, the initial model's identity and
    a loss on every token (``loss_on="all"``); a ``loss_on`` outside :data:`LOSS_ON` is a UsageError."""
    if loss_on not in LOSS_ON:
        raise UsageError(f"loss_on must be one of {', '.join(LOSS_ON)}, got {loss_on!r}")
    identity = _identity(data_id, steps, seed, size, weight_decay=weight_decay, schedule=schedule,
                         wsd_decay=wsd_decay, snapshots=snapshots)
    if tokenizer_dir is not None:
        identity["tokenizer_id"] = tokenizer_id(tokenizer_dir)
    if init is not None:
        if size.pretrained:
            raise UsageError(f"model size {size.name!r} is pretrained; init is for proxy rungs (a mid-trained model)")
        init_run = Path(init) / RUN_FILE
        if not init_run.is_file():
            raise TrainError(f"init folder {str(init)!r} holds no finished toolscale run ({RUN_FILE} missing)")
        identity["init"] = json.loads(init_run.read_text(encoding="utf-8"))
    if loss_on != "assistant":
        identity["loss_on"] = loss_on
    return identity


def _finished(out: Path, identity: dict[str, Any]) -> TrainStats | None:
    """The stored accounting of an identical finished run in ``out``, None if it has not finished; a folder
    holding a different run is a UsageError naming what differs."""
    run_file = out / RUN_FILE
    before = json.loads(run_file.read_text(encoding="utf-8"))
    if before != identity:
        changed = sorted(k for k in identity.keys() | before.keys() if before.get(k) != identity.get(k))
        raise UsageError(f"{str(out)!r} holds a run with a different {', '.join(changed)}; pass resume=False "
                         "(--no-resume) to replace it, or use another output folder")
    previous = read_stats(out)
    if previous is not None:
        return TrainStats.model_validate(previous["train"])
    return None


def _identity(data_id: str, steps: int, seed: int, size: ModelSize, *, weight_decay: float, schedule: str,
              wsd_decay: float, snapshots: tuple[int, str]) -> dict[str, Any]:
    """What a run folder holds (``run.json``): a resume refuses a folder with another identity. Options added
    after the first runs enter only when set, so older runs keep their identity."""
    identity: dict[str, Any] = {"dataset_id": data_id, "steps": steps, "seed": seed,
                                "model_size": size.model_dump(mode="json", exclude=_RESOURCE_FIELDS)}
    if weight_decay or schedule != "cosine":
        identity["optimiser"] = {"weight_decay": weight_decay, "schedule": schedule,
                                 **({"wsd_decay": wsd_decay} if schedule == "wsd" else {})}
    if snapshots[0]:
        identity["keep_checkpoints"] = snapshots[0]  # the key older runs were written with
        if snapshots[1] != "linear":
            identity["keep_spacing"] = snapshots[1]
    return identity


def _flops(size: ModelSize, model: Any, params: float, params_nonemb: float, tokens: float, steps: int) -> float:
    """The run's training FLOPs: attention and the unembedding counted for a proxy built from config
    (:func:`toolscale.config.model_flops`, the context the mean sequence trained), ``6 N D`` for a pretrained one."""
    from toolscale.config import model_flops

    cfg = getattr(model, "config", None)
    if size.pretrained or cfg is None or not steps:
        return training_flops(params, tokens)
    context = tokens / (steps * size.batch_size)
    return model_flops(params_nonemb, tokens, n_layers=int(cfg.num_hidden_layers), width=int(cfg.hidden_size),
                       vocab=int(cfg.vocab_size), context=context)


def _snapshots(out: Path, keep: list[int], seen: dict[int, float], final_tokens: float) -> list[dict[str, Any]]:
    """``[{"step", "tokens", "path"}]`` of the kept checkpoints; a step trained before a resume reads its tokens
    from its ``snapshot.json``; the last is ``out`` itself."""
    from train.checkpoint import snapshot_dir

    rows = []
    for step in keep:
        folder = out if step == keep[-1] else snapshot_dir(out, step)
        tokens = final_tokens if step == keep[-1] else seen.get(step)
        if tokens is None and (folder / "snapshot.json").is_file():
            tokens = json.loads((folder / "snapshot.json").read_text(encoding="utf-8"))["tokens"]
        if tokens is not None and (folder / "config.json").is_file():
            rows.append({"step": step, "tokens": float(tokens), "path": str(folder)})
    return rows
def _layout(trainer: Any, chunked: bool) -> dict[str, Any]:
    """How the run was laid out: processes, micro batch, accumulation, sharding, memory savers."""
    args = trainer.args
    return {"world_size": int(args.world_size), "micro_batch_size": int(args.per_device_train_batch_size),
            "gradient_accumulation_steps": int(args.gradient_accumulation_steps),
            "fsdp": bool(getattr(trainer, "is_fsdp_enabled", False)),
            "activation_checkpointing": bool(args.activation_checkpointing
                                             or (args.fsdp_config or {}).get("activation_checkpointing")),
            "padding_free": bool(getattr(trainer, "padding_free", False)), "chunked_loss": bool(chunked),
            "bf16": bool(args.bf16)}


def _write_json(path: Path, payload: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(payload, indent=1), encoding="utf-8")
    tmp.replace(path)
