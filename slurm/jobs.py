"""The registry of job kinds: what a job runs for its run spec.

A job kind is ``fn(run: RunSpec, workdir: Path, checkpoint: dict | None) -> outcome``
where the outcome is a :class:`grid.models.RunOutcome` (what the ``pipeline`` kind returns: its
``probe`` is stored as ``extra["probe"]``), a :class:`grid.models.RunResult`, or, for user kinds, a
dict with any of ``metrics`` (list of MetricResult or dicts), ``train`` (TrainStats or dict),
``dataset_id`` and ``extra``. Raising marks the run failed (the traceback tail is stored).
``checkpoint`` is the last state the job saved with :func:`slurm.job.save_checkpoint`
before it was preempted or timed out (None on a fresh start).

Kinds register by name, either as a callable or lazily as ``"module:attr"``. Jobs run in
other processes, so a kind travels as a *reference*: ``"module:attr"`` for the project's
own packages, else ``"/path/to/file.py:attr"`` (test kinds, user scripts; the file must be
readable where the job runs).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from slurm.errors import UnknownJobKindError

__all__ = ["JOB_KINDS", "PREPARATIONS", "register_job_kind", "get_job_kind", "job_kind_ref", "resolve_ref"]

JobFn = Callable[..., Any]

_PROJECT_PACKAGES = frozenset({"toolscale", "synth", "probes", "grid", "fit", "allocator", "train", "eval", "slurm",
                                "pipeline"})
"""Packages every job process can import by name; other callables travel by file path."""

JOB_KINDS: dict[str, JobFn | str] = {"pipeline": "pipeline.job:run_pipeline"}

PREPARATIONS: dict[str, str] = {"pipeline": "pipeline.job:preparation"}
"""Job kind -> ``"module:attr"`` of its preparation: ``prepare(config, runs, cache) -> [callable, ...]``, CPU
tasks a SLURM launch runs as one array before the kind's GPU arrays (:mod:`slurm.prepare`)."""
"""Registered job kinds (name -> callable or ``"module:attr"``)."""


def register_job_kind(name: str, fn: JobFn | str) -> None:
    """Register (or replace) the job kind ``name``."""
    if not name or not isinstance(name, str):
        raise UnknownJobKindError(f"job kind name must be a non-empty string, got {name!r}")
    JOB_KINDS[name] = fn


def get_job_kind(name: str) -> JobFn:
    """The callable of job kind ``name`` (lazy ones are imported now)."""
    return resolve_ref(job_kind_ref(name))


def job_kind_ref(name: str) -> str:
    """A reference to kind ``name`` that another process can resolve with :func:`resolve_ref`."""
    if name not in JOB_KINDS:
        raise UnknownJobKindError(f"unknown job kind {name!r}; known: {', '.join(sorted(JOB_KINDS))}")
    target = JOB_KINDS[name]
    if isinstance(target, str):
        return target
    module = getattr(target, "__module__", None)
    qualname = getattr(target, "__qualname__", "")
    if "<locals>" in qualname or not qualname:
        raise UnknownJobKindError(f"job kind {name!r} must be a module-level function, got {target!r}")
    if module and module.split(".")[0] in _PROJECT_PACKAGES:
        return f"{module}:{qualname}"
    source = inspect.getsourcefile(target)
    if not source:
        raise UnknownJobKindError(f"job kind {name!r}: cannot find the source file of {target!r}")
    return f"{Path(source).resolve()}:{qualname}"


def resolve_ref(ref: str) -> JobFn:
    """Import ``"module:attr"`` or load ``"/file.py:attr"``; returns the callable."""
    where, _, attr = ref.rpartition(":")
    if not where or not attr:
        raise UnknownJobKindError(f"job kind reference must be 'module:attr' or '/file.py:attr', got {ref!r}")
    if where.endswith(".py"):
        mod_name = "_toolscale_jobkind_" + Path(where).stem
        module = sys.modules.get(mod_name)
        if module is None or getattr(module, "__file__", None) != where:
            spec = importlib.util.spec_from_file_location(mod_name, where)
            if spec is None or spec.loader is None:
                raise UnknownJobKindError(f"cannot load job kind file {where}")
            module = importlib.util.module_from_spec(spec)
            sys.modules[mod_name] = module
            spec.loader.exec_module(module)
    else:
        module = importlib.import_module(where)
    obj: Any = module
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj
