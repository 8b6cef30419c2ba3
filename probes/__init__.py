"""probes: how well supervised is a synthesised dataset? (issue 5, research plan seed 003).

- :mod:`probes.provenance`: symbolic provenance of every argument (exact, structured, normalised
  and schema matches) -> derivable / non-derivable actions with their supporting observations;
- :mod:`probes.dependency_graph`: the observation -> action dependency graph (networkx);
- :mod:`probes.coverage`: compositional coverage (structures x support depth), one score per dataset;
- :mod:`probes.kinds`: probe kinds behind one interface (``[probe].kind``): :mod:`probes.copyprobe` (``copy``,
  training-free, the default), :mod:`probes.lmprobe` (``lm``), :mod:`probes.hfprobe` (``hf:MODEL_DIR``);
- :mod:`probes.masking`: the counterfactual-masking LM machinery (rendering, learned mask, batched scoring);
- :mod:`probes.shared`: one cross-fitted ``lm`` probe per experiment, pooled across its datasets;
- :mod:`probes.annotation`: human-label export and import; :mod:`probes.measured`: the measured axis for fit;
- :mod:`probes.calibration`: threshold (balanced accuracy) on a calibration split; figures with CIs on another;
- :mod:`probes.cost`: probe FLOPs against the target run (budget 5 %);
- :mod:`probes.repair`: registered repair operations (resynthesize, downweight);
- :mod:`probes.measure`: ``probe_dataset(DIR, spec=..., target_train_flops=...)`` (pinned interface 7)
  and ``repair_dir``; ``toolscale probe DIR`` is the CLI.

Importing the package does not import torch.
"""

from toolscale.exports import lazy_exports

_EXPORTS: dict[str, str] = {
    'probe_dataset': 'probes.measure',
    'repair_dir': 'probes.measure',
}
"""Public names and the modules that define them: other packages import these (or ``probes.models``)."""

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
