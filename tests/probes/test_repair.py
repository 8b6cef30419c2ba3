from __future__ import annotations

import json

import pytest

from probes.provenance import trace_trajectory
from probes.repair import REPAIR_OPERATIONS, repair_dataset, repair_row
from toolscale.errors import UsageError


def test_resynthesize_makes_flagged_action_derivable(handmade):
    row = handmade[1]
    new, recs = repair_row(row, ["call_2"], "resynthesize", index=1)
    assert recs[0].applied and recs[0].operation == "resynthesize"
    a2 = {a.call_id: a for a in trace_trajectory(new).actions}["call_2"]
    assert a2.derivable
    meta = json.loads(new["meta"])
    assert meta["nonderivable_calls"] == [] and meta["repaired_calls"] == ["call_2"]
    assert meta["repair_ops"] == {"call_2": "resynthesize"}
    assert json.loads(row["meta"])["nonderivable_calls"] == ["call_2"]  # input untouched


def test_downweight_records_loss_weight(handmade):
    new, recs = repair_row(handmade[1], ["call_2"], "downweight", weight=0.1)
    meta = json.loads(new["meta"])
    assert meta["loss_weights"] == {"call_2": 0.1} and recs[0].weight == 0.1
    assert meta["nonderivable_calls"] == ["call_2"]  # the defect is still there, only down-weighted


def test_unrepairable_and_unknown(handmade):
    _, recs = repair_row(handmade[3], ["call_1", "call_9"], "resynthesize")
    assert [r.applied for r in recs] == [False, False]
    assert "cannot reconstruct" in recs[0].reason and recs[1].reason == "no such call"
    with pytest.raises(UsageError, match="unknown repair operation 'fix'; known: downweight, resynthesize"):
        repair_dataset(handmade, {1: ["call_2"]}, "fix")
    with pytest.raises(UsageError, match="weight must be in"):
        repair_row(handmade[1], ["call_2"], "downweight", weight=2)
    assert set(REPAIR_OPERATIONS) >= {"resynthesize", "downweight"}


def test_repair_dataset_copies_untouched_rows(handmade):
    rows, recs = repair_dataset(handmade, {1: ["call_2"]}, "resynthesize")
    assert rows[0] == handmade[0] and rows[0] is not handmade[0]
    assert len(recs) == 1
