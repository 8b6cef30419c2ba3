"""Measured groundedness as a quality axis of the law (``toolscale fit --axes measured_groundedness,...``).

Every pipeline run records its dataset's probe summary under ``metadata.probe`` (``slurm/pipeline.py``).
:func:`with_measured_axis` turns it into an axis value: each run's ``recipe["measured_groundedness"]`` is
the share of its dataset's actions the calibrated probe judged grounded, and the experiment config gains
a ``quality`` axis of that name over the runs' range. It is offered only when every run's probe is
reliable (``probe_reliable``: balanced accuracy >= ``probes.pipeline.RELIABLE_BALANCED_ACCURACY`` on the
held-out split); otherwise the requested knobs (``repair_rate``...) stay the quality axes. Pure: records
are copied, never changed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from toolscale.errors import UsageError

__all__ = ["MEASURED_AXIS", "with_measured_axis"]

MEASURED_AXIS = "measured_groundedness"
"""Name of the measured quality axis."""


def with_measured_axis(runs: Sequence[Any], axes: Mapping[str, Mapping[str, Any]]
                       ) -> tuple[list[Any], dict[str, Any]]:
    """``(runs with recipe[MEASURED_AXIS], {"axes": [...]} with the axis added)``; UsageError when unavailable.

    ``runs`` are :class:`grid.models.RunRecord` objects (anything with ``run_id``, ``recipe``, ``metadata``
    and ``model_copy``); ``axes`` is the experiment's ``axis -> {"kind", "min", "max"}``
    (:func:`fit.data.axis_kinds`).
    """
    out, bad = [], []
    for r in runs:
        probe = (r.metadata or {}).get("probe") or {}
        g = probe.get(MEASURED_AXIS)
        if probe.get("probe_reliable") is not True or not isinstance(g, int | float) or not math.isfinite(g):
            bad.append(r.run_id)
            continue
        out.append(r.model_copy(update={"recipe": {**r.recipe, MEASURED_AXIS: float(g)}}))
    if bad:
        raise UsageError(f"axis {MEASURED_AXIS!r} needs a reliable probe (balanced accuracy >= 0.8 on its held-out "
                         f"split) for every run; {len(bad)} of {len(runs)} runs have none, e.g. {bad[0]} "
                         "(use the requested quality knobs instead)")
    vals = [r.recipe[MEASURED_AXIS] for r in out]
    listed = [{"name": k, **v} for k, v in axes.items() if k != MEASURED_AXIS]
    listed.append({"name": MEASURED_AXIS, "kind": "quality", "min": min(vals, default=0.0),
                   "max": max(vals, default=0.0)})
    return out, {"axes": listed}
