"""slurm: launch the run grid through submitit (SLURM, local processes or in-process debug).

Jobs never open the registry: each writes one result file (:mod:`grid.results`);
:func:`slurm.sync.sync` ingests them and reconciles run states with the scheduler.
submitit is imported lazily; the job itself (:mod:`pipeline.job`) is named by reference, not imported.
"""

from toolscale.exports import lazy_exports

_EXPORTS: dict[str, str] = {
    "launch": "slurm.launcher",
    "preview": "slurm.launcher",
    "cancel": "slurm.launcher",
    "sync": "slurm.sync",
    "wait": "slurm.sync",
}
"""Public names and the modules that define them (the executor's surface for the CLI and the composition)."""

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
