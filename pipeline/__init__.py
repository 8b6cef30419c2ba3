"""pipeline: the composition floor, where the stage packages meet.

- :mod:`pipeline.job`: one run's compute job (config -> recipe -> dataset -> probe -> training
  stages -> evaluation), the job kind ``pipeline`` that :mod:`slurm` runs;
- :mod:`pipeline.training`: the training stages of a run (mid-training, SFT, GRPO at equal FLOPs);
- :mod:`pipeline.lr_scan`: the learning-rate scan over the ladder's widths (``toolscale lr-scan``);
- :mod:`pipeline.preflight`: the checks a cluster config passes before anything is submitted.

The stage packages (synth, probes, train, eval) and the science packages (grid, fit, allocator)
never import this floor; :mod:`slurm` only names the job kind by reference. The CLI and the MCP
server are the roof above it.
"""

_EXPORTS: dict[str, str] = {
    "run_pipeline": "pipeline.job",
    "prepare_dataset": "pipeline.job",
    "train_stages": "pipeline.training",
    "run_lr_scan": "pipeline.lr_scan",
    "read_scan": "pipeline.lr_scan",
    "login_checks": "pipeline.preflight",
    "node_checks": "pipeline.preflight",
}
"""Public names and the modules that define them."""

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
