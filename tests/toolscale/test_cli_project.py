"""``toolscale ingest``: its --json is the IngestReport model, with the unreadable files' problems first."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from grid.models import IngestReport, MetricResult, RunResult, RunSpec, run_id_for
from grid.registry import Registry
from grid.results import write_result
from toolscale.cli import main


def test_ingest_json_is_the_ingest_report(tmp_path, capsys) -> None:
    recipe = {"tool_diversity": 4.0}
    spec = RunSpec(run_id=run_id_for("e1", "v1", recipe, "m", 0), experiment="e1", design_version="v1",
                   recipe=recipe, model_size="m", seed=0)
    db = tmp_path / "r.duckdb"
    with Registry(db) as reg:
        reg.add_runs([spec], code="c0")
    folder = tmp_path / "results"
    stamp = datetime.now(UTC)
    for run_id in (spec.run_id, "r-ghost"):
        write_result(folder, RunResult(run_id=run_id, experiment="e1", status="done", finished_at=stamp,
                                       metrics=[MetricResult(benchmark="b", score=0.5)]))
    (folder / "broken.result.json").write_text("{not json")
    assert main(["ingest", str(folder), "--registry", str(db), "--json"]) == 0
    report = IngestReport.model_validate(json.loads(capsys.readouterr().out))
    assert (report.ingested, report.duplicate, report.unknown_run) == (1, 0, 1)
    assert len(report.problems) == 2 and "broken.result.json" in report.problems[0]
    assert report.problems[1].endswith("unknown run r-ghost")
    assert main(["ingest", str(folder), "--registry", str(db)]) == 0
    assert "ingested 0 results (1 already in, 1 unknown runs, 2 problems)" in capsys.readouterr().out



def test_ingest_refuses_a_missing_registry_and_a_folder_of_only_broken_results(tmp_path, capsys) -> None:
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / "a.result.json").write_text("{not json")
    typo = tmp_path / "typo.duckdb"
    assert main(["ingest", str(folder), "--registry", str(typo)]) == 2
    assert "registry not found" in capsys.readouterr().err and not typo.exists()  # no empty registry made
    _, db = _one_run(tmp_path)
    assert main(["ingest", str(folder), "--registry", str(db)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no readable result among 1 file(s)" in err[0] and "a.result.json" in err[0]


def _one_run(tmp_path):
    recipe = {"tool_diversity": 4.0}
    spec = RunSpec(run_id=run_id_for("e1", "v1", recipe, "m", 0), experiment="e1", design_version="v1",
                   recipe=recipe, model_size="m", seed=0)
    db = tmp_path / "r.duckdb"
    with Registry(db) as reg:
        reg.add_runs([spec], code="c0")
    return spec.run_id, db


def _result(run_id: str, score: float, status: str = "done") -> RunResult:
    return RunResult(run_id=run_id, experiment="e1", status=status, finished_at=datetime.now(UTC),
                     metrics=[MetricResult(benchmark="b", score=score)] if status == "done" else [],
                     error="boom" if status == "failed" else None)


def _score(db, run_id: str) -> float:
    with Registry(db, read_only=True) as reg:
        return reg.con.execute("SELECT score FROM metrics WHERE run_id = ?", [run_id]).fetchone()[0]


def test_ingest_refuses_to_overwrite_a_score_without_update(tmp_path, capsys) -> None:
    import hashlib

    run_id, db = _one_run(tmp_path)
    write_result(tmp_path / "first", _result(run_id, 0.101))
    assert main(["ingest", str(tmp_path / "first"), "--registry", str(db)]) == 0
    with Registry(db) as reg:  # a fit of that data, which the overwrite must make stale
        reg.con.execute("INSERT INTO fits (fit_id, experiment, benchmark, metric, law, converged, n_points, "
                        "data_hash, payload, created_at, schema_version) VALUES ('f1', 'e1', 'b', 'score', 'l', "
                        "true, 1, 'h', '{}', now(), 1)")
    capsys.readouterr()
    write_result(tmp_path / "again", _result(run_id, 0.99))
    digest = hashlib.sha256(db.read_bytes()).hexdigest()
    assert main(["ingest", str(tmp_path / "again"), "--registry", str(db)]) == 2  # used to overwrite silently
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"run {run_id} b/score: 0.101 -> 0.99" in err[0] and "--update" in err[0]
    assert hashlib.sha256(db.read_bytes()).hexdigest() == digest and _score(db, run_id) == 0.101
    assert main(["ingest", str(tmp_path / "again"), "--registry", str(db), "--json", "--update"]) == 0
    report = IngestReport.model_validate(json.loads(capsys.readouterr().out))
    assert (report.ingested, report.conflicts, report.updated_runs, report.stale_fits) == (1, 1, 1, 1)
    assert _score(db, run_id) == 0.99
    with Registry(db, read_only=True) as reg:
        history = reg.con.execute("SELECT run_id, field, old_value, new_value, source FROM run_history").fetchall()
        stale = reg.con.execute("SELECT stale_reason FROM fits WHERE fit_id = 'f1'").fetchone()[0]
    assert history == [(run_id, "b/score", "0.101", "0.99", "ingest")]
    assert stale.startswith("ingest changed 1 stored values")


def test_a_failed_result_for_a_done_run_is_a_conflict_and_sync_style_ingest_skips_it(tmp_path) -> None:
    from grid.results import read_results

    run_id, db = _one_run(tmp_path)
    write_result(tmp_path / "a", _result(run_id, 0.5))
    write_result(tmp_path / "b", _result(run_id, 0.0, status="failed"))
    with Registry(db) as reg:
        reg.ingest(read_results(tmp_path / "a")[0])
        report = reg.ingest(read_results(tmp_path / "b")[0])  # sync's default: skip and say so
        assert report.ingested == 0 and report.conflicts == 1
        assert "status: done -> failed" in report.problems[0] and "--update" in report.problems[0]
        assert reg.runs()[0].status == "done"


def test_ingest_reads_only_regular_files_of_bounded_size(tmp_path, capsys, monkeypatch) -> None:
    import os

    from grid import results

    run_id, db = _one_run(tmp_path)
    folder = tmp_path / "res"
    write_result(folder, _result(run_id, 0.5))
    os.mkfifo(folder / "fifo.result.json")  # used to hang forever
    (folder / "zero.result.json").symlink_to("/dev/zero")  # used to read until MemoryError
    monkeypatch.setattr(results, "RESULT_MAX_BYTES", 4096)
    (folder / "big.result.json").write_text("x" * 5000)
    assert main(["ingest", str(folder), "--registry", str(db), "--json"]) == 0
    report = IngestReport.model_validate(json.loads(capsys.readouterr().out))
    assert report.ingested == 1
    problems = sorted(report.problems)
    assert len(problems) == 3
    assert "big.result.json: 5,000 bytes, more than a result file holds" in problems[0]
    assert "fifo.result.json: not a regular file" in problems[1]
    assert "zero.result.json: not a regular file" in problems[2]


def test_ingest_of_a_missing_folder_is_exit_2(tmp_path, capsys) -> None:
    _, db = _one_run(tmp_path)
    assert main(["ingest", str(tmp_path / "nope"), "--registry", str(db)]) == 2
    assert "no such folder" in capsys.readouterr().err


def test_validate_counts_one_axis_in_the_singular(tmp_path, capsys) -> None:
    src = (Path(__file__).resolve().parents[1] / "fit" / "small.toml").read_text()
    start, end = src.index('[[axes]]\nname = "task_count"'), src.index('[[axes]]\nname = "repair_rate"')
    cfg = tmp_path / "one.toml"
    cfg.write_text(src[:src.index("[[axes]]")] + src[start:end] + src[src.index("[[ladder]]"):])
    assert main(["validate", str(cfg)]) == 0
    assert "valid — experiment 'fit-small', 1 axis (task_count), 4 model sizes" in capsys.readouterr().out


def test_validate_warns_when_the_draw_cap_leaves_no_room(tmp_path, capsys) -> None:
    src = (Path(__file__).resolve().parents[1] / "fit" / "small.toml").read_text()
    cfg = tmp_path / "abf.toml"
    cfg.write_text(src.replace("[[ladder]]\n", "[[ladder]]\nmax_seq_len = 2048\n")  # the parallel phase's prompts
                   + '\n[train]\nstages = ["sft", "grpo"]\ngrpo_n_envs = 3\ngrpo_prompts_per_step = 4\n'
                   'grpo_draw_cap = 4\n')
    assert main(["validate", str(cfg)]) == 0
    assert "warning: train.grpo_draw_cap = train.grpo_prompts_per_step = 4" in capsys.readouterr().err
