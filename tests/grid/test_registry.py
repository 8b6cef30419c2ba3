"""The DuckDB registry: migrations, runs, idempotent and crash-safe ingest, the single-writer lock."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest

from grid.models import MetricResult, RunResult, RunSpec, TrainStats, run_id_for
from grid.registry import Registry, RegistryError, RegistryLockedError
from grid.results import read_results, write_result
from grid.schema import MIGRATIONS, SCHEMA_VERSION

REPO = Path(__file__).resolve().parents[2]


def _runs(n: int, experiment: str = "e1") -> list[RunSpec]:
    out = []
    for i in range(n):
        recipe = {"tool_diversity": float(4 + i), "repair_rate": 0.5}
        out.append(RunSpec(run_id=run_id_for(experiment, "v1", recipe, "tiny-s", 0), experiment=experiment,
                           design_version="v1", recipe=recipe, model_size="tiny-s", model_params=1e5,
                           train_tokens=1e6, train_flops=6e11, seed=0))
    return out


def _result(run_id: str, score: float = 0.5, status: str = "done") -> RunResult:
    return RunResult(run_id=run_id, experiment="e1", status=status,
                     metrics=[MetricResult(benchmark="heldout-calls", score=score, stderr=0.01, n_items=100)]
                     if status == "done" else [],
                     train=TrainStats(params=123.0, train_tokens=456.0, train_flops=6 * 123 * 456.0)
                     if status == "done" else None,
                     error="Traceback...\nValueError: boom" if status == "failed" else None,
                     finished_at=datetime.now(UTC))


def test_new_registry_has_current_schema(tmp_path) -> None:
    with Registry(tmp_path / "r.duckdb") as reg:
        assert reg.schema_version() == SCHEMA_VERSION
        tables = {r[0] for r in reg.con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    assert {"experiments", "runs", "metrics", "datasets", "fits", "allocations", "tool_docs"} <= tables


def test_migration_from_version_one_keeps_rows(tmp_path) -> None:
    path = str(tmp_path / "old.duckdb")
    con = duckdb.connect(path)
    for sql in MIGRATIONS[0]:
        con.execute(sql)
    con.execute("INSERT INTO schema_meta VALUES ('schema_version', '1')")
    con.execute("INSERT INTO runs (run_id, experiment, design_version, recipe, model_size, created_at, "
                "schema_version) VALUES ('old-run', 'e0', 'v0', '{}', 'm', now(), 1)")
    con.close()
    with Registry(path) as reg:
        assert reg.schema_version() == SCHEMA_VERSION
        runs = reg.runs()
        assert [r.run_id for r in runs] == ["old-run"]
        assert runs[0].split == "fit"  # the column v2 added, with its default
        assert reg.allocations() == []


def test_newer_schema_is_refused(tmp_path) -> None:
    path = str(tmp_path / "new.duckdb")
    Registry(path).close()
    con = duckdb.connect(path)
    con.execute("UPDATE schema_meta SET value = '999' WHERE key = 'schema_version'")
    con.close()
    with pytest.raises(RegistryError, match="schema version 999, newer"):
        Registry(path)


def test_add_runs_is_idempotent_and_stamps_versions(tmp_path) -> None:
    with Registry(tmp_path / "r.duckdb") as reg:
        reg.ensure_experiment("e1", axes=["tool_diversity", "repair_rate"])
        assert reg.add_runs(_runs(3)) == 3
        assert reg.add_runs(_runs(3)) == 0
        assert reg.status_counts()["e1"]["pending"] == 3
        versions = reg.con.execute("SELECT DISTINCT schema_version FROM runs").fetchall()
        axis_vals = reg.con.execute("SELECT axis_tool_diversity FROM runs ORDER BY 1").fetchall()
    assert versions == [(SCHEMA_VERSION,)]
    assert [v[0] for v in axis_vals] == [4.0, 5.0, 6.0]


def test_ingest_is_idempotent_and_applies_results(tmp_path) -> None:
    runs = _runs(3)
    folder = tmp_path / "results"
    write_result(folder, _result(runs[0].run_id, 0.7))
    write_result(folder, _result(runs[1].run_id, status="failed"))
    with Registry(tmp_path / "r.duckdb") as reg:
        reg.add_runs(runs)
        results, problems = read_results(folder)
        assert problems == []
        first = reg.ingest(results)
        second = reg.ingest(read_results(folder)[0])
        done = reg.runs(status="done")
        failed = reg.runs(status="failed")
    assert (first.ingested, second.ingested, second.duplicate) == (2, 0, 2)
    assert done[0].metrics == {"heldout-calls/score": 0.7}
    assert done[0].model_params == 123.0 and done[0].train_flops == 6 * 123 * 456.0
    assert "ValueError: boom" in failed[0].error


def test_truncated_result_file_is_reported_not_ingested(tmp_path) -> None:
    runs = _runs(1)
    path = write_result(tmp_path, _result(runs[0].run_id))
    path.write_text(path.read_text()[:40])
    results, problems = read_results(tmp_path)
    assert results == []
    assert len(problems) == 1 and "truncated or not JSON" in problems[0]


def test_unknown_run_is_reported(tmp_path) -> None:
    write_result(tmp_path / "res", _result("r-unknown"))
    with Registry(tmp_path / "r.duckdb") as reg:
        report = reg.ingest(read_results(tmp_path / "res")[0])
    assert report.unknown_run == 1 and "unknown run r-unknown" in report.problems[0]


_SLOW_INGEST = textwrap.dedent("""
    import sys, time
    from grid.registry import Registry
    from grid.results import read_results

    class Slow(list):
        def __iter__(self):
            for i, item in enumerate(list.__iter__(self)):
                if i == len(self) // 2:
                    print("mid", flush=True)
                    time.sleep(60)
                yield item

    results, _ = read_results(sys.argv[2])
    with Registry(sys.argv[1]) as reg:
        reg.ingest(Slow(results))
