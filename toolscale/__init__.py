"""toolscale: scaling-law experiment manager and budget allocator for tool-agent training data.

This package holds only the umbrella CLI (:mod:`toolscale.cli`) and the experiment
config model (:mod:`toolscale.config`); the work lives in the top-level packages
``synth probes grid fit allocator train eval slurm``.
"""

__version__ = "0.1.0"
