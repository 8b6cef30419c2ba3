"""grid/import_store.py: bulk staging by DuckDB, and no silent overwrite (conflicts, --update, history, stale fits)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grid.errors import RegistryConflictError, TableImportError
from grid.import_store import stage_table
from grid.registry import Registry
from toolscale.cli import main

MAP = {"model_size": "model", "train_tokens": "tokens", "score": "acc", "run_id": "id"}
CSV = "id,model,tokens,acc,tools\na,1e6,1e9,0.50,4\nb,2e6,2e9,0.55,8\nc,4e6,4e9,,16\nd,8e6,8e9,0.64,32\n"


def _file(tmp_path: Path, text: str = CSV, name: str = "runs.csv") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def _store(db: str, path: Path, *, on_conflict: str = "refuse", experiment: str = "byo"):
    staged = stage_table(path, {**MAP, "tool_diversity": "tools"}, experiment=experiment, benchmark="b")
    with Registry(db) as reg:
        return reg.store_staged(staged, experiment, on_conflict=on_conflict)


def test_stage_derives_flops_split_ids_and_missing_metrics(tmp_path) -> None:
    staged = stage_table(_file(tmp_path), {**MAP, "tool_diversity": "tools"}, experiment="byo", benchmark="b")
    runs = staged.runs.to_pylist()
    assert staged.rows == 4 and staged.axes == ["tool_diversity"]
    assert [r["train_flops"] for r in runs] == [6 * 1e6 * 1e9, 6 * 2e6 * 2e9, 6 * 4e6 * 4e9, 6 * 8e6 * 8e9]
    assert [r["split"] for r in runs] == ["fit", "fit", "fit", "heldout"]  # top 25% of FLOPs
    assert runs[0]["run_id"] == "a" and json.loads(runs[0]["recipe"]) == {"tool_diversity": 4.0}  # verbatim
    assert json.loads(runs[0]["metadata"])["import_key"] == "a"
    assert staged.metrics.num_rows == 3  # the empty cell of run c is a missing value, not an error


@pytest.mark.parametrize(("target", "cells", "needle"), [
    ("seed", "0,3000000000", "row 3: column 'x' (seed) must be a whole number in [0, 2147483647], got '3000000000'"),
    ("seed", "1,1.5", "row 3: column 'x' (seed)"),  # was stored as 2
    ("seed", "-1,0", "row 2: column 'x' (seed)"),
    ("unique_tokens", "1e9,-5", "row 3: column 'x' (unique_tokens) must be > 0"),
])
def test_stage_refuses_seeds_a_registry_cannot_hold_and_negative_unique_tokens(tmp_path, target, cells,
                                                                                needle) -> None:
    a, b = cells.split(",")
    text = f"id,model,tokens,acc,x\na,1e6,1e9,0.5,{a}\nb,2e6,1e9,0.6,{b}\n"
    with pytest.raises(TableImportError) as err:
        stage_table(_file(tmp_path, text), {**MAP, target: "x"}, experiment="byo", benchmark="b")
    assert needle in str(err.value)


def test_the_bulk_ids_match_the_row_by_row_importer(tmp_path) -> None:
    from grid.importer import parse_column_map, rows_to_runs

    rows = [{"id": "a", "model": 1e6, "tokens": 1e9, "acc": 0.5}, {"id": "b", "model": 2e6, "tokens": 1e9, "acc": 0.6}]
    _, runs, _ = rows_to_runs(rows, parse_column_map(["id=run_id", "model=model_size", "tokens=train_tokens",
                                                      "acc=score"]), experiment="byo", benchmark="b")
    staged = stage_table(_file(tmp_path, "id,model,tokens,acc\na,1e6,1e9,0.5\nb,2e6,1e9,0.6\n"),
                         {"run_id": "id", "model_size": "model", "train_tokens": "tokens", "score": "acc"},
                         experiment="byo", benchmark="b")
    assert [r.run_id for r in runs] == staged.runs.column("run_id").to_pylist()


@pytest.mark.parametrize(("text", "needle"), [
    ("id,model,tokens,acc,tools\na,1e6,1e9,0.5,x\n", "row 2: column 'tools' (tool_diversity) must be a number"),
    ("id,model,tokens,acc,tools\na,1e6,1e9,0.5,4\nb,-1,1e9,0.5,4\n", "row 3: column 'model'"),
    ("id,model,tokens,acc,tools\na,1e300,1e300,0.5,4\n", "overflows"),
    ("id,model,tokens,acc,tools\na,1e6,1e9,1e300,4\n", "within"),
    ("id,model,tokens,acc,tools\na,1e6,1e9,0.5,4\na,2e6,1e9,0.6,4\n", "same run_id ('a', 2 rows)"),
])
def test_stage_names_the_first_bad_row(tmp_path, text, needle) -> None:
    with pytest.raises(TableImportError, match=None) as err:
        stage_table(_file(tmp_path, text), {**MAP, "tool_diversity": "tools"}, experiment="byo", benchmark="b")
    assert needle in str(err.value)


def test_reimport_identical_is_a_no_op_and_changed_values_are_refused_then_updated(tmp_path) -> None:
    db = str(tmp_path / "r.duckdb")
    first = _store(db, _file(tmp_path))
    assert first.new_runs == 4 and first.new_metrics == 3 and first.conflicts == 0
    with Registry(db) as reg:
        reg.save_fit(experiment="byo", benchmark="b", metric="score", law="l", converged=True, n_points=3,
                     data_hash="h", payload={})
    again = _store(db, _file(tmp_path))
    assert (again.new_runs, again.new_metrics, again.conflicts, again.stale_fits) == (0, 0, 0, 0)
    fixed = _file(tmp_path, CSV.replace("0.55", "0.56").replace("8e6,8e9", "8e6,9e9"), "fixed.csv")
    before = Path(db).read_bytes()
    with pytest.raises(RegistryConflictError) as err:
        _store(db, fixed)
    msg = str(err.value)
    assert "3 stored values" in msg and "b/score: 0.55 -> 0.56" in msg and "--update" in msg
    assert Path(db).read_bytes() == before  # refused: nothing changed
    done = _store(db, fixed, on_conflict="update")
    assert done.conflicts == 3 and done.updated_runs == 2 and done.stale_fits == 1
    with Registry(db, read_only=True) as reg:
        history = reg.con.execute("SELECT field, old_value, new_value FROM run_history ORDER BY field").fetchall()
        scores = {r.metadata["import_key"]: r.metrics.get("b/score") for r in reg.runs("byo")}
        fits = reg.fits("byo")
    assert ("b/score", "0.55", "0.56") in history and ("train_tokens", "8000000000.0", "9000000000.0") in history
    assert scores["b"] == 0.56 and scores["c"] is None
    assert fits[0].stale_reason and "changed 3 stored values" in fits[0].stale_reason


def test_a_standard_error_added_or_dropped_on_reimport_is_a_conflict(tmp_path) -> None:
    # runs imported without --weight beside runs with one cannot be fitted together; re-importing them with
    # --weight (or the others without it) changed nothing and said nothing, so fit's advice could not be followed
    db = str(tmp_path / "r.duckdb")
    text = "id,model,tokens,acc,err\na,1e6,1e9,0.50,0.01\nb,2e6,2e9,0.55,0.02\n"
    path = _file(tmp_path, text)

    def store(weight, on_conflict="refuse"):
        staged = stage_table(path, MAP, experiment="byo", benchmark="b", weight=weight)
        with Registry(db) as reg:
            return reg.store_staged(staged, "byo", on_conflict=on_conflict)

    assert store(None).new_metrics == 2
    with pytest.raises(RegistryConflictError, match=r"run a b/score stderr: None -> 0.01"):
        store("err")
    assert store("err", "update").conflicts == 2
    assert store("err").conflicts == 0  # the same values again: a no-op
    with Registry(db, read_only=True) as reg:
        assert {r.run_id: r.stderrs.get("b/score") for r in reg.runs("byo")} == {"a": 0.01, "b": 0.02}
        history = reg.con.execute("SELECT field, old_value, new_value FROM run_history ORDER BY run_id").fetchall()
    assert history[0] == ("b/score stderr", None, "0.01")
    assert store(None, "update").conflicts == 2  # dropped again: no weights
    with Registry(db, read_only=True) as reg:
        assert all(not r.stderrs for r in reg.runs("byo"))


def test_stale_fits_are_refused_by_allocate(tmp_path) -> None:
    from allocator.errors import AllocatorError
    from pipeline.allocate import load_fit

    db = str(tmp_path / "r.duckdb")
    _store(db, _file(tmp_path))
    with Registry(db) as reg:
        reg.save_fit(experiment="byo", benchmark="b", metric="score", law="l", converged=True, n_points=3,
                     data_hash="h", payload={})
    _store(db, _file(tmp_path, CSV.replace("0.55", "0.57"), "v2.csv"), on_conflict="update")
    with Registry(db, read_only=True) as reg, pytest.raises(AllocatorError, match="is stale"):
        load_fit(reg, "byo", "b")


def test_imports_are_refused_into_designed_and_simulated_experiments(tmp_path) -> None:
    db = str(tmp_path / "r.duckdb")
    with Registry(db) as reg:
        reg.ensure_experiment("planned", axes=["tool_diversity"])
        reg.add_design("v1", "planned", {})
        reg.ensure_experiment("sim", simulated=True)
    for name, kind in (("planned", "designed"), ("sim", "simulated")):
        with pytest.raises(RegistryConflictError, match=f"experiment {name!r} is {kind}"):
            _store(db, _file(tmp_path), experiment=name)


def test_simulate_again_is_a_no_op_another_seed_needs_replace(tmp_path, capsys) -> None:
    small = Path(__file__).resolve().parents[1] / "fit" / "small.toml"
    db = str(tmp_path / "r.duckdb")
    base = ["simulate", "--config", str(small), "--registry", db, "--experiment", "sim", "--json"]
    assert main(base) == 0
    assert main(base) == 0 and json.loads(capsys.readouterr().out.split("\n}\n")[-2] + "\n}")["new_runs"] == 0
    with Registry(db) as reg:
        reg.save_fit(experiment="sim", benchmark="simulated", metric="score", law="l", converged=True, n_points=1,
                     data_hash="h", payload={})
        scores = sorted(m["score"] for m in reg.metrics("sim"))
    assert main([*base, "--seed", "5"]) == 2
    assert "would change" in capsys.readouterr().err
    with Registry(db, read_only=True) as reg:
        assert sorted(m["score"] for m in reg.metrics("sim")) == scores
    assert main([*base, "--seed", "5", "--replace"]) == 0
    with Registry(db, read_only=True) as reg:
        assert sorted(m["score"] for m in reg.metrics("sim")) != scores
        assert reg.fits("sim")[0].stale_reason
        assert reg.con.execute("SELECT count(*) FROM run_history").fetchall()[0][0] > 0


_KILLED_IMPORT = """
import sys, time
from grid import import_store
from grid.import_store import stage_table
from grid.registry import Registry

