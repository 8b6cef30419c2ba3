"""probes/measured.py: measured groundedness as a quality axis, only with a reliable probe."""

from __future__ import annotations

import pytest

from grid.models import RunRecord
from probes.measured import MEASURED_AXIS, with_measured_axis
from toolscale.errors import UsageError


def _run(i, g, reliable=True):
    return RunRecord(run_id=f"r{i}", experiment="E", design_version="1", recipe={"repair_rate": 0.1 * i},
                     model_size="tiny-s", model_params=1e6, train_tokens=1e7, train_flops=6e13, seed=0, status="done",
                     attempts=1, job_id=None, split="fit", error=None, source="pipeline", metadata={"probe": {MEASURED_AXIS: g, "probe_reliable": reliable}})


def test_reliable_probes_give_a_quality_axis_over_the_runs_range():
    runs = [_run(i, g) for i, g in enumerate((0.6, 0.75, 0.9))]
    out, cfg = with_measured_axis(runs, {"repair_rate": {"kind": "quality", "min": 0.0, "max": 0.2}})
    assert [r.recipe[MEASURED_AXIS] for r in out] == [0.6, 0.75, 0.9]
    assert runs[0].recipe == {"repair_rate": 0.0}  # not changed in place
    axes = {a["name"]: a for a in cfg["axes"]}
    assert axes[MEASURED_AXIS] == {"name": MEASURED_AXIS, "kind": "quality", "min": 0.6, "max": 0.9}
    assert axes["repair_rate"]["kind"] == "quality"


def test_an_unreliable_probe_keeps_the_axis_unavailable():
    runs = [_run(0, 0.6), _run(1, 0.8, reliable=False), _run(2, None)]
    with pytest.raises(UsageError, match="2 of 3 runs have none, e.g. r1"):
        with_measured_axis(runs, {})


def test_single_class_datasets_count_when_another_run_calibrated_on_both_classes():
    from types import SimpleNamespace

    def run(rid, probe):
        return SimpleNamespace(run_id=rid, recipe={"repair_rate": 1.0}, metadata={"probe": probe},
                               model_copy=lambda update, _r=None: SimpleNamespace(run_id=rid, **update))

    two = {"probe_reliable": True, "balanced_accuracy": 0.95, "agreement": 0.96, MEASURED_AXIS: 0.8}
    one = {"probe_reliable": False, "agreement": 1.0, MEASURED_AXIS: 1.0}  # every action grounded: no balanced acc.
    out, cfg = with_measured_axis([run("a", two), run("b", one)], {})
    assert [r.recipe[MEASURED_AXIS] for r in out] == [0.8, 1.0]
    with pytest.raises(UsageError, match="1 of 1 runs have none"):
        with_measured_axis([run("b", one)], {})  # nothing calibrated on both classes: fail closed
    low = {**one, "agreement": 0.7}
    with pytest.raises(UsageError, match="1 of 2 runs"):
        with_measured_axis([run("a", two), run("c", low)], {})


def test_the_stored_pipeline_probe_parses_with_every_key():
    probe = {MEASURED_AXIS: 0.7, "symbolic_groundedness": 0.8, "coverage": 0.5, "agreement": 0.9,
             "probe_reliable": True, "kind": "copy", "balanced_accuracy": 0.9, "probe_flops": 0.0,
             "probe_cost_share": 0.0}
    run = _run(0, 0.7).model_copy(update={"metadata": {"probe": probe}})
    out, _ = with_measured_axis([run], {})
    assert out[0].recipe[MEASURED_AXIS] == 0.7


@pytest.mark.parametrize("probe", [{MEASURED_AXIS: 0.7, "probe_reliable": "yes"},
                                   {MEASURED_AXIS: "0.7", "probe_reliable": True},
                                   {MEASURED_AXIS: 0.7, "probe_reliable": True, "unknown": 1},
                                   {MEASURED_AXIS: float("nan"), "probe_reliable": True}])
def test_a_probe_that_does_not_validate_counts_as_no_reliable_probe(probe):
    good = _run(0, 0.6)
    bad = _run(1, 0.7).model_copy(update={"metadata": {"probe": probe}})
    with pytest.raises(UsageError, match="1 of 2 runs have none, e.g. r1"):
        with_measured_axis([good, bad], {})
