"""``toolscale preflight``: check a cluster config before anything is spent on it.

Two halves. :func:`login_checks` runs where ``toolscale`` is typed: every ``pretrained`` model is a local
folder when compute nodes are offline; its chat template puts loss on assistant tokens (TRL's training variant
where the model's own has no ``{% generation %}`` markers); each rung's global batch splits over its GPUs;
the design's storage estimate fits the quota (or the free space); lock files and renames work in the runs
folder; the vLLM environment exists. :func:`node_checks` runs as one tiny job per rung, with the rung's own
resources (one task per GPU): the runs folder, repo and venv are visible from the node (a token the login
side wrote), the torch build sees CUDA and bf16 with the rung's GPU count, one training step runs with the
rung's layout (and its checkpoint is written), and one evaluation step runs with the configured backend.

A failed check is one line naming the value and what to change; ``preflight`` exits 2 when any fails.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from slurm.models import PreflightCheck, PreflightReport
from toolscale.config import ExperimentConfig, ModelSize

__all__ = ["login_checks", "node_checks", "template_checks", "launch_checks", "run_preflight", "PreflightJob",
           "fs_type"]


def _check(name: str, status: str, detail: str, *, rung: str | None = None, where: str = "login",
           seconds: float | None = None) -> PreflightCheck:
    return PreflightCheck(name=name, status=status, detail=detail, rung=rung, where=where,
                          seconds=None if seconds is None else round(seconds, 3))


def fs_type(path: str | Path) -> str:
    """File-system type of the mount holding ``path`` (``/proc/mounts``), or ``unknown``."""
    target = os.path.realpath(path)
    best, kind = "", "unknown"
    try:
        lines = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return kind
    for line in lines:
        parts = line.split()
        if len(parts) >= 3 and (target == parts[1] or target.startswith(parts[1].rstrip("/") + "/")) \
                and len(parts[1]) > len(best):
            best, kind = parts[1], parts[2]
    return kind


def _offline(cfg: ExperimentConfig, env: Mapping[str, str]) -> bool:
    return cfg.executor.offline or env.get("HF_HUB_OFFLINE", "") in ("1", "true", "TRUE")


def template_checks(cfg: ExperimentConfig, env: Mapping[str, str] | None = None) -> list[PreflightCheck]:
    """Per pretrained rung: its model is local when nodes are offline, and its chat template gives loss tokens.

    What ``launch`` also runs before it submits anything."""
    from train.templates import TemplateError, check_loss_tokens, prepare_tokenizer
    from train.tokenizer import load_tokenizer

    env = os.environ if env is None else env
    out = []
    for size in cfg.ladder:
        if not size.pretrained:
            continue
        local = Path(size.pretrained).expanduser()
        if not local.is_dir():
            if _offline(cfg, env):
                out.append(_check("model path", "fail", f"{size.pretrained!r} is not a local folder and compute "
                                  "nodes are offline (executor.offline / HF_HUB_OFFLINE=1): download it to a shared "
                                  "folder and set pretrained to that path", rung=size.name))
            else:
                out.append(_check("model path", "warn", f"{size.pretrained!r} is a hub id: every job downloads it; "
                                  "a local folder on shared storage is faster and works offline", rung=size.name))
            continue
        out.append(_check("model path", "ok", f"local folder {str(local)!r}", rung=size.name))
        try:
            tok = load_tokenizer(local)
            name = prepare_tokenizer(tok, source=repr(size.pretrained))
            n = check_loss_tokens(tok, max_len=size.max_seq_len, source=repr(size.pretrained))
        except (TemplateError, Exception) as err:  # noqa: BLE001 - any load failure is this rung's one line
            out.append(_check("chat template", "fail", str(err).splitlines()[0], rung=size.name))
            continue
        out.append(_check("chat template", "ok", f"{'the model' + chr(39) + 's own' if name == 'own' else name}: "
                          f"{n} loss tokens on the sample conversation", rung=size.name))
    return out


def _layout_checks(cfg: ExperimentConfig) -> list[PreflightCheck]:
    from toolscale.errors import UsageError
    from train.distributed import accumulation

    out = []
    for size in cfg.ladder:
        try:
            micro, accum = accumulation(size.batch_size, max(1, size.gpus), size.micro_batch_size)
        except UsageError as err:
            out.append(_check("batch layout", "fail", f"{err}", rung=size.name))
            continue
        out.append(_check("batch layout", "ok", f"{size.batch_size} sequences per step = {max(1, size.gpus)} "
                          f"process(es) x {micro} x {accum} accumulation", rung=size.name))
    return out


def _storage_check(cfg: ExperimentConfig) -> PreflightCheck:
    from grid.design import build_design
    from grid.storage import storage_estimate

    from toolscale.errors import ToolscaleError

    try:
        est = storage_estimate(cfg, build_design(cfg).runs)
    except ToolscaleError as err:
        return _check("storage", "fail", f"the design cannot be built to estimate storage: {err}")
    root = Path(cfg.executor.folder).expanduser()
    probe = next((p for p in (root, *root.parents) if p.exists()), Path("/"))
    free = shutil.disk_usage(probe).free / 1e9
    limit, what = (cfg.executor.storage_quota_gb, "executor.storage_quota_gb") \
        if cfg.executor.storage_quota_gb is not None else (free, f"the free space under {str(probe)!r}")
    detail = (f"storage estimate {est.total_gb:,.1f} GB (models {est.final_models_gb:,.1f}, checkpoints "
              f"{est.checkpoints_gb:,.1f}, datasets {est.datasets_gb:,.1f})")
    if est.total_gb > limit:
        return _check("storage", "fail", f"{detail} exceeds {what} = {limit:,.1f} GB; lower executor.max_parallel, "
                      "keep fewer checkpoints or raise the quota")
    return _check("storage", "ok", f"{detail} within {what} = {limit:,.1f} GB")


def _fs_checks(cfg: ExperimentConfig) -> list[PreflightCheck]:
    import toolscale

    root = Path(cfg.executor.folder).expanduser().resolve()
    out = []
    for label, path in (("repo", Path(toolscale.__file__).resolve().parents[1]), ("venv", Path(sys.prefix)),
                        ("runs folder", root)):
        kind = fs_type(path if path.exists() else path.parent)
        local = kind in ("tmpfs", "ramfs") or str(path).startswith("/tmp/")
        status = "warn" if local and cfg.executor.kind == "slurm" else "ok"
        out.append(_check("shared filesystem", status, f"{label} {str(path)!r} on {kind}"
                          + (" (node-local: compute nodes will not see it)" if status == "warn" else "")))
    root.mkdir(parents=True, exist_ok=True)
    lock, moved = root / f".preflight-{uuid.uuid4().hex[:8]}.lock", None
    try:
        fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        os.close(fd)
        moved = lock.with_suffix(".moved")
        os.replace(lock, moved)
        out.append(_check("lock files", "ok", f"O_EXCL create and rename work in {str(root)!r}"))
    except OSError as err:
        out.append(_check("lock files", "fail", f"O_EXCL create or rename failed in {str(root)!r}: {err}"))
    finally:
        for p in (lock, moved):
            if p is not None and p.exists():
                p.unlink()
    return out


def login_checks(cfg: ExperimentConfig, env: Mapping[str, str] | None = None) -> list[PreflightCheck]:
    """Every check that needs no compute node (see the module docstring)."""
    out = template_checks(cfg, env) + _layout_checks(cfg) + [_storage_check(cfg)] + _fs_checks(cfg)
    if cfg.eval.backend == "vllm-server" and cfg.eval.vllm:
        from eval.vllm_server import vllm_executable
        from toolscale.errors import UsageError

        try:
            out.append(_check("vllm", "ok", f"vllm serve from {str(vllm_executable(cfg.eval.vllm))!r}"))
        except UsageError as err:
            out.append(_check("vllm", "fail", str(err)))
    return out


def _device_check(size: ModelSize) -> PreflightCheck:
    import torch

    if size.gpus == 0:
        return _check("torch/CUDA", "skip", f"CPU rung; torch {torch.__version__}", rung=size.name, where="node")
    if torch.version.cuda is None or not torch.cuda.is_available():
        why = "a CPU build of torch" if torch.version.cuda is None else "no CUDA device visible"
        return _check("torch/CUDA", "fail", f"torch {torch.__version__} is {why}; the rung asks for {size.gpus} "
                      "GPU(s): install a CUDA build in the venv", rung=size.name, where="node")
    n, bf16 = torch.cuda.device_count(), torch.cuda.is_bf16_supported()
    status = "ok" if n >= size.gpus and bf16 else "fail"
    return _check("torch/CUDA", status, f"torch {torch.__version__} CUDA {torch.version.cuda}: {n} device(s) "
                  f"({torch.cuda.get_device_name(0)}), bf16 {'yes' if bf16 else 'no'}; the rung asks for {size.gpus}",
                  rung=size.name, where="node")


def node_checks(cfg: ExperimentConfig, rung: str, token: str | Path, workdir: str | Path) -> list[PreflightCheck]:
    """The checks one preflight job runs on a compute node for ``rung`` (see the module docstring)."""
    import toolscale

    size = cfg.model_size(rung)
    work = Path(workdir)
    seen = Path(token).is_file() and Path(token).read_text().strip() == Path(token).name
    out = [_check("shared filesystem", "ok" if seen else "fail",
                  f"the login node's token {str(token)!r} is {'visible' if seen else 'NOT visible'} here; repo "
                  f"{str(Path(toolscale.__file__).resolve().parents[1])!r}, venv {sys.prefix!r}",
                  rung=rung, where="node"), _device_check(size)]
    if out[-1].status == "fail":
        return out
    out.append(_train_step(cfg, size, work))
    if out[-1].status == "ok" and int(os.environ.get("RANK", "0") or 0) == 0:  # one process evaluates
        out.append(_eval_step(cfg, size, work / "model"))
    return out


def _train_step(cfg: ExperimentConfig, size: ModelSize, work: Path) -> PreflightCheck:
    from pipeline.job import train_options
    from train.sft import train_sft
    from train.templates import SAMPLE_ROWS

    data = work / "data"
    data.mkdir(parents=True, exist_ok=True)
    (data / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in SAMPLE_ROWS * 8), encoding="utf-8")
    options = {**train_options(cfg, size), "keep_checkpoints": True}
    t0 = time.monotonic()
    try:
        stats = train_sft(data, size, work / "model", max_steps=2, save_steps=1, resume=False,
                          threads=cfg.train.threads, label=f"preflight-{size.name}", **options)
    except Exception as err:  # noqa: BLE001 - reported as this check's line
        return _check("train step", "fail", f"{type(err).__name__}: {str(err).splitlines()[0][:300]}",
                      rung=size.name, where="node", seconds=time.monotonic() - t0)
    peak = ""
    import torch

    if torch.cuda.is_available():
        peak = f", peak GPU memory {torch.cuda.max_memory_allocated() / 2**30:.1f} GiB"
    ckpt = sum(f.stat().st_size for f in (work / "model" / "checkpoints").rglob("*") if f.is_file()) / 1e9
    return _check("train step", "ok", f"2 steps ({stats.train_tokens:,.0f} tokens) with the rung's layout{peak}; "
                  f"checkpoints {ckpt:.3g} GB written", rung=size.name, where="node", seconds=time.monotonic() - t0)


def _eval_step(cfg: ExperimentConfig, size: ModelSize, model_dir: Path) -> PreflightCheck:
    from eval.resumable import evaluate_run

    spec = cfg.eval.model_copy(update={"benchmarks": cfg.eval.benchmarks[:1], "limit": 2, "generate_limit": 1})
    t0 = time.monotonic()
    try:
        rows = evaluate_run(model_dir, spec, model_dir.parent / "eval", run_name=f"preflight-{size.name}",
                            threads=cfg.train.threads)
    except Exception as err:  # noqa: BLE001 - reported as this check's line
        return _check("eval step", "fail", f"{type(err).__name__}: {str(err).splitlines()[0][:300]}",
                      rung=size.name, where="node", seconds=time.monotonic() - t0)
    metrics = sorted({m.metric for m in rows})
    return _check("eval step", "ok", f"{spec.benchmarks[0]} on 2 items with backend {spec.backend}: "
                  f"{', '.join(metrics)}", rung=size.name, where="node", seconds=time.monotonic() - t0)


class PreflightJob:
    """The submitit callable of one rung's preflight job: runs :func:`node_checks`, writes them as JSON."""

    def __init__(self, config: dict[str, Any], rung: str, token: str, out: str, workdir: str) -> None:
        self.config, self.rung, self.token, self.out, self.workdir = config, rung, token, out, workdir

    def __call__(self) -> str:
        from slurm.job import export_distributed
        from toolscale.files import atomic_write_json

        rank = export_distributed()
        cfg = ExperimentConfig.model_validate(self.config)
        if cfg.executor.offline:
            os.environ["HF_HUB_OFFLINE"] = "1"
        checks = node_checks(cfg, self.rung, self.token, self.workdir)
        if rank == 0:
            atomic_write_json(Path(self.out), [c.model_dump(mode="json") for c in checks])
        return self.out


