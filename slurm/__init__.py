"""slurm: launch the run grid through submitit (SLURM, local processes or in-process debug).

Jobs never open the registry: each writes one result file (:mod:`grid.results`);
:func:`slurm.sync.sync` ingests them and reconciles run states with the scheduler.
Heavy modules (submitit, synth, train, eval) are imported lazily.
"""

__all__: list[str] = []
