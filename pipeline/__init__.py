"""pipeline: the composition floor, where the stage packages meet.

- :mod:`pipeline.job`: one run's compute job (config -> recipe -> dataset -> probe -> training
  stages -> evaluation), the job kind ``pipeline`` that :mod:`slurm` runs;
- :mod:`pipeline.training`: the training stages of a run (mid-training, SFT, GRPO at equal FLOPs);
- :mod:`pipeline.lr_scan`: the learning-rate scan over the ladder's widths (``toolscale lr-scan``).

The stage packages (synth, probes, train, eval) and the science packages (grid, fit, allocator)
never import this floor; :mod:`slurm` only names the job kind by reference. The CLI and the MCP
server are the roof above it.
"""

__all__ = ["job", "lr_scan", "training"]
