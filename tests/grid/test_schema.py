"""grid/schema.py: the migrations, above all v4 (runs and metrics without a PRIMARY KEY) on a v3 registry."""

from __future__ import annotations

import duckdb
import pytest

from grid.errors import TableImportError
from grid.models import MetricResult, RunSpec, run_id_for
from grid.registry import Registry
from grid.schema import MIGRATIONS, SCHEMA_VERSION, axis_column_ddl


def _v3_registry(path: str) -> None:
    """A registry written by the v3 schema: PRIMARY KEYs on runs and metrics, an axis column, a run, two metrics."""
    con = duckdb.connect(path)
    for statements in MIGRATIONS[:3]:
        for sql in statements:
            con.execute(sql)
    con.execute("INSERT INTO schema_meta VALUES ('schema_version', '3')")
    con.execute(axis_column_ddl("tool_diversity"))
    con.execute("INSERT INTO experiments VALUES ('e', NULL, '[\"tool_diversity\"]', FALSE, now(), 3)")
    con.execute("INSERT INTO runs (run_id, experiment, design_version, recipe, model_size, created_at, "
                "schema_version, axis_tool_diversity) VALUES ('r1', 'e', 'v1', '{}', 'm', now(), 3, 8.0)")
    con.execute("INSERT INTO metrics VALUES ('r1', 'b', 'score', '1', 0.5, NULL, NULL, TRUE, now(), 3), "
                "('r1', 'b', 'loss', '1', 2.0, NULL, NULL, FALSE, now(), 3)")
    con.close()