""")


def test_ingest_killed_midway_leaves_registry_unchanged(tmp_path) -> None:
    db = tmp_path / "r.duckdb"
    runs = _runs(20)
    with Registry(db) as reg:
        reg.add_runs(runs)
    for r in runs:
        write_result(tmp_path / "res", _result(r.run_id))
    proc = subprocess.Popen([sys.executable, "-c", _SLOW_INGEST, str(db), str(tmp_path / "res")],
                            stdout=subprocess.PIPE, text=True, cwd=REPO)
    assert proc.stdout.readline().strip() == "mid"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    with Registry(db) as reg:
        assert reg.status_counts()["e1"]["done"] == 0
        assert reg.con.execute("SELECT count(*) FROM ingested_files").fetchone()[0] == 0
        assert reg.con.execute("SELECT count(*) FROM metrics").fetchone()[0] == 0
        report = reg.ingest(read_results(tmp_path / "res")[0])
        assert report.ingested == 20
        assert reg.status_counts()["e1"]["done"] == 20


_HOLDER = textwrap.dedent("""
    import sys, time
    from grid.registry import Registry
    reg = Registry(sys.argv[1])
    print("holding", flush=True)
    time.sleep(float(sys.argv[2]))
    reg.close()
""")


def test_second_writer_gets_clear_error_naming_holder(tmp_path) -> None:
    db = tmp_path / "r.duckdb"
    Registry(db).close()
    proc = subprocess.Popen([sys.executable, "-c", _HOLDER, str(db), "30"], stdout=subprocess.PIPE, text=True,
                            cwd=REPO)
    try:
        assert proc.stdout.readline().strip() == "holding"
        t0 = time.monotonic()
        with pytest.raises(RegistryLockedError) as err:
            Registry(db, lock_timeout_s=1.0)
        assert time.monotonic() - t0 >= 0.9
        assert f"process {proc.pid}" in str(err.value)
        assert "\n" not in str(err.value)
    finally:
        proc.kill()
        proc.wait()
    with Registry(db, lock_timeout_s=5) as reg:  # the file is intact once the holder is gone
        assert reg.schema_version() == SCHEMA_VERSION


def test_second_writer_waits_for_holder_to_finish(tmp_path) -> None:
    db = tmp_path / "r.duckdb"
    Registry(db).close()
    proc = subprocess.Popen([sys.executable, "-c", _HOLDER, str(db), "1.5"], stdout=subprocess.PIPE, text=True,
                            cwd=REPO)
    assert proc.stdout.readline().strip() == "holding"
    with Registry(db, lock_timeout_s=30) as reg:
        reg.ensure_experiment("after-wait")
        assert [e.name for e in reg.experiments()] == ["after-wait"]
    proc.wait(timeout=30)


def test_set_status_and_failures(tmp_path) -> None:
    runs = _runs(2)
    with Registry(tmp_path / "r.duckdb") as reg:
        reg.add_runs(runs)
        reg.set_status([runs[0].run_id], "submitted", job_id="42_0", new_attempt=True)
        reg.set_status([runs[0].run_id], "failed", error="line1\nRuntimeError: out of memory")
        with pytest.raises(RegistryError, match="status must be one of"):
            reg.set_status([runs[1].run_id], "exploded")
        rec = reg.runs(run_ids=[runs[0].run_id])[0]
        fails = reg.last_failures()
        events = reg.events(runs[0].run_id)
    assert (rec.status, rec.attempts, rec.job_id) == ("failed", 1, "42_0")
    assert fails[0]["run_id"] == runs[0].run_id and "out of memory" in fails[0]["error"]
    assert [e[0] for e in events] == ["submitted", "failed"]


def test_fits_and_allocations_round_trip(tmp_path) -> None:
    with Registry(tmp_path / "r.duckdb") as reg:
        fid = reg.save_fit(experiment="e1", benchmark="b", metric="score", law="additive", converged=True,
                           n_points=10, data_hash="abc", payload={"params": {"a": 1.0}})
        reg.save_allocation(experiment="e1", benchmark="b", budget=100.0, unit="usd", fit_id=fid,
                            payload={"spend": {"x": 100.0}})
        fits = reg.fits("e1", "b")
        allocs = reg.allocations("e1")
    assert fits[0].fit_id == fid and fits[0].payload == {"params": {"a": 1.0}}
    assert (fits[0].law, fits[0].converged, fits[0].n_points, fits[0].data_hash) == ("additive", True, 10, "abc")
    assert allocs[0]["payload"]["spend"] == {"x": 100.0}


def test_read_only_on_missing_file_is_clear(tmp_path) -> None:
    with pytest.raises(RegistryError, match="registry not found"):
        Registry(tmp_path / "nope.duckdb", read_only=True)


def test_result_write_is_atomic_json(tmp_path) -> None:
    path = write_result(tmp_path, _result("r-x"))
    assert json.loads(path.read_text())["run_id"] == "r-x"
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temp files left behind
