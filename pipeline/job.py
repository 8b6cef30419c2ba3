"""The ``pipeline`` job kind: synth -> probes -> train -> eval for one run, resumable.

Stages (pinned interfaces 6, 7, 4, 5), each recorded in the run's checkpoint so a
requeued job skips what is done:

1. **dataset**: the recipe of the run (axis levels + ``[synth]`` settings + seed) is
   hashed; the dataset is built and probed once under ``<root>/datasets/<hash>`` and
   shared by every model size. Two jobs building the same dataset take an ``O_EXCL`` lock
   file (:mod:`slurm.locks`); the builder writes a temporary folder and renames it into place, so a
   reader sees a complete dataset or none. On SLURM a CPU-only array builds every dataset of a
   launch first (:func:`preparation`, run by :mod:`slurm.prepare`), so GPU jobs find them ready.
2. **train**: the configured ``[train].stages`` (:mod:`pipeline.training`: mid-training, SFT into
   ``workdir/model``, GRPO), each resuming from its own checkpoints after a requeue; the SFT set is
   tokenised once per dataset and tokenizer (:func:`train_cache_dir`).
3. **eval**: every kept checkpoint on the validation benchmark and the chosen one (and the last) on the test
   benchmarks (:mod:`eval.checkpoints`), or the final model on every benchmark (:mod:`eval.resumable`);
   through the experiment's token cache (:func:`eval_cache_dir`) when its runs share one tokenizer.

The heavy packages are imported inside the job, so a missing one fails that run (its
result says why), never the launcher.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grid.models import RunProbe, RunOutcome, RunSpec
from slurm.job import read_context, save_checkpoint
from toolscale.config import config_hash

if TYPE_CHECKING:
    from synth.models import Recipe
    from toolscale.config import ExperimentConfig

__all__ = ["run_pipeline", "prepare_dataset", "preparation", "DatasetJob", "train_options", "job_recipe",
           "dataset_key", "ensure_dataset", "ensure_tokenizer", "tokenizer_recipe", "recipe_for", "eval_cache_dir",
           "train_cache_dir", "COMPLETE_MARKER"]

COMPLETE_MARKER = ".complete"
"""File a finished dataset folder holds (written before the folder is renamed into place)."""


def dataset_key(recipe: dict[str, Any]) -> str:
    """Content hash of a recipe (seed included): ``ds-`` + 16 hex digits of SHA-256 of its sorted JSON."""
    text = json.dumps(recipe, sort_keys=True, separators=(",", ":"), default=str)
    return "ds-" + hashlib.sha256(text.encode()).hexdigest()[:16]


def ensure_dataset(cache: str | Path, key: str, build: Callable[[Path], None]) -> tuple[Path, bool]:
    """The dataset folder ``cache/key``, built by ``build(tmp_folder)`` if it is not there yet.

    Returns ``(folder, built_now)``. Concurrent callers with the same key, on any node, wait on an
    ``O_EXCL`` lock file (:func:`slurm.locks.exclusive`: no ``flock``, which Lustre and NFS without
    lockd refuse); exactly one builds. A failed build leaves no folder behind (its temp folder is
    removed), and a folder holding ``.complete`` is never removed: a builder that finds one in place
    when it finishes keeps it and drops its own copy.
    """
    from slurm.locks import exclusive

    cache = Path(cache)
    final = cache / key
    if (final / COMPLETE_MARKER).exists():
        return final, False
    with exclusive(cache / f".{key}.lock", what=f"the build lock of dataset {key}"):
        if (final / COMPLETE_MARKER).exists():
            return final, False
        tmp = cache / f".{key}.tmp-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        try:
            build(tmp)
            (tmp / COMPLETE_MARKER).write_text(key)
            if (final / COMPLETE_MARKER).exists():  # built meanwhile (a lock judged stale): keep that one
                return final, False
            if final.exists():  # an incomplete leftover of a killed builder
                shutil.rmtree(final)
            os.replace(tmp, final)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    return final, True


def recipe_for(cfg: Any, levels: dict[str, Any], seed: int) -> Any:
    """The recipe of axis ``levels`` with the config's ``[synth]`` settings, in the experiment's domain
    (:mod:`synth.domains`: a ``synth.models.Recipe`` or a ``synth.code.models.CodeRecipe``)."""
    from synth.domains import domain_of

    from pipeline.training import stage_axes

    knobs = {k: v for k, v in levels.items() if k not in stage_axes(cfg)}
    return domain_of(cfg).recipe(knobs, seed, cfg.synth)


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
        from synth.domains import domain_of
        from train.data import read_rows, render_corpus
        from train.tokenizer import train_tokenizer

        domain_of(cfg).build(recipe, folder / "corpus")
        tok = train_tokenizer(render_corpus(read_rows(folder / "corpus")), vocab)
        tok.save_pretrained(folder)
        shutil.rmtree(folder / "corpus")

    folder, _ = ensure_dataset(cache, key, build)
    return folder


def eval_cache_dir(cache: str | Path) -> Path:
    """The experiment's token cache folder (:mod:`eval.token_cache`) beside its datasets and tokenizer."""
    return Path(cache) / "eval-cache"


