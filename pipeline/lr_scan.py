"""Run a learning-rate scan (``toolscale lr-scan``): the I/O around :mod:`train.lr_choice`.

Every ``(scanned rung, rate)`` pair trains once on the same dataset (the given recipe, built under the
executor folder's dataset cache) with the experiment's shared tokenizer when the config asks for one,
``ceil(tpp x N / (batch x tokens_per_sequence))`` steps, the experiment's weight decay, schedule and kept
checkpoints, ``max_parallel`` at a time, each a fork of the warm local executor's server
(:func:`slurm.warm.map_warm`: the training stack imported once). Each kept checkpoint is scored on the
validation benchmark (``[eval] validation``, ``validation_limit`` items, through the experiment's token cache);
the run's score is the best. A run that raises (a NaN loss stops it with :class:`train.sft.DivergedError`) or
whose process dies is recorded as failed with its log tail; the choice is made among the rest. The result is
written atomically to
``<executor.folder>/lr_scan.json``; a rerun reuses the finished trainings (``train_sft`` resumes).
"""

from __future__ import annotations

import math
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from train.lr_choice import ScanResult, ScanRun, best_rates, carry_rates, scan_loss

__all__ = ["run_lr_scan", "scan_path", "read_scan", "scan_steps", "SCAN_FILE"]

SCAN_FILE = "lr_scan.json"
"""File name of the scan result in the executor folder."""


def scan_path(cfg: Any) -> Path:
    """``<executor.folder>/lr_scan.json``."""
    return Path(cfg.executor.folder) / SCAN_FILE


def read_scan(cfg: Any) -> ScanResult | None:
    """The stored scan result of this config's experiment, or None when there is none."""
    path = scan_path(cfg)
    if not path.is_file():
        return None
    return ScanResult.model_validate_json(path.read_text(encoding="utf-8"))


def scan_steps(cfg: Any, size: Any) -> int:
    """Steps of a scan run: ``ceil(tpp x N / (batch_size x design.tokens_per_sequence))``."""
    n = size.counted_params(cfg.design.param_count)
    return max(1, math.ceil(cfg.lr_scan.tokens_per_param * n / (size.batch_size * cfg.design.tokens_per_sequence)))


def _train_one(cfg_json: dict[str, Any], rung: str, lr: float, data_dir: str, tok_dir: str | None,
               out_dir: str, cache: str | None = None) -> dict[str, Any]:
    """Worker: one scan training; returns ScanRun fields (never raises). ``cache``: the dataset cache folder,
    beside which the dataset is tokenised once for all scan runs and the validation items encoded once
    (:func:`pipeline.job.train_cache_dir`, :func:`pipeline.job.eval_cache_dir`)."""
    from pipeline.job import eval_cache_dir, train_cache_dir
    from toolscale.config import ExperimentConfig, min_kept_steps

    cfg = ExperimentConfig.model_validate(cfg_json)
    size = cfg.model_size(rung)
    steps = scan_steps(cfg, size)
    base = {"rung": rung, "width": size.hidden_size, "learning_rate": lr, "steps": steps}
    try:
        from train.sft import read_stats, train_sft

        keep = min(cfg.eval.checkpoints, steps) or 1
        fits = steps >= min_kept_steps(keep, cfg.eval.checkpoint_spacing)  # the runs' spacing, if it fits
        stats = train_sft(data_dir, size, out_dir, max_steps=steps, seed=cfg.lr_scan.seed, threads=cfg.train.threads,
                          tokenizer_dir=tok_dir, learning_rate=lr, label=f"lr-scan {rung} lr={lr:g}",
                          weight_decay=cfg.train.weight_decay, schedule=cfg.train.schedule,
                          wsd_decay=cfg.train.wsd_decay, snapshots=keep,
                          snapshot_spacing=cfg.eval.checkpoint_spacing if fits else "linear",
                          cache_dir=None if cache is None else train_cache_dir(cache))
        saved = read_stats(out_dir) or {}
        loss = scan_loss(saved.get("loss_curve") or [])
        if not math.isfinite(loss):
            raise ValueError(f"scan loss is {loss}")
        eval_cache = eval_cache_dir(cache) if cache is not None and tok_dir is not None else None
        step, bpb = _validation(saved.get("snapshots") or [], cfg, eval_cache)
        return {**base, "status": "done", "loss": loss, "valid_bpb": bpb, "valid_step": step, "wall_s": stats.wall_s}
    except Exception as err:  # noqa: BLE001 - a failed scan run is a result, not a crash
        from train.sft import DivergedError

        tail = str(err) if isinstance(err, DivergedError) else \
            "".join(traceback.format_exception(err)).strip().splitlines()[-3:]
        return {**base, "status": "failed", "error": tail if isinstance(tail, str) else " | ".join(tail)}


def _died(cfg: Any, rung: str, lr: float, error: str) -> dict[str, Any]:
    """ScanRun fields of a scan training whose process died (its log tail as the error)."""
    size = cfg.model_size(rung)
    tail = " | ".join(line for line in error.strip().splitlines()[-3:])
    return {"rung": rung, "width": size.hidden_size, "learning_rate": lr, "steps": scan_steps(cfg, size),
            "status": "failed", "error": tail or "the training's process died"}