def _primary_keys(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {r[0] for r in con.execute("SELECT table_name FROM duckdb_constraints() WHERE constraint_type = "
                                      "'PRIMARY KEY'").fetchall()}


def test_v4_keeps_a_v3_registry_readable_and_drops_only_the_two_big_keys(tmp_path) -> None:
    db = str(tmp_path / "v3.duckdb")
    _v3_registry(db)
    con = duckdb.connect(db)
    assert {"runs", "metrics"} <= _primary_keys(con)
    con.close()
    with Registry(db) as reg:
        assert reg.schema_version() == SCHEMA_VERSION == 5
        keys = _primary_keys(reg.con)
        run = reg.runs("e")[0]
        null_status = reg.con.execute("SELECT is_nullable FROM information_schema.columns WHERE table_name = 'runs' "
                                      "AND column_name = 'status'").fetchall()[0][0]
    assert "runs" not in keys and "metrics" not in keys and "experiments" in keys and "fits" in keys
    assert (run.run_id, run.status, run.attempts, run.source, run.split) == ("r1", "pending", 0, "design", "fit")
    assert run.recipe == {} and run.metrics == {"b/score": 0.5, "b/loss": 2.0}
    assert null_status == "NO"
    with Registry(db, read_only=True) as reg:
        assert reg.con.execute("SELECT axis_tool_diversity FROM runs").fetchall() == [(8.0,)]


def test_v5_keeps_run_values_and_checkpoints_apart(tmp_path) -> None:
    """Checkpoints as data: rows with a ``step`` are a checkpoint's, NULL the run's own; each key unique per step."""
    db = str(tmp_path / "r.duckdb")
    with Registry(db) as reg:
        reg.ensure_experiment("e1", axes=["tool_diversity"])
        reg.add_runs([_spec()], code="c")
        rid = _spec().run_id
        reg.add_metrics(rid, [MetricResult(benchmark="b", metric="bpb", score=2.0),
                              MetricResult(benchmark="b", metric="bpb", score=2.5, step=10),
                              MetricResult(benchmark="b", metric="bpb", score=2.2, step=20),
                              MetricResult(benchmark="train", metric="tokens", score=4e4, step=10)])
        reg.add_metrics(rid, [MetricResult(benchmark="b", metric="bpb", score=2.1, step=20)])  # replaces step 20 only
        run = reg.runs("e1")[0]
        rows = reg.export_rows("e1")
    assert run.metrics == {"b/bpb": 2.0}
    assert run.checkpoints == {10: {"b/bpb": 2.5, "train/tokens": 4e4}, 20: {"b/bpb": 2.1}}
    assert [r.get("step") for r in rows] == [None, 10, 20] and rows[1]["b/bpb"] == 2.5 and "b/bpb" not in {
        k for k in rows[0] if k == "step"}


def _spec(run_id: str = "", seed: int = 0) -> RunSpec:
    recipe = {"tool_diversity": 4.0}
    return RunSpec(run_id=run_id or run_id_for("e1", "v1", recipe, "m", seed), experiment="e1", design_version="v1",
                   recipe=recipe, model_size="m", model_params=1e5, train_tokens=1e6, train_flops=6e11, seed=seed)


def test_without_keys_run_ids_and_metric_keys_stay_unique(tmp_path) -> None:
    db = str(tmp_path / "r.duckdb")
    with Registry(db) as reg:
        reg.ensure_experiment("e1", axes=["tool_diversity"])
        assert reg.add_runs([_spec(), _spec(), _spec(seed=1)], code="c") == 2  # the repeated id once
        assert reg.add_runs([_spec()], code="c") == 0
        rid = _spec().run_id
        reg.add_metrics(rid, [MetricResult(benchmark="b", metric="score", score=0.1)])
        reg.add_metrics(rid, [MetricResult(benchmark="b", metric="score", score=0.2),
                              MetricResult(benchmark="b", metric="score", score=0.3)])
        rows = reg.con.execute("SELECT run_id, count(*), max(score) FROM metrics GROUP BY run_id").fetchall()
        n_runs = reg.con.execute("SELECT count(*), count(DISTINCT run_id) FROM runs").fetchall()[0]
    assert rows == [(rid, 1, 0.3)] and n_runs == (2, 2)


def test_an_import_with_a_run_twice_is_refused_and_changes_nothing(tmp_path) -> None:
    db = tmp_path / "r.duckdb"
    with Registry(db) as reg:
        reg.import_runs("byo", ["tool_diversity"], [_spec("i-1")], [[MetricResult(benchmark="b", metric="s",
                                                                                   score=0.5)]])
    twice = [[MetricResult(benchmark="b", metric="s", score=0.5)]] * 2
    with Registry(db) as reg, pytest.raises(TableImportError, match="'i-2' is there 2 times"):
        reg.import_runs("byo", ["tool_diversity"], [_spec("i-2"), _spec("i-2")], twice)
    doubled = [[MetricResult(benchmark="b", metric="s", score=0.5), MetricResult(benchmark="b", metric="s",
                                                                                  score=0.6)]]
    with Registry(db) as reg, pytest.raises(TableImportError, match="b/s of run 'i-3' is there 2 times"):
        reg.import_runs("byo", ["tool_diversity"], [_spec("i-3")], doubled)
    with Registry(db, read_only=True) as reg:
        assert [r.run_id for r in reg.runs()] == ["i-1"]
        assert reg.con.execute("SELECT count(*) FROM metrics").fetchall() == [(1,)]


def test_a_result_with_checkpoints_is_compared_step_by_step_on_ingest(tmp_path) -> None:
    """Ingesting a run's result again with the same checkpoint rows changes nothing; a changed checkpoint value is a
    conflict naming its step, the others are not."""
    from datetime import UTC, datetime

    from grid.models import RunResult

    db = str(tmp_path / "r.duckdb")
    rows = [MetricResult(benchmark="b", metric="bpb", score=2.0), MetricResult(benchmark="b", metric="bpb", score=2.5,
                                                                               step=10),
            MetricResult(benchmark="b", metric="bpb", score=2.0, step=20)]

    def result(metrics, tag):
        return (RunResult(run_id=_spec().run_id, experiment="e1", status="done", metrics=metrics,
                          finished_at=datetime(2026, 1, 1, tzinfo=UTC)), f"hash-{tag}", f"{tag}.json")

    with Registry(db) as reg:
        reg.ensure_experiment("e1", axes=["tool_diversity"])
        reg.add_runs([_spec()], code="c")
        reg.ingest([result(rows, "a")])
        assert reg.ingest([result(rows, "b")], on_conflict="refuse").ingested == 1  # the same values: no conflict
        changed = [rows[0], rows[1].model_copy(update={"score": 2.6}), rows[2]]
        with pytest.raises(Exception, match=r"1 stored value would change \(run r-\w+ b/bpb@10: 2.5 -> 2.6\)"):
            reg.ingest([result(changed, "c")], on_conflict="refuse")
