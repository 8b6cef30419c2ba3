"""pipeline: the composition floor, where the stage packages meet.

- :mod:`pipeline.job`: one run's compute job (config -> recipe -> dataset -> probe -> training
  stages -> evaluation), the job kind ``pipeline`` that :mod:`slurm` runs;
- :mod:`pipeline.training`: the training stages of a run (mid-training, SFT, GRPO at equal FLOPs);
- :mod:`pipeline.lr_scan`: the learning-rate scan over the ladder's widths (``toolscale lr-scan``);
- :mod:`pipeline.preflight`: the checks a cluster config passes before anything is submitted;
- :mod:`pipeline.allocate`: allocate's registry edge (one :class:`allocator.models.AllocationQuery` -> the stored
  fit -> the solver -> :class:`allocator.models.AllocationReport`), for ``allocate``, ``verify`` and the MCP tools;
- :mod:`pipeline.next_runs`: ``toolscale next``'s registry edge (the runs that settle an allocation);
- :mod:`pipeline.fit`: fit's registry edge (runs read, fitted as one :class:`fit.models.FitRequest` asks, stored;
  a stored fit as ``fit --json`` reports it).

The stage packages (synth, probes, train, eval) and the science packages (grid, fit, allocator)
never import this floor; :mod:`slurm` only names the job kind by reference. The CLI and the MCP
server are the roof above it.
"""

from toolscale.exports import lazy_exports

_EXPORTS: dict[str, str] = {
    "run_pipeline": "pipeline.job",
    "prepare_dataset": "pipeline.job",
    "train_stages": "pipeline.training",
    "run_lr_scan": "pipeline.lr_scan",
    "read_scan": "pipeline.lr_scan",
    "login_checks": "pipeline.preflight",
    "node_checks": "pipeline.preflight",
    "plan_allocation": "pipeline.allocate",
    "equal_spend_plan": "pipeline.allocate",
    "propose_next_runs": "pipeline.next_runs",
    "stored_summary": "pipeline.fit",
    "load_runs": "pipeline.fit",
    "fit_loaded": "pipeline.fit",
    "store_fit": "pipeline.fit",
}
"""Public names and the modules that define them."""

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