def train_cache_dir(cache: str | Path) -> Path:
    """The tokenised-dataset cache folder (:mod:`train.tokenized`) beside the datasets it tokenises."""
    return Path(cache) / "train-cache"


def _probe_summary(manifest: dict[str, Any], train_flops: float | None) -> RunProbe:
    """The run's :class:`grid.models.RunProbe` from its dataset's manifest (``probe`` section)."""
    probe = manifest.get("probe") or {}
    cost = probe.get("cost") or {}
    flops = cost.get("total_flops")
    return RunProbe(measured_groundedness=probe.get("measured_groundedness"),
                        symbolic_groundedness=probe.get("symbolic_groundedness"),
                        coverage=probe.get("coverage"), agreement=probe.get("agreement"),
                        probe_reliable=probe.get("probe_reliable"), kind=probe.get("kind"),
                        balanced_accuracy=(probe.get("calibration") or {}).get("balanced_accuracy"),
                        probe_flops=flops,
                        probe_cost_share=(flops / train_flops) if flops is not None and train_flops else None)


def job_recipe(run: RunSpec, cfg: ExperimentConfig) -> Recipe:
    """The run's recipe: its axis levels, the config's ``[synth]`` settings (the user's ``servers``
    included, so they are collected and executed live in the job) and the run's seed, in the experiment's
    domain (stage axes set training, not the recipe)."""
    return recipe_for(cfg, run.recipe, run.seed)


def prepare_dataset(run: RunSpec, cfg: ExperimentConfig, cache: str | Path) -> tuple[Path, str, bool]:
    """The run's dataset (synthesised and probed) in the shared cache: ``(folder, key, built_now)``.

    What both the CPU preparation array (:class:`DatasetJob`) and the pipeline job run; whoever comes first
    builds it, under the dataset's lock."""
    from synth.domains import domain_of

    recipe = job_recipe(run, cfg)
    key = dataset_key(recipe.identity())

    def build(folder: Path) -> None:
        from probes.measure import probe_dataset

        domain_of(cfg).build(recipe, folder)
        target = cfg.target_size  # the probe budget is a share of the run the data is for
        probe_dataset(folder, spec=cfg.probe, target_train_flops=target.planned_flops)

    folder, built = ensure_dataset(cache, key, build)
    return folder, key, built


def train_options(cfg: ExperimentConfig, size: Any) -> dict[str, Any]:
    """The ``train_sft`` options a job takes from ``[train]``: layout, wall-clock checkpoints, clean-up, dtype,
    and the job's stop requests (:func:`slurm.preemption.stop_requested`: a signal saves at the next step)."""
    from slurm.preemption import stop_requested

    dtype = cfg.train.save_dtype
    if dtype == "auto":
        dtype = "bfloat16" if size.pretrained else None
    every = cfg.train.checkpoint_every_min
    return {"train": cfg.train, "weight_decay": cfg.train.weight_decay, "schedule": cfg.train.schedule,
            "wsd_decay": cfg.train.wsd_decay, "checkpoint_every_s": None if every is None else every * 60.0,
            "keep_checkpoints": cfg.train.keep_checkpoints, "save_dtype": dtype, "should_stop": stop_requested}


class DatasetJob:
    """One CPU task of the preparation array: builds a run's dataset in the shared cache (and the shared
    tokenizer, when the experiment has one)."""

    def __init__(self, config: dict[str, Any], run: dict[str, Any], cache: str) -> None:
        self.config, self.run, self.cache = config, run, cache

    def __call__(self) -> str:
        from toolscale.config import ExperimentConfig

        cfg = ExperimentConfig.model_validate(self.config)
        folder, _, _ = prepare_dataset(RunSpec.model_validate(self.run), cfg, self.cache)
        if cfg.train.tokenizer == "shared" and any(not s.pretrained for s in cfg.ladder):
            ensure_tokenizer(cfg, self.cache)
        return str(folder)


