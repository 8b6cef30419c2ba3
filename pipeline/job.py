"""The ``pipeline`` job kind: synth -> probes -> train -> eval for one run, resumable.

Stages (pinned interfaces 6, 7, 4, 5), each recorded in the run's checkpoint so a
requeued job skips what is done:

1. **dataset**: the recipe of the run (axis levels + ``[synth]`` settings + seed) is
   hashed; the dataset is built and probed once under ``<root>/datasets/<hash>`` and
   shared by every model size. Two jobs building the same dataset take an exclusive
   file lock; the builder writes a temporary folder and renames it into place, so a
   reader sees a complete dataset or none.
2. **train**: the configured ``[train].stages`` (:mod:`pipeline.training`: mid-training, SFT into
   ``workdir/model``, GRPO), each resuming from its own checkpoints after a requeue.
3. **eval**: :func:`eval.runner.evaluate_spec` (every configured benchmark, one model load).

The heavy packages are imported inside the job, so a missing one fails that run (its
result says why), never the launcher.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grid.models import RunSpec
from slurm.job import read_context, save_checkpoint

if TYPE_CHECKING:
    from synth.models import Recipe
    from toolscale.config import ExperimentConfig

__all__ = ["run_pipeline", "job_recipe", "dataset_key", "ensure_dataset", "ensure_tokenizer", "tokenizer_recipe",
           "recipe_for", "COMPLETE_MARKER"]

COMPLETE_MARKER = ".complete"
"""File a finished dataset folder holds (written before the folder is renamed into place)."""


def dataset_key(recipe: dict[str, Any]) -> str:
    """Content hash of a recipe (seed included): ``ds-`` + 16 hex digits of SHA-256 of its sorted JSON."""
    text = json.dumps(recipe, sort_keys=True, separators=(",", ":"), default=str)
    return "ds-" + hashlib.sha256(text.encode()).hexdigest()[:16]


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def ensure_dataset(cache: str | Path, key: str, build: Callable[[Path], None]) -> tuple[Path, bool]:
    """The dataset folder ``cache/key``, built by ``build(tmp_folder)`` if it is not there yet.

    Returns ``(folder, built_now)``. Concurrent callers with the same key wait on a lock
    file; exactly one builds. A failed build leaves no folder behind (its temp folder is removed).
    """
    cache = Path(cache)
    final = cache / key
    if (final / COMPLETE_MARKER).exists():
        return final, False
    with _locked(cache / f".{key}.lock"):
        if (final / COMPLETE_MARKER).exists():
            return final, False
        tmp = cache / f".{key}.tmp-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        try:
            build(tmp)
            (tmp / COMPLETE_MARKER).write_text(key)
            if final.exists():  # an incomplete leftover of a killed builder
                shutil.rmtree(final)
            os.replace(tmp, final)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    return final, True


def recipe_for(cfg: Any, levels: dict[str, Any], seed: int) -> Any:
    """The ``synth.models.Recipe`` of axis ``levels`` with the config's ``[synth]`` settings."""
    from synth.models import Recipe

    from pipeline.training import stage_axes

    settings = {k: v for k, v in cfg.synth.model_dump().items() if k in Recipe.model_fields}
    knobs = {k: v for k, v in levels.items() if k not in stage_axes(cfg)}
    return Recipe.from_axes(knobs, seed=seed, **settings)


def tokenizer_recipe(cfg: Any) -> Any:
    """The recipe whose dataset trains an experiment's shared tokenizer: every axis at its maximum (all
    training tools, the most tasks and databases), seed 0. Fixed by the config alone, before any run."""
    return recipe_for(cfg, {a.name: a.max for a in cfg.axes}, seed=0)


def ensure_tokenizer(cfg: Any, cache: str | Path) -> Path:
    """The experiment's shared tokenizer folder under ``cache``, trained once (locked, atomic like datasets).

    Byte-level BPE (:func:`train.tokenizer.train_tokenizer`) with the ladder's ``vocab_size``, trained on the
    conversations of :func:`tokenizer_recipe`; the folder name hashes that recipe and the vocabulary, so
    every run of the experiment (and a rerun) gets the very same token ids.
    """
    recipe = tokenizer_recipe(cfg)
    vocab = next(m.vocab_size for m in cfg.ladder if not m.pretrained)
    key = "tok-" + dataset_key({"recipe": recipe.identity(), "vocab_size": vocab})[3:]

    def build(folder: Path) -> None:
        from synth.dataset import build_dataset
        from train.data import read_rows, render_corpus
        from train.tokenizer import train_tokenizer

        build_dataset(recipe, folder / "corpus")
        tok = train_tokenizer(render_corpus(read_rows(folder / "corpus")), vocab)
        tok.save_pretrained(folder)
        shutil.rmtree(folder / "corpus")

    folder, _ = ensure_dataset(cache, key, build)
    return folder