def stall(self):  # the runs are inserted, the transaction is open
    n = self.con.execute("SELECT count(*) FROM runs").fetchall()[0][0]
    print(f"mid {n}", flush=True)
    time.sleep(60)

import_store.ImportStore._insert_new_metrics = stall
staged = stage_table(sys.argv[2], {"model_size": "model", "train_tokens": "tokens", "score": "acc", "run_id": "id",
                                   "tool_diversity": "tools"}, experiment="byo", benchmark="b")
with Registry(sys.argv[1]) as reg:
    reg.store_staged(staged, "byo")
"""


def test_an_import_killed_inside_its_transaction_leaves_no_runs(tmp_path) -> None:
    import os
    import signal
    import subprocess
    import sys

    db = tmp_path / "r.duckdb"
    Registry(db).close()
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_IMPORT, str(db), str(_file(tmp_path))],
                            stdout=subprocess.PIPE, text=True, cwd=root,
                            env={**os.environ, "TMPDIR": str(tmp_path)})  # its staging file dies with tmp_path
    try:
        assert proc.stdout.readline().strip() == "mid 4"  # 4 runs written inside the open transaction
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    with Registry(db, read_only=True) as reg:
        assert reg.con.execute("SELECT count(*) FROM runs").fetchall() == [(0,)]
        assert reg.con.execute("SELECT count(*) FROM metrics").fetchall() == [(0,)]


def test_an_update_from_a_file_without_an_axis_keeps_the_stored_axis_values(tmp_path) -> None:
    db = str(tmp_path / "r.duckdb")
    _store(db, _file(tmp_path))
    no_axis = _file(tmp_path, "id,model,tokens,acc\na,1e6,1e9,0.52\n", "scores.csv")
    staged = stage_table(no_axis, MAP, experiment="byo", benchmark="b")
    with Registry(db) as reg:
        report = reg.store_staged(staged, "byo", on_conflict="update")
        recipe, column = reg.con.execute("SELECT recipe, axis_tool_diversity FROM runs WHERE run_id = 'a'").fetchone()
        history = reg.con.execute("SELECT field, old_value, new_value FROM run_history").fetchall()
    assert report.conflicts == 1 and history == [("b/score", "0.5", "0.52")]  # the score, and only it, changed
    assert json.loads(recipe) == {"tool_diversity": 4.0} and column == 4.0  # the file said nothing of the axis
    with Registry(db, read_only=True) as reg:
        (run,) = [r for r in reg.runs("byo") if r.run_id == "a"]
    assert run.recipe == {"tool_diversity": 4.0}


def test_a_ragged_or_non_utf8_csv_is_named_for_what_it_is(tmp_path) -> None:
    ragged = _file(tmp_path, "id,model,tokens,acc,tools\na,1e6,1e9,0.5,4\nb,2e6,1e9,0.6\n", "ragged.csv")
    with pytest.raises(TableImportError, match="row 3 has 4 fields, the header 5"):
        stage_table(ragged, {**MAP, "tool_diversity": "tools"}, experiment="byo", benchmark="b")
    latin = tmp_path / "latin.csv"
    latin.write_bytes("id,model,tokens,acc,tools\na,1e6,1e9,0.5,4\nb,2e6,1e9,0.6,4,caf\xe9\n".encode("latin-1"))
    with pytest.raises(TableImportError, match="not utf-8 encoded"):
        stage_table(latin, {**MAP, "tool_diversity": "tools"}, experiment="byo", benchmark="b")


def test_a_size_that_is_only_a_label_on_some_rows_is_named_in_a_note(tmp_path) -> None:
    text = "id,model,tokens,acc,tools\na,1e6,1e9,0.5,4\nb,--1B,1e9,0.6,4\n"
    staged = stage_table(_file(tmp_path, text), {**MAP, "tool_diversity": "tools"}, experiment="byo", benchmark="b")
    assert any(n.startswith("1 of 2 runs have no parameter count (model sizes such as '--1B' are labels)")
               for n in staged.notes), staged.notes