def _validation(snapshots: list[dict[str, Any]], cfg: Any, eval_cache: Path | None) -> tuple[int, float]:
    """``(step, bpb)`` of the kept checkpoint with the lowest validation bits per byte (the checkpoints share
    the run's tokenizer: loaded once, its encodings read from ``eval_cache``)."""
    from eval.backends import TransformersBackend, get_backend
    from eval.runner import evaluate

    if not snapshots:
        raise ValueError("the scan run kept no checkpoint to score")
    scored = {}
    tok = TransformersBackend._load_tokenizer(snapshots[-1]["path"])
    for snap in snapshots:
        backend = get_backend("transformers", snap["path"], threads=cfg.train.threads, tokenizer_obj=tok,
                              cache_dir=eval_cache)
        rows = evaluate(snap["path"], cfg.eval.validation, limit=cfg.eval.validation_limit, seed=0, backend=backend,
                        score_only=True)
        scored[int(snap["step"])] = next(r.score for r in rows if r.metric == "bpb")
    step = min(scored, key=lambda s: (scored[s], s))
    return step, float(scored[step])


def run_lr_scan(cfg: Any, recipe_levels: dict[str, float], *, progress: Callable[[str], None] | None = None,
                trainer: Callable[..., dict[str, Any]] | None = None) -> ScanResult:
    """Train every scan run, choose, carry by the rule; write and return the :class:`ScanResult`.

    ``recipe_levels`` are the axis levels of the scan's dataset (the design's center point).
    ``trainer`` replaces the worker (tests); it gets the worker's arguments and returns ScanRun fields.
    """
    from pipeline.job import dataset_key, ensure_dataset, ensure_tokenizer, recipe_for

    spec = cfg.lr_scan
    if spec is None:
        raise ValueError("the config has no [lr_scan] section")
    if cfg.eval.validation is None:
        raise ValueError("the learning-rate scan chooses on the validation benchmark; set [eval] validation "
                         "(valid-calls), never training loss")
    say = progress or (lambda _m: None)
    folder = Path(cfg.executor.folder)
    cache = folder / "datasets"
    recipe = recipe_for(cfg, recipe_levels, spec.seed)
    key = dataset_key({"lr_scan": recipe.identity()})

    def build(tmp: Path) -> None:
        from synth.domains import domain_of

        domain_of(cfg).build(recipe, tmp)

    data_dir, _ = ensure_dataset(cache, key, build)
    tok_dir = str(ensure_tokenizer(cfg, cache)) if cfg.train.tokenizer == "shared" else None
    jobs = [(r, float(lr)) for r in spec.rungs for lr in spec.learning_rates]
    say(f"lr-scan: {len(jobs)} runs ({', '.join(spec.rungs)} x {len(spec.learning_rates)} rates) on {data_dir.name}")
    cfg_json = cfg.model_dump(mode="json")
    args = [(cfg_json, r, lr, str(data_dir), tok_dir, str(folder / "lr-scan" / f"{r}-lr{lr:g}"),
             str(cache)) for r, lr in jobs]
    t0 = time.monotonic()
    results: list[dict[str, Any]] = []
    if trainer is not None:
        results = [trainer(*a) for a in args]
    else:  # each training a fork of the warm local executor's server (slurm.warm): the stack imported once
        from slurm.warm import map_warm

        done: dict[int, dict[str, Any]] = {}
        for i, out in map_warm("pipeline.lr_scan:_train_one", args, slots=cfg.executor.max_parallel,
                               log_dir=folder / "lr-scan" / "logs"):
            r = done[i] = out.get("result") or _died(cfg, *jobs[i], out.get("error", ""))
            shown = (f"validation bpb {r['valid_bpb']:.4f} (step {r['valid_step']}), training loss {r['loss']:.4f}"
                     if r["status"] == "done" else f"FAILED: {r['error']}")
            say(f"lr-scan {len(done)}/{len(jobs)}: {r['rung']} lr={r['learning_rate']:g} {shown} "
                f"({(time.monotonic() - t0) / 60:.1f} min)")
        results = [done[i] for i in range(len(args))]
    runs = [ScanRun.model_validate(r) for r in results]
    best, edge = best_rates(runs)
    widths = {m.name: m.hidden_size for m in cfg.ladder if not m.pretrained}
    k, anchor, rates = carry_rates(best, widths, spec.rule)
    result = ScanResult(experiment=cfg.experiment.name, rule=spec.rule, exponent=k, anchor_rung=anchor,
                        anchor_width=widths[anchor], anchor_lr=rates[anchor], best=best, at_grid_edge=edge,
                        validation=cfg.eval.validation,
                        learning_rates=rates, runs=runs)
    from toolscale.files import atomic_write_json

    atomic_write_json(scan_path(cfg), result.model_dump(mode="json"), indent=1)
    return result