def preparation(config: ExperimentConfig, runs: list[RunSpec], cache: str | Path) -> list[DatasetJob]:
    """The CPU tasks a SLURM launch of ``runs`` runs first (:data:`slurm.jobs.PREPARATIONS`): one
    :class:`DatasetJob` per dataset the runs need that is not complete in ``cache`` yet."""
    wanted: dict[str, RunSpec] = {}
    for run in runs:
        key = dataset_key(job_recipe(run, config).identity())
        if key not in wanted and not (Path(cache) / key / COMPLETE_MARKER).exists():
            wanted[key] = run
    cfg = config.model_dump(mode="json")
    return [DatasetJob(cfg, run.model_dump(mode="json"), str(cache)) for run in wanted.values()]


def checkpoints_kept(cfg: Any) -> int:
    """Checkpoints a run keeps and scores: ``[eval] checkpoints`` when there is a validation benchmark to choose
    among them, SFT trains the final model (no GRPO stage after it) and the transformers backend scores, else 0."""
    if cfg.eval.validation is None or "grpo" in cfg.train.stages or cfg.eval.backend != "transformers":
        return 0
    return int(cfg.eval.checkpoints)


def run_diagnostics(data_dir: Path, tokenizer: Any) -> Any:
    """The :class:`eval.diagnostics.Diagnostics` of a run: the tools its dataset used (manifest) and the unigram
    model of its training tokens (the assistant tokens it was trained on, under its tokenizer)."""
    from eval.diagnostics import Diagnostics, unigram_logprobs
    from train.data import read_rows, tokenize_rows

    manifest = json.loads((data_dir / "manifest.json").read_text(encoding="utf-8"))
    vocab = len(tokenizer)
    counts = [0] * vocab
    for ex in tokenize_rows(read_rows(data_dir), tokenizer, 1 << 20, seed=0)["examples"]:
        for t, m in zip(ex["input_ids"], ex["assistant_masks"]):
            if m and t < vocab:
                counts[t] += 1
    return Diagnostics(seen_tools=frozenset(manifest.get("tools") or []), unigram=unigram_logprobs(counts),
                       vocab_size=vocab)


def _evaluate(cfg: Any, model_dir: Path, keep: int, data_dir: Path | None, workdir: Path, run_name: str,
              should_stop: Any = None, cache_dir: Path | None = None) -> tuple[list[Any], dict[str, Any]]:
    """``(metric rows, checkpoint summary)``: every kept checkpoint scored by :func:`eval.checkpoints.evaluate_checkpoints`
    (one model load per checkpoint, the run's tokenizer loaded once), or the final model alone on every benchmark by
    :func:`eval.resumable.evaluate_run` (each benchmark's rows kept in ``workdir/eval``, so a requeued job scores
    only what is missing; any backend). ``cache_dir``: the experiment's token cache (:mod:`eval.token_cache`),
    so each benchmark item is encoded once for every run and checkpoint. Seed 0: every run is scored on the same
    items, so scores differ by model, not by sample."""
    from eval.resumable import evaluate_run
    from eval.runner import evaluate

    stats = json.loads((model_dir / "train_stats.json").read_text(encoding="utf-8")) if keep else {}
    snapshots = stats.get("snapshots") or []
    if not snapshots:
        return evaluate_run(model_dir, cfg.eval, Path(workdir) / "eval", run_name=run_name, seed=0,
                            threads=cfg.train.threads, should_stop=should_stop, cache_dir=cache_dir), {}
    from eval.backends import TransformersBackend, get_backend
    from eval.checkpoints import evaluate_checkpoints

    loaded: dict[str, Any] = {}
    diag: list[Any] = []
    tokenizer = TransformersBackend._load_tokenizer(str(model_dir))  # every snapshot holds the run's tokenizer

    def score(path: str, bench: str, *, diagnostics: bool = False, **kw: Any) -> list[Any]:
        if path not in loaded:
            loaded.clear()  # one model in memory at a time
            loaded[path] = get_backend("transformers", path, threads=cfg.train.threads, tokenizer_obj=tokenizer,
                                       cache_dir=cache_dir)
        if diagnostics and data_dir is not None and not diag:
            diag.append(run_diagnostics(data_dir, loaded[path].tokenizer))
        return evaluate(path, bench, seed=0, backend=loaded[path], diagnostics=diag[0] if diagnostics and diag else None,
                        **kw)

    return evaluate_checkpoints(snapshots, cfg.eval, score=score)


