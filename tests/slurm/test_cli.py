"""toolscale launch / sync / cancel / status through main([...])."""

from __future__ import annotations

import json

from grid.registry import Registry
from toolscale.cli import main


def test_launch_debug_json_then_status_and_sync(make, capsys):
    env = make(n_runs=2)
    assert main(["launch", "--config", str(env.config_path), "--executor", "debug", "--job-kind", "succeed",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert sorted(out["launch"]["submitted"]) == sorted(env.run_ids)
    assert main(["status", "--registry", str(env.registry), "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["experiments"]["sl-test"]["done"] == 2
    assert main(["sync", "--config", str(env.config_path), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["ingested"] == 0 and rep["duplicate"] == 2 and rep["counts"]["done"] == 2


def test_launch_failures_show_in_status(make, capsys):
    env = make(n_runs=1, max_attempts=1)
    assert main(["launch", "--config", str(env.config_path), "--executor", "debug", "--job-kind", "boom"]) == 0
    assert "submitted 1 runs" in capsys.readouterr().out
    assert main(["status", "--registry", str(env.registry)]) == 0
    text = capsys.readouterr().out
    assert "last failures" in text and "boom in" in text


def test_unknown_job_kind_is_one_line_exit_2(make, capsys):
    env = make(n_runs=1)
    assert main(["launch", "--config", str(env.config_path), "--job-kind", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("toolscale: error: unknown job kind 'nope'") and err.count("\n") == 1


def test_bad_max_parallel_names_the_value(make, capsys):
    env = make(n_runs=1)
    assert main(["launch", "--config", str(env.config_path), "--max-parallel", "0"]) == 2
    assert "must be a positive integer, got 0" in capsys.readouterr().err


def test_sync_and_cancel_need_an_experiment(capsys, tmp_path):
    assert main(["sync", "--registry", str(tmp_path / "r.duckdb")]) == 2
    assert "needs --config CONFIG or --experiment NAME" in capsys.readouterr().err
    assert main(["cancel", "--registry", str(tmp_path / "r.duckdb")]) == 2


def test_cancel_records_live_runs(make, capsys):
    env = make(n_runs=2)
    with Registry(env.registry) as reg:
        reg.mark_submitted({env.run_ids[0]: "DEBUG_7"})
    assert main(["cancel", "--config", str(env.config_path), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["cancelled"] == [env.run_ids[0]]
    assert rep["errors"] == [f"job DEBUG_7 of run {env.run_ids[0]} is in no launch manifest under "
                             f"{env.folder}; not signalled"]
    with Registry(env.registry, read_only=True) as reg:
        assert {r.run_id: r.status for r in reg.runs("sl-test")} == {env.run_ids[0]: "cancelled",
                                                                      env.run_ids[1]: "pending"}


def test_launch_local_wait_runs_everything(make, capsys):
    env = make(n_runs=3, executor="local", max_parallel=2)
    assert main(["launch", "--config", str(env.config_path), "--job-kind", "succeed", "--wait", "--poll", "0.3"]) == 0
    captured = capsys.readouterr()
    out = captured.out
    assert "submitted 2 runs" in out and "1 wait for a free slot" in out and "done 3" in out
    # not a terminal: one progress line on stderr per change in finished runs, ending at 3/3
    lines = [ln for ln in captured.err.splitlines() if ln.startswith("runs ")]
    assert lines and lines[-1].startswith("runs 3/3 (done 3 failed 0 live 0)")
    assert len(lines) == len(set(ln.split(" (")[0] for ln in lines))


def test_dry_run_submits_nothing(make, capsys, rows):
    env = make(n_runs=2, sizes=("s", "m"))
    assert main(["launch", "--config", str(env.config_path), "--dry-run", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [g["model_size"] for g in out["plan"]] == ["s", "m"]
    assert out["plan"][0]["runs"] == env.run_ids[:2] and out["plan"][0]["parameters"]["timeout_min"] == 2
    assert {r.status for r in rows(env).values()} == {"pending"}
    assert not (env.folder / "launches").exists()
    assert main(["launch", "--config", str(env.config_path), "--dry-run"]) == 0
    assert "would submit" in capsys.readouterr().out


def _center(env, run_id):
    """Mark ``run_id`` a center point, as ``grid design`` does in its metadata."""
    with Registry(env.registry) as reg:
        reg.con.execute("UPDATE runs SET metadata = ? WHERE run_id = ?", [json.dumps({"center": True}), run_id])


def test_pilot_submits_n_runs_per_rung_center_points_first(make, capsys, rows):
    """``launch --pilot 2``: two pending runs per rung, a center point before the others; the dry run previews
    the same runs; a second pilot takes the next ones; the rest stay pending."""
    env = make(n_runs=4, sizes=("s", "m"))
    _center(env, "sl-test-m-3")
    cfg = str(env.config_path)
    assert main(["launch", "--config", cfg, "--pilot", "2", "--dry-run", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)["plan"]
    assert {g["model_size"]: sorted(g["runs"]) for g in plan} == {"s": ["sl-test-s-0", "sl-test-s-1"],
                                                                  "m": ["sl-test-m-0", "sl-test-m-3"]}
    assert {r.status for r in rows(env).values()} == {"pending"}
    assert main(["launch", "--config", cfg, "--executor", "debug", "--job-kind", "succeed", "--pilot", "2",
                 "--json"]) == 0
    first = json.loads(capsys.readouterr().out)["launch"]["submitted"]
    assert sorted(first) == ["sl-test-m-0", "sl-test-m-3", "sl-test-s-0", "sl-test-s-1"]
    assert main(["launch", "--config", cfg, "--executor", "debug", "--job-kind", "succeed", "--pilot", "1",
                 "--json"]) == 0
    assert sorted(json.loads(capsys.readouterr().out)["launch"]["submitted"]) == ["sl-test-m-1", "sl-test-s-2"]
    status = {k: r.status for k, r in rows(env).items()}
    assert sorted(k for k, s in status.items() if s == "pending") == ["sl-test-m-2", "sl-test-s-3"]


def test_pilot_with_nothing_pending_is_one_line_exit_2(make, capsys):
    env = make(n_runs=1)
    cfg = str(env.config_path)
    assert main(["launch", "--config", cfg, "--executor", "debug", "--job-kind", "succeed"]) == 0
    capsys.readouterr()
    assert main(["launch", "--config", cfg, "--pilot", "3"]) == 2
    err = capsys.readouterr().err
    assert "no pending runs of 'sl-test' to pilot" in err and err.count("\n") == 1
    assert main(["launch", "--config", cfg, "--pilot", "0"]) == 2
    assert "must be a positive integer, got 0" in capsys.readouterr().err
