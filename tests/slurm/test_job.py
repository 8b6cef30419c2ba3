"""The job entry point: one atomic result file per run, checkpoint + resume."""

from __future__ import annotations

import json

from grid.models import RunSpec
from grid.results import read_results
from slurm.job import REQUEUE_FILE, JobRunner, load_checkpoint, save_checkpoint
from slurm.jobs import job_kind_ref

RUN = RunSpec(run_id="r-1", experiment="e", design_version="v", recipe={"tool_diversity": 3.0}, model_size="s")


def _runner(tmp_path, kind):
    return JobRunner(kind, job_kind_ref(kind), RUN.model_dump(mode="json"), str(tmp_path / "work"),
                     str(tmp_path / "results"), context={"config": {"x": 1}})


def test_success_writes_one_done_result(tmp_path):
    out = _runner(tmp_path, "succeed")()
    assert out == {"run_id": "r-1", "status": "done"}
    (results, problems) = read_results(tmp_path / "results")
    assert problems == [] and len(results) == 1
    res = results[0][0]
    assert res.status == "done" and res.metrics[0].score == 3.0 and res.train.params == 1000.0
    assert res.extra["job_kind"] == "succeed" and res.extra["requeues"] == 0
    assert json.loads((tmp_path / "work" / "context.json").read_text()) == {"config": {"x": 1}}
    assert [p.name for p in (tmp_path / "results").iterdir()] == ["r-1.result.json"]  # no temp files left


def test_failure_writes_failed_result_with_traceback_and_does_not_raise(tmp_path):
    assert _runner(tmp_path, "boom")()["status"] == "failed"
    res = read_results(tmp_path / "results")[0][0][0]
    assert res.status == "failed" and "Traceback" in res.error and "RuntimeError: boom in r-1" in res.error


def test_checkpoint_resubmits_the_same_runner_and_the_kind_resumes(tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLSCALE_TEST_STEPS", "5")
    monkeypatch.setenv("TOOLSCALE_TEST_STEP_S", "0")
    runner = _runner(tmp_path, "counter")
    save_checkpoint(tmp_path / "work", {"step": 3, "starts": [0]})
    delayed = runner.checkpoint()
    assert delayed.function is runner
    assert len((tmp_path / "work" / REQUEUE_FILE).read_text().splitlines()) == 1
    runner()
    res = read_results(tmp_path / "results")[0][0][0]
    assert res.extra["starts"] == [0, 3] and res.extra["steps"] == 5 and res.extra["requeues"] == 1
    assert load_checkpoint(tmp_path / "work")["step"] == 5


def test_unreadable_checkpoint_means_fresh_start(tmp_path):
    (tmp_path / "checkpoint.json").write_text("{trunc")
    assert load_checkpoint(tmp_path) is None
