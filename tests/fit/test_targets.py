"""fit/targets.py: a run's final value, its early-stopped envelope, or its checkpoints as fit points."""

from __future__ import annotations

import pytest

from fit.errors import FitInputError
from fit.targets import at_first_checkpoint, envelope_step, resolve_target, target_runs, target_values
from grid.models import RunRecord


def _run(rid: str, final: float, ckpts: dict[int, dict[str, float]] | None, split: str = "fit") -> RunRecord:
    return RunRecord(run_id=rid, experiment="e", design_version="d", recipe={"t": 4.0}, model_size="m",
                     model_params=1e4, train_tokens=1e5, train_flops=6e9, seed=0, status="done", attempts=1,
                     job_id=None, split=split, error=None, source="design", metadata={},
                     metrics={"test/bpb": final}, checkpoints=ckpts or {})


# valid-calls bottoms out at step 20 while the test benchmark keeps falling: the test never chooses
CKPTS = {10: {"valid-calls/bpb": 3.0, "test/bpb": 3.1, "train/tokens": 2e4},
         20: {"valid-calls/bpb": 2.0, "test/bpb": 2.4, "train/tokens": 4e4},
         50: {"valid-calls/bpb": 2.5, "test/bpb": 2.2, "train/tokens": 1e5}}


def test_envelope_takes_the_test_value_at_the_checkpoint_best_on_validation():
    r = _run("r1", 2.2, {k: dict(v) for k, v in CKPTS.items()})
    assert envelope_step(r, "bpb") == 20
    (e,), kind = target_runs([r], benchmark="test", metric="bpb", target="envelope")
    assert kind == "envelope" and e.metrics["test/bpb"] == 2.4  # not 2.2: validation chose step 20
    assert e.train_tokens == 4e4 and e.train_flops == pytest.approx(6e9 * 0.4)  # D and FLOPs as of that step
    assert e.run_id == "r1" and e.metadata["target_step"] == 20
    assert target_values([r], benchmark="test", metric="bpb", target="envelope") == {"r1": 2.4}


def test_auto_is_the_envelope_for_a_loss_with_checkpoints_and_final_otherwise():
    with_ck, without = _run("a", 2.2, CKPTS), _run("b", 2.0, None)
    assert resolve_target("auto", [with_ck], "bpb") == "envelope"
    assert resolve_target("auto", [without], "bpb") == "final"
    assert resolve_target("auto", [with_ck], "score") == "final"
    runs, kind = target_runs([without], benchmark="test", metric="bpb")
    assert kind == "final" and runs[0].metrics["test/bpb"] == 2.0
    with pytest.raises(FitInputError, match="--target must be one of"):
        resolve_target("best", [with_ck], "bpb")


def test_envelope_on_runs_without_checkpoints_names_them():
    runs = [_run("a", 2.2, CKPTS), _run("r-no-ckpt", 2.0, None)]
    with pytest.raises(FitInputError, match=r"1 run\(s\) have none: r-no-ckpt \(fit them with --target final\)"):
        target_runs(runs, benchmark="test", metric="bpb", target="envelope")
    with pytest.raises(FitInputError, match="r-no-ckpt"):  # auto too, once any run has checkpoints
        target_runs(runs, benchmark="test", metric="bpb")
    with pytest.raises(FitInputError, match="^--target checkpoints needs checkpoints"):  # names the target given
        target_runs(runs, benchmark="test", metric="bpb", target="checkpoints")


def test_checkpoints_drop_the_first_tenth_and_keep_heldout_runs_at_their_envelope():
    ck = {3: {"valid-calls/bpb": 4.0, "test/bpb": 4.0, "train/tokens": 6e3}, **CKPTS}
    fit_run, held = _run("f", 2.2, ck), _run("h", 2.2, ck, split="heldout")
    runs, kind = target_runs([fit_run, held], benchmark="test", metric="bpb", target="checkpoints")
    assert kind == "checkpoints"
    ids = sorted(r.run_id for r in runs)
    assert ids == ["f@10", "f@20", "f@50", "h"]  # step 3 is within the first 10% of 50 steps
    by = {r.run_id: r for r in runs}
    assert by["f@10"].train_tokens == 2e4 and by["h"].metrics["test/bpb"] == 2.4


def test_runs_best_at_their_first_kept_checkpoint_are_named_and_checkpoint_points_are_not():
    early = {10: {"valid-calls/bpb": 1.5, "test/bpb": 1.6, "train/tokens": 2e4},  # rising after the first
             20: {"valid-calls/bpb": 1.8, "test/bpb": 1.9, "train/tokens": 4e4}}
    runs = [_run("late", 2.2, CKPTS), _run("early", 1.9, early), _run("held", 1.9, early, split="heldout"),
            _run("lone", 1.9, {20: early[20]})]  # one checkpoint: no earlier one to miss
    view, _ = target_runs(runs, benchmark="test", metric="bpb", target="envelope")
    assert at_first_checkpoint(view) == {"early", "held"}
    view, _ = target_runs(runs, benchmark="test", metric="bpb", target="checkpoints")
    assert at_first_checkpoint(view) == {"held"}  # the fitted runs enter as one point per checkpoint
    assert at_first_checkpoint(runs) == set()  # final values: no envelope chosen
