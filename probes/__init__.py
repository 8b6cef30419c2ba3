"""probes: how well supervised is a synthesised dataset? (issue 5, research plan seed 003).

- :mod:`probes.provenance`: symbolic provenance of every argument (exact, structured, normalised
  and schema matches) -> derivable / non-derivable actions with their supporting observations;
- :mod:`probes.graph`: the observation -> action dependency graph (networkx);
- :mod:`probes.coverage`: compositional coverage (structures x support depth), one score per dataset;
- :mod:`probes.masking`: the counterfactual-masking probe (a tiny LM from train/, batched scoring);
- :mod:`probes.calibration`: threshold on a calibration split, agreement and confusion on another;
- :mod:`probes.cost`: probe FLOPs against the target run (budget 5 %);
- :mod:`probes.repair`: registered repair operations (resynthesize, downweight);
- :mod:`probes.pipeline`: ``probe_dataset(DIR, spec=..., target_train_flops=...)`` (pinned interface 7)
  and ``repair_dir``; ``toolscale probe DIR`` is the CLI.

Importing the package does not import torch.
"""
