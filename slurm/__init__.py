"""slurm: launch the run grid through submitit (SLURM, local processes or in-process debug).

Jobs never open the registry: each writes one result file (:mod:`grid.results`);
:func:`slurm.sync.sync` ingests them and reconciles run states with the scheduler.
submitit is imported lazily; the job itself (:mod:`pipeline.job`) is named by reference, not imported.
"""

__all__: list[str] = []