def _probe_extra(manifest: dict[str, Any], train_flops: float | None) -> dict[str, Any]:
    probe = manifest.get("probe") or {}
    cost = probe.get("cost") or {}
    flops = cost.get("total_flops")
    return {"measured_groundedness": probe.get("measured_groundedness"),
            "symbolic_groundedness": probe.get("symbolic_groundedness"),
            "coverage": probe.get("coverage"), "agreement": probe.get("agreement"),
            "probe_reliable": probe.get("probe_reliable"), "kind": probe.get("kind"),
            "balanced_accuracy": (probe.get("calibration") or {}).get("balanced_accuracy"),
            "probe_flops": flops,
            "probe_cost_share": (flops / train_flops) if flops is not None and train_flops else None}


def job_recipe(run: RunSpec, cfg: ExperimentConfig) -> Recipe:
    """The run's recipe: its axis levels, the config's ``[synth]`` settings (the user's ``servers``
    included, so they are collected and executed live in the job) and the run's seed."""
    from synth.models import Recipe

    from pipeline.training import stage_axes

    settings = {k: v for k, v in cfg.synth.model_dump().items() if k in Recipe.model_fields}
    knobs = {k: v for k, v in run.recipe.items() if k not in stage_axes(cfg)}  # stage axes set training
    return Recipe.from_axes(knobs, seed=run.seed, **settings)


def run_pipeline(run: RunSpec, workdir: Path, checkpoint: dict[str, Any] | None) -> dict[str, Any]:
    """Build (or reuse) the run's dataset, train, evaluate; returns the result fields (see :mod:`slurm.jobs`)."""
    from synth.dataset import build_dataset
    from toolscale.config import ExperimentConfig

    ctx = read_context(workdir)
    cfg = ExperimentConfig.model_validate(ctx["config"])
    state = dict(checkpoint or {})
    sizes = {s.name: s for s in cfg.ladder}
    if run.model_size not in sizes:
        raise KeyError(f"model size {run.model_size!r} is not in the config's ladder ({', '.join(sizes)})")
    size = sizes[run.model_size]
    from pipeline.training import train_stages

    recipe = job_recipe(run, cfg)
    key = dataset_key(recipe.identity())

    def build(folder: Path) -> None:
        from probes.pipeline import probe_dataset

        build_dataset(recipe, folder)
        target = cfg.target_size  # the probe budget is a share of the run the data is for
        probe_dataset(folder, spec=cfg.probe, target_train_flops=target.planned_flops)

    t0 = time.monotonic()
    data_dir, built = ensure_dataset(ctx["dataset_cache"], key, build)
    stage_s = {"dataset": time.monotonic() - t0}
    state.update(stage="dataset", dataset=str(data_dir))
    save_checkpoint(workdir, state)
    manifest = json.loads((data_dir / "manifest.json").read_text(encoding="utf-8"))

    steps = int(run.metadata.get("max_steps", size.max_steps))  # the design's steps (token multiples)
    lr = run.metadata.get("learning_rate")  # set by the learning-rate scan's rule, when the design used one
    tok_dir = None
    if cfg.train.tokenizer == "shared" and not size.pretrained:
        tok_dir = ensure_tokenizer(cfg, ctx["dataset_cache"])
    trained = train_stages(cfg, size, run, data_dir, Path(workdir), steps=steps, cache=Path(ctx["dataset_cache"]),
                           tokenizer_dir=tok_dir,
                           learning_rate=float(lr) if lr is not None else None, max_epochs=cfg.train.max_epochs,
                           label=run.run_id)
    stats, model_dir = trained.total, trained.model_dir
    stage_s["train"] = time.monotonic() - t0 - stage_s["dataset"]
    state.update(stage="trained", model=str(model_dir))
    save_checkpoint(workdir, state)

    from eval.runner import evaluate_spec

    # seed 0: every run is scored on the same items, so scores differ by model, not by sample
    metrics = evaluate_spec(str(model_dir), cfg.eval, seed=0, threads=cfg.train.threads)
    stage_s["eval"] = time.monotonic() - t0 - stage_s["dataset"] - stage_s["train"]
    state.update(stage="evaluated")
    save_checkpoint(workdir, state)
    return {"metrics": metrics, "train": stats, "dataset_id": manifest.get("dataset_id", key),
            "extra": {"dataset_key": key, "dataset_built_here": built, "dataset_dir": str(data_dir),
                      "param_count": cfg.design.param_count, "params_total": stats.params,
                      "learning_rate": float(lr) if lr is not None else size.learning_rate,
                      "tokenizer": "shared" if tok_dir is not None else "per_run",
                      "probe": _probe_extra(manifest, stats.train_flops),
                      "measured": manifest.get("measured", {}),
                      "counts": manifest.get("counts", {}),
                      "llm": manifest.get("llm", {}),
                      "stage_s": {k: round(v, 2) for k, v in stage_s.items()},
                      "stages": {k: v.model_dump(mode="json") for k, v in trained.stages.items()},
                      "stage_plan": trained.plan}}
