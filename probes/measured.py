"""Measured groundedness as a quality axis of the law (``toolscale fit --axes measured_groundedness,...``).

Every pipeline run records its dataset's probe summary under ``metadata.probe`` (``pipeline/job.py``), read
back as a :class:`grid.models.RunProbe` (a probe that does not validate counts as no reliable probe).
:func:`with_measured_axis` turns it into an axis value: each run's ``recipe["measured_groundedness"]`` is
the share of its dataset's actions the calibrated probe judged grounded, and the experiment config gains
a ``quality`` axis of that name over the runs' range. It is offered only when every run's probe is
reliable (``probe_reliable``: balanced accuracy >= ``probes.measure.RELIABLE_BALANCED_ACCURACY`` on the
held-out split); otherwise the requested knobs (``repair_rate``...) stay the quality axes. A dataset whose
held-out split holds one class only (every action grounded, as at ``repair_rate = 1``) has no balanced
accuracy; it counts as reliable when its agreement is at least ``SINGLE_CLASS_AGREEMENT`` and at least one
other run of the experiment calibrated as reliable on both classes. Pure: records are copied, never changed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from grid.models import RunProbe, RunRecord
from toolscale.errors import UsageError

__all__ = ["MEASURED_AXIS", "with_measured_axis"]

MEASURED_AXIS = "measured_groundedness"
"""Name of the measured quality axis."""
SINGLE_CLASS_AGREEMENT = 0.85
"""Agreement a single-class dataset's probe needs (the issue's agreement target)."""


def _probe(run: RunRecord) -> RunProbe | None:
    """The run's ``metadata.probe`` as a :class:`grid.models.RunProbe`; None when absent or invalid."""
    try:
        return RunProbe.model_validate((run.metadata or {}).get("probe") or {})
    except ValidationError:
        return None


def _reliable(probe: RunProbe | None, any_two_class: bool) -> bool:
    if probe is None:
        return False
    if probe.probe_reliable is True:
        return True
    single = probe.balanced_accuracy is None and probe.agreement is not None
    return single and any_two_class and probe.agreement >= SINGLE_CLASS_AGREEMENT


def with_measured_axis(runs: Sequence[RunRecord], axes: Mapping[str, Mapping[str, Any]]
                       ) -> tuple[list[RunRecord], dict[str, Any]]:
    """``(runs with recipe[MEASURED_AXIS], {"axes": [...]} with the axis added)``; UsageError when unavailable.

    ``runs`` are :class:`grid.models.RunRecord` objects (anything with ``run_id``, ``recipe``, ``metadata``
    and ``model_copy``); ``axes`` is the experiment's ``axis -> {"kind", "min", "max"}``
    (:func:`fit.data.axis_kinds`).
    """
    out, bad = [], []
    probes = [_probe(r) for r in runs]
    any_two_class = any(p is not None and p.probe_reliable is True for p in probes)
    for r, probe in zip(runs, probes):
        g = None if probe is None else probe.measured_groundedness
        if not _reliable(probe, any_two_class) or g is None or not math.isfinite(g):
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
