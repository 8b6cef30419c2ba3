"""slurm: launch the run grid through submitit (SLURM, local processes or in-process debug).

Jobs never open the registry: each writes one result file (:mod:`grid.results`);
:func:`slurm.sync.sync` ingests them and reconciles run states with the scheduler.
submitit is imported lazily; the job itself (:mod:`pipeline.job`) is named by reference, not imported.
"""

_EXPORTS: dict[str, str] = {
    "launch": "slurm.launcher",
    "preview": "slurm.launcher",
    "cancel": "slurm.launcher",
    "sync": "slurm.sync",
    "wait": "slurm.sync",
}
"""Public names and the modules that define them (the executor's surface for the CLI and the composition)."""

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    """Load a public name from its module on first use (PEP 562), so that importing the package stays cheap."""
    if name in _EXPORTS:
        import importlib

        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
