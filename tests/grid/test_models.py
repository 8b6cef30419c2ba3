"""grid/models.py: the typed job outcome (RunOutcome) and the probe figures a run keeps (RunProbe)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from grid.models import MetricResult, RunProbe, RunOutcome, TrainStats

PROBE = {"measured_groundedness": 0.75, "symbolic_groundedness": 0.8, "coverage": 0.5, "agreement": 0.9,
         "probe_reliable": True, "kind": "copy", "balanced_accuracy": 0.88, "probe_flops": 0.0,
         "probe_cost_share": 0.0}


def test_probe_summary_dumps_the_keys_of_the_stored_probe_in_order():
    assert RunProbe.model_validate(PROBE).model_dump(mode="json") == PROBE
    assert list(RunProbe().model_dump(mode="json")) == list(PROBE)
    assert set(RunProbe().model_dump(mode="json").values()) == {None}


@pytest.mark.parametrize("bad", [{"probe_reliable": "yes"}, {"measured_groundedness": "0.5"},
                                 {"measured_groundedness": True}, {"n_actions": 3}])
def test_probe_summary_refuses_what_is_not_a_probe_figure(bad):
    with pytest.raises(ValidationError):
        RunProbe.model_validate(bad)


def test_probe_summary_is_frozen_and_takes_ints_as_floats():
    p = RunProbe(coverage=1, probe_flops=12)
    assert p.coverage == 1.0 and isinstance(p.probe_flops, float)
    with pytest.raises(ValidationError):
        p.coverage = 0.5


def test_run_outcome_result_extra_puts_the_probe_as_json_under_probe():
    out = RunOutcome(metrics=[MetricResult(benchmark="b", score=0.5)],
                     train=TrainStats(params=1.0, train_tokens=2.0, train_flops=12.0), dataset_id="d",
                     probe=RunProbe.model_validate(PROBE), extra={"dataset_key": "ds-1"})
    assert out.result_extra() == {"dataset_key": "ds-1", "probe": PROBE}
    assert out.extra == {"dataset_key": "ds-1"}  # not changed


def test_run_outcome_without_a_probe_keeps_its_extra():
    out = RunOutcome(extra={"probe": {"kind": "old"}, "a": 1})
    assert out.result_extra() == {"probe": {"kind": "old"}, "a": 1}
    assert RunOutcome().result_extra() == {} and RunOutcome().metrics == [] and RunOutcome().train is None
    replaced = RunOutcome(probe=RunProbe(kind="copy"), extra={"probe": {"kind": "old"}})
    assert replaced.result_extra()["probe"]["kind"] == "copy"
