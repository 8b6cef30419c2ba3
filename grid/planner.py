"""Writing a built design into the registry, without ever mixing two design versions silently.

The edge around the pure :func:`grid.design.build_design`: it records the design and
its runs (``pending``) through :class:`grid.registry.Registry`. Re-recording the same
version adds nothing; recording a second version for an experiment that already has
another one needs ``new_version=True`` (``toolscale grid design --new-version``).
"""

from __future__ import annotations

from grid.design import Design
from grid.errors import DesignError
from grid.models import AUGMENT_KIND, DesignRecorded
from grid.registry import Registry
from toolscale.config import ExperimentConfig

__all__ = ["record_design"]


def record_design(registry: Registry, design: Design, config: ExperimentConfig, *,
                  new_version: bool = False) -> DesignRecorded:
    """Record ``design`` and its runs; returns what changed.

    Raises :class:`grid.errors.DesignError` (nothing written) when the experiment already
    has runs of a different design version and ``new_version`` is False.
    """
    name = design.experiment
    known = {d["design_version"] for d in registry.designs(name)
             if d["summary"].get("kind") != AUGMENT_KIND}  # `grid design --augment` groups (grid/augment.py)
    known |= {r.design_version for r in registry.runs(name) if r.source == "design"}
    others = sorted(known - {design.version})
    if others and not new_version:
        raise DesignError(
            f"experiment {name!r} already has design version {', '.join(others)}; this config gives "
            f"{design.version}; pass --new-version to add it alongside (runs keep their design_version), "
            f"or use a new experiment name")
    registry.ensure_experiment(name, config=config.model_dump(mode="json"), axes=[a.name for a in config.axes])
    new_design = registry.add_design(design.version, name, design.summary.model_dump(mode="json"))
    new_runs = registry.add_runs(design.runs, source="design", status="pending")
    return DesignRecorded(design_version=design.version, new_design=new_design, new_runs=new_runs,
                          existing_runs=len(design.runs) - new_runs, other_versions=others)