def run_preflight(cfg: ExperimentConfig, *, executor: str | None = None, sizes: list[str] | None = None,
                  jobs: bool = True, timeout_s: float = 3600.0,
                  progress: Callable[[str], None] | None = None) -> PreflightReport:
    """Login checks, then (``jobs``) one node job per rung on ``executor`` (default the config's); the report."""
    checks = login_checks(cfg)
    if jobs and not any(c.status == "fail" for c in checks):
        checks += _node_jobs(cfg, executor or cfg.executor.kind, sizes or [s.name for s in cfg.ladder], timeout_s,
                             progress)
    return PreflightReport(experiment=cfg.experiment.name, ok=not any(c.status == "fail" for c in checks),
                           checks=checks)


def _node_jobs(cfg: ExperimentConfig, executor: str, sizes: list[str], timeout_s: float,
               progress: Callable[[str], None] | None) -> list[PreflightCheck]:
    import submitit

    from slurm.resources import executor_parameters

    root = Path(cfg.executor.folder).expanduser().resolve() / "preflight" / uuid.uuid4().hex[:8]
    root.mkdir(parents=True, exist_ok=True)
    token = root / "token"
    token.write_text(token.name)
    cfg_json = cfg.model_dump(mode="json")
    waiting = []
    for name in sizes:
        size = cfg.model_size(name)
        ex = submitit.AutoExecutor(folder=root / "submitit", cluster=executor)
        params = executor_parameters(size, cfg.executor.slurm, max_parallel=1, job_name=f"ts-preflight-{name}"[:60],
                                     signal_delay_s=cfg.executor.signal_delay_s, requeue=False)
        ex.update_parameters(**params)
        out = root / f"{name}.json"
        job = ex.submit(PreflightJob(cfg_json, name, str(token), str(out), str(root / name)))
        if progress:
            progress(f"preflight job {job.job_id} for {name} submitted ({executor})")
        waiting.append((name, job, out))
    found: list[PreflightCheck] = []
    deadline = time.monotonic() + timeout_s
    for name, job, out in waiting:
        while not out.exists() and not job.done() and time.monotonic() < deadline:
            time.sleep(2)
        if out.exists():
            found += [PreflightCheck.model_validate(c) for c in json.loads(out.read_text())]
        else:
            why = "did not finish in time" if not job.done() else f"ended without a report ({job.state})"
            tail = ""
            try:
                tail = (job.stderr() or "").strip().splitlines()[-1]
            except Exception:  # noqa: BLE001 - the log may not exist yet
                pass
            found.append(_check("node job", "fail", f"preflight job {job.job_id} {why}" + (f": {tail}" if tail else ""),
                                rung=name, where="node"))
    return found


def launch_checks(cfg: ExperimentConfig) -> None:
    """What ``launch`` refuses before it submits anything: a pretrained model that is not local on an offline
    cluster, a chat template without assistant masks, and (when a quota is set) a storage estimate over it.

    Raises :class:`~toolscale.errors.UsageError` with the first failed check's line."""
    from toolscale.errors import UsageError

    checks = template_checks(cfg)
    if cfg.executor.storage_quota_gb is not None:
        checks.append(_storage_check(cfg))
    failed = [c for c in checks if c.status == "fail"]
    if failed:
        c = failed[0]
        raise UsageError(f"{c.name}" + (f" of model size {c.rung!r}" if c.rung else "") + f": {c.detail} "
                         "(`toolscale preflight --config ...` lists every check)")
