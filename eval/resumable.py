"""Evaluation inside a cluster job: per-benchmark results saved as they finish, resumed after a requeue.

:func:`evaluate_run` scores one trained model on every benchmark of ``[eval]``. Each benchmark's metric rows are
written to ``out_dir/<benchmark>.json`` (atomically) as soon as it is done, tagged with what produced them (the
model's ``train_stats.json`` digest, the ``[eval]`` settings, the seed); a requeued or retried job finds them and
only scores what is missing. Between benchmarks it asks ``should_stop`` (the job's stop request) and stops there.

Backends: ``vllm-server`` starts ``vllm serve`` on the job's GPUs (:class:`eval.vllm_server.VLLMServer`) only if
something is left to score, and generates and scores through it; ``transformers`` runs on CUDA when there is a
device (else the CPU); ``openai`` and ``vllm`` as configured.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from eval.runner import evaluate
from grid.models import MetricResult

__all__ = ["evaluate_run", "partial_identity", "saved_rows"]


def partial_identity(model_dir: str | Path, spec: Any, seed: int) -> dict[str, Any]:
    """What a saved benchmark result must match to be reused: model (its train_stats digest), settings, seed."""
    stats = Path(model_dir) / "train_stats.json"
    digest = hashlib.sha256(stats.read_bytes()).hexdigest()[:16] if stats.is_file() else None
    keep = {k: v for k, v in spec.model_dump(mode="json").items() if k in ("limit", "generate_limit", "backend")}
    return {"model": str(model_dir), "train_stats": digest, "eval": keep, "seed": seed}


def saved_rows(path: Path, identity: dict[str, Any]) -> list[MetricResult] | None:
    """The metric rows saved at ``path`` for ``identity``, or None (missing, unreadable, or made otherwise)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("identity") != identity:
        return None
    try:
        return [MetricResult.model_validate(r) for r in data.get("rows", [])]
    except ValueError:
        return None


def _save(path: Path, identity: dict[str, Any], rows: list[MetricResult]) -> None:
    from toolscale.files import atomic_write_json

    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(path, {"identity": identity, "rows": [r.model_dump(mode="json") for r in rows]})


def _backend(spec: Any, model_dir: str, run_name: str, threads: int | None) -> Any:
    from eval.backends import get_backend

    if spec.backend == "transformers":
        import torch

        return get_backend("transformers", model_dir, threads=threads,
                           device="cuda" if torch.cuda.is_available() else "cpu")
    if spec.backend == "openai":
        return get_backend("openai", "auto", endpoint=spec.endpoint)  # the served model, not a folder path
    return get_backend(spec.backend, model_dir)


def evaluate_run(model_dir: str | Path, spec: Any, out_dir: str | Path, *, run_name: str, seed: int = 0,
                 threads: int | None = None, should_stop: Callable[[str], None] | None = None,
                 log: str | Path | None = None) -> list[MetricResult]:
    """Every benchmark of ``spec`` (:class:`toolscale.config.EvalSpec`) for one model, resumable (module docstring).

    Parameters
    ----------
    model_dir : the trained model folder.
    spec : the ``[eval]`` section.
    out_dir : where per-benchmark results are kept (``workdir/eval``).
    run_name : the served model name for ``vllm-server`` (the run id).
    seed : item-selection seed (the same for every run of a fit).
    threads : torch CPU threads for the ``transformers`` backend.
    should_stop : called with the next benchmark's name before it starts; raises to stop there.
    log : the vLLM server's log file (default ``out_dir/vllm.log``).
    """
    out = Path(out_dir)
    identity = partial_identity(model_dir, spec, seed)
    done = {name: saved_rows(out / f"{name}.json", identity) for name in spec.benchmarks}
    todo = [name for name, rows in done.items() if rows is None]
    if todo:
        with _serving(spec, model_dir, run_name, log or out / "vllm.log", threads) as backend:
            for name in todo:
                if should_stop is not None:
                    should_stop(f"benchmark {name}")
                rows = evaluate(str(model_dir), name, limit=spec.limit, seed=seed, backend=backend,
                                generate_limit=spec.generate_limit)
                _save(out / f"{name}.json", identity, rows)
                done[name] = rows
    return [r for name in spec.benchmarks for r in done[name] or []]


class _serving:
    """The backend for ``spec``, with a vLLM server around it for ``vllm-server`` (a context manager)."""

    def __init__(self, spec: Any, model_dir: str | Path, run_name: str, log: str | Path, threads: int | None):
        self.spec, self.model_dir, self.run_name, self.log, self.threads = spec, str(model_dir), run_name, log, threads
        self.server: Any = None
        self.backend: Any = None

    def __enter__(self) -> Any:
        if self.spec.backend != "vllm-server":
            self.backend = _backend(self.spec, self.model_dir, self.run_name, self.threads)
            return self.backend
        from eval.vllm_server import VLLMServer, VLLMServerBackend

        endpoint = self.spec.endpoint
        if self.spec.vllm:
            self.server = VLLMServer(self.spec.vllm, self.model_dir, self.run_name, args=self.spec.vllm_args,
                                     log=self.log, startup_s=self.spec.vllm_startup_s).__enter__()
            endpoint = self.server.endpoint
        self.backend = VLLMServerBackend(self.run_name, endpoint=endpoint, tokenizer_dir=self.model_dir,
                                         concurrency=self.spec.concurrency)
        return self.backend

    def __exit__(self, *exc: Any) -> None:
        close = getattr(self.backend, "close", None)
        if close is not None:
            close()
        if self.server is not None:
            self.server.__exit__(*exc)