def run_pipeline(run: RunSpec, workdir: Path, checkpoint: dict[str, Any] | None) -> RunOutcome:
    """Build (or reuse) the run's dataset, train, evaluate; returns the run's outcome (see :mod:`slurm.jobs`)."""
    from slurm.preemption import check_stop
    from toolscale.config import ExperimentConfig

    ctx = read_context(workdir)
    cfg = ExperimentConfig.model_validate(ctx["config"])
    if cfg.executor.offline:  # compute nodes cannot reach the hub: never try (preflight checked the folders)
        os.environ["HF_HUB_OFFLINE"] = os.environ["TRANSFORMERS_OFFLINE"] = "1"
    state = dict(checkpoint or {})
    sizes = {s.name: s for s in cfg.ladder}
    if run.model_size not in sizes:
        raise KeyError(f"model size {run.model_size!r} is not in the config's ladder ({', '.join(sizes)})")
    size = sizes[run.model_size]
    from pipeline.training import train_stages

    t0 = time.monotonic()
    data_dir, key, built = prepare_dataset(run, cfg, ctx["dataset_cache"])
    stage_s = {"dataset": time.monotonic() - t0}
    state.update(stage="dataset", dataset=str(data_dir))
    save_checkpoint(workdir, state)
    manifest = json.loads((data_dir / "manifest.json").read_text(encoding="utf-8"))

    steps = int(run.metadata.get("max_steps", size.max_steps))  # the design's steps (token multiples)
    lr = run.metadata.get("learning_rate")  # set by the learning-rate scan's rule, when the design used one
    tok_dir = None
    if cfg.train.tokenizer == "shared" and not size.pretrained:
        tok_dir = ensure_tokenizer(cfg, ctx["dataset_cache"])
    check_stop("training")
    keep = checkpoints_kept(cfg)
    trained = train_stages(cfg, size, run, data_dir, Path(workdir), steps=steps, cache=Path(ctx["dataset_cache"]),
                           tokenizer_dir=tok_dir,
                           learning_rate=float(lr) if lr is not None else None, max_epochs=cfg.train.max_epochs,
                           label=run.run_id, snapshots=keep, snapshot_spacing=cfg.eval.checkpoint_spacing,
                           cache_dir=train_cache_dir(ctx["dataset_cache"]),
                           **train_options(cfg, size))
    stats, model_dir = trained.total, trained.model_dir
    stage_s["train"] = time.monotonic() - t0 - stage_s["dataset"]
    state.update(stage="trained", model=str(model_dir))
    save_checkpoint(workdir, state)

    if int(os.environ.get("RANK", "0") or 0) != 0:  # one process per GPU: rank 0 alone evaluates and reports
        return RunOutcome(metrics=[], train=stats, dataset_id=key)
    # with the experiment's shared tokenizer every run encodes the same items the same way: one token cache for all
    cache = eval_cache_dir(ctx["dataset_cache"]) if tok_dir is not None else None
    metrics, ckpt_summary = _evaluate(cfg, model_dir, keep, data_dir, Path(workdir), run.run_id, check_stop, cache)
    stage_s["eval"] = time.monotonic() - t0 - stage_s["dataset"] - stage_s["train"]
    state.update(stage="evaluated")
    save_checkpoint(workdir, state)
    return RunOutcome(
        metrics=metrics, train=stats, dataset_id=manifest.get("dataset_id", key),
        probe=_probe_summary(manifest, stats.train_flops),
        extra={"dataset_key": key, "dataset_built_here": built, "dataset_dir": str(data_dir),
               "config_hash": config_hash(ctx["config"]),
               "param_count": cfg.design.param_count, "params_total": stats.params,
               "learning_rate": float(lr) if lr is not None else size.learning_rate,
               "tokenizer": "shared" if tok_dir is not None else "per_run",
               "measured": manifest.get("measured", {}),
               "counts": manifest.get("counts", {}),
               "llm": manifest.get("llm", {}),
               "stage_s": {k: round(v, 2) for k, v in stage_s.items()},
               **({"checkpoints": ckpt_summary} if ckpt_summary else {}),
               "stages": {k: v.model_dump(mode="json") for k, v in trained.stages.items()},
               "stage_plan": trained.plan})
