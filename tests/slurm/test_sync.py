"""Sync's ingest of many result files: set-based, same outcome as one file at a time; scheduler state mapping."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from grid.models import MetricResult, RunResult, RunSpec, TrainStats
from grid.registry import Registry
from slurm.sync import map_slurm_state


def _results(n: int) -> list[tuple[RunResult, str, str]]:
    out = []
    for i in range(n):
        if i % 3 == 2:
            r = RunResult(run_id=f"r{i}", experiment="e", status="failed", error=f"Traceback...\nValueError: {i}",
                          job_id=f"7_{i}", finished_at=datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=i))
        else:
            r = RunResult(run_id=f"r{i}", experiment="e", status="done", job_id=None if i % 2 else f"7_{i}",
                          metrics=[MetricResult(benchmark="b", metric="score", score=i / 10),
                                   MetricResult(benchmark="b", metric="loss", score=2.0 - i / 10, stderr=0.1,
                                                n_items=5, higher_is_better=False)],
                          train=TrainStats(params=100.0 * (i + 1), train_tokens=1e4, train_flops=6e6 * (i + 1)),
                          dataset_id=f"ds-{i}", finished_at=datetime(2026, 1, 1), extra={"k": i})
        out.append((r, f"hash-{i}", f"/x/r{i}.result.json"))
    return out


def _registry(path, n: int) -> Registry:
    reg = Registry(path)
    reg.ensure_experiment("e", axes=["a"])
    reg.add_runs([RunSpec(run_id=f"r{i}", experiment="e", design_version="v", recipe={"a": 1.0}, model_size="s",
                          metadata={"keep": True}) for i in range(n)])
    reg.mark_submitted({f"r{i}": f"old-{i}" for i in range(n)})
    return reg


def _state(reg: Registry):
    runs = [r.model_dump(exclude={"created_at", "finished_at"}) for r in reg.runs("e")]
    metrics = sorted(reg.metrics("e"), key=lambda m: (m["run_id"], m["benchmark"], m["metric"]))
    events = [[e for e, _ in reg.events(f"r{i}")] for i in range(len(runs))]
    return runs, metrics, events


def test_batch_ingest_equals_one_file_at_a_time(tmp_path):
    results = _results(12)
    with _registry(tmp_path / "a.duckdb", 12) as a, _registry(tmp_path / "b.duckdb", 12) as b:
        rep = a.ingest(results)
        for t in results:
            b.ingest([t])
        assert rep.ingested == 12 and rep.duplicate == 0
        assert _state(a) == _state(b)
        runs = {r.run_id: r for r in a.runs("e")}
        assert runs["r0"].metrics == {"b/score": 0.0, "b/loss": 2.0}
        assert runs["r1"].job_id == "old-1" and runs["r0"].job_id == "7_0"  # a result without job id keeps it
        assert runs["r2"].status == "failed" and runs["r2"].error.endswith("ValueError: 2")
        assert runs["r4"].metadata["keep"] is True and runs["r4"].metadata["k"] == 4
        assert runs["r4"].model_params == 500.0
        again = a.ingest(results)
        assert again.ingested == 0 and again.duplicate == 12


def test_same_run_twice_in_a_batch_last_wins_and_unknown_runs_reported(tmp_path):
    first, second = _results(2)
    later = RunResult(run_id="r0", experiment="e", status="failed", error="boom",
                      finished_at=datetime(2026, 2, 1))
    ghost = RunResult(run_id="nope", experiment="e", status="done", finished_at=datetime(2026, 2, 1))
    with _registry(tmp_path / "r.duckdb", 2) as reg:
        rep = reg.ingest([first, (later, "h-later", "/x/later"), (ghost, "h-ghost", "/x/ghost"),
                          (first[0], first[1], "/copy")])
        assert (rep.ingested, rep.duplicate, rep.unknown_run) == (2, 1, 1)
        assert rep.problems == ["/x/ghost: unknown run nope"]
        assert reg.runs("e", run_ids=["r0"])[0].status == "failed"


@pytest.mark.parametrize(("raw", "status"), [
    ("PENDING", "submitted"), ("REQUEUED", "submitted"), ("RUNNING", "running"), ("COMPLETED", "done"),
    ("CANCELLED by 0", "cancelled"), ("CANCELLED+", "cancelled"), ("TIMEOUT", "failed"),
    ("OUT_OF_MEMORY", "failed"), ("NODE_FAIL", "failed"), ("", "unknown"), ("WEIRD", "unknown")])
def test_slurm_states_map_onto_run_states(raw, status):
    assert map_slurm_state(raw) == status


def test_local_state_of_a_reused_or_missing_pid_is_ended():
    import os

    from slurm.sync import local_state

    assert local_state(str(os.getpid())).status == "done"  # alive, but not a submitit controller
    assert local_state("999999999").status == "done"
    assert local_state("DEBUG_1").status == "done"
