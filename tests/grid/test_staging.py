"""grid/staging.py and grid/staging_runs.py: long tables, checkpoints, filters, derived columns, suffixes, NaN;
an import killed mid-way leaves its staging folder, and the next import removes it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from grid.errors import TableImportError
from grid.staging import STAGE_PREFIX, stage_table, sweep_stale_stages

REPO = Path(__file__).resolve().parents[2]

LONG = ("run,params,tokens,task,acc,acc_stderr\n"
        "p70,70M,20B,arc,0.40,0.010\np70,70M,20B,piqa,0.60,0.011\n"
        "p160,160M,20B,arc,0.45,0.010\np160,160M,20B,piqa,0.64,0.011\n"
        "p410,410M,20B,arc,0.52,0.010\np410,410M,20B,piqa,NaN,\n")
LONG_MAP = {"run_id": "run", "model_size": "params", "train_tokens": "tokens", "benchmark": "task", "score": "acc"}


def _file(tmp_path: Path, text: str, name: str = "t.csv") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_long_table_one_run_per_id_one_metric_per_task_nan_is_missing(tmp_path):
    with stage_table(_file(tmp_path, LONG), LONG_MAP, experiment="e", weight="acc_stderr") as st:
        runs, metrics = st.runs.to_pylist(), st.metrics.to_pylist()
    assert [r["run_id"] for r in runs] == ["p70", "p160", "p410"]
    assert [r["model_params"] for r in runs] == [7e7, 1.6e8, 4.1e8] and runs[1]["model_size"] == "160M"
    assert runs[0]["train_tokens"] == 2e10 and runs[0]["train_flops"] == pytest.approx(6 * 7e7 * 2e10)
    assert len(metrics) == 5  # p410's piqa is NaN: a missing value
    arc = {m["run_id"]: m for m in metrics if m["benchmark"] == "arc"}
    assert arc["p160"]["score"] == 0.45 and arc["p160"]["stderr"] == 0.010
    assert [r["split"] for r in runs].count("heldout") == 1  # the top-FLOPs rule over runs, not rows


@pytest.mark.parametrize(("text", "needle"), [
    (LONG + "p70,70M,20B,arc,0.41,0.01\n", "run 'p70' has 2 values for benchmark 'arc' (rows 2 and 8)"),
    (LONG.replace("p160,160M,20B,piqa", "p160,150M,20B,piqa"), "run 'p160': its rows disagree on model_size"),
    (LONG.replace("p70,70M,20B,arc", "p70,70X,20B,arc"), "row 2: column 'params' (model_size): cannot parse the "
                                                         "size suffix of '70X'"),
    (LONG.replace("p70,70M,20B,arc", ",70M,20B,arc"), "row 2: column 'run' (run_id) is empty"),
])
def test_long_table_bad_input_names_the_run_and_rows(tmp_path, text, needle):
    with pytest.raises(TableImportError) as err:
        stage_table(_file(tmp_path, text), LONG_MAP, experiment="e")
    assert needle in str(err.value)


CKPT = "run,step,params,tokens,acc\n" + "".join(
    f"{r},{s},{n},{s * 1e9:g},{0.3 + 0.01 * s + (0.05 if r == 'b' else 0)}\n"
    for r, n in (("a", "1e8"), ("b", "2e8")) for s in (1, 2, 3))


def test_checkpoints_last_keeps_each_runs_last_step_and_all_keeps_every_one(tmp_path):
    path = _file(tmp_path, CKPT)
    mapping = {"run_id": "run", "step": "step", "model_params": "params", "train_tokens": "tokens", "score": "acc"}
    with stage_table(path, mapping, experiment="e", benchmark="b") as st:
        runs = st.runs.to_pylist()
        assert [r["run_id"] for r in runs] == ["a", "b"] and [r["train_tokens"] for r in runs] == [3e9, 3e9]
        assert json.loads(runs[0]["metadata"])["step"] == 3 and any("kept the last" in n for n in st.notes)
    with stage_table(path, mapping, experiment="e", benchmark="b", checkpoints="all") as st:
        runs = st.runs.to_pylist()
        assert [r["run_id"] for r in runs] == ["a@1", "a@2", "a@3", "b@1", "b@2", "b@3"]
        assert json.loads(runs[4]["metadata"])["checkpoint_of"] == "b"


def test_where_and_set_run_on_typed_columns(tmp_path):
    path = _file(tmp_path, CKPT)
    mapping = {"run_id": "run", "step": "step", "model_params": "params", "train_tokens": "tokens2", "score": "acc"}
    with stage_table(path, mapping, experiment="e", benchmark="b", where="params > 1.5e8 AND step < 3",
                     derive=["tokens2=step * 2e9"]) as st:
        runs = st.runs.to_pylist()
        assert [r["run_id"] for r in runs] == ["b"] and runs[0]["train_tokens"] == 4e9  # b's last step under 3
        assert "--where kept 2 of 6 rows" in st.notes


@pytest.mark.parametrize(("kw", "needle"), [
    ({"where": "State = 'finished'"}, "--where \"State = 'finished'\" names no column 'State'; columns: run, step"),
    ({"where": "acc > 5"}, "--where 'acc > 5' keeps none of the 6 rows"),
    ({"derive": ["tok=nope * 2"]}, "--set 'tok=nope * 2' names no column 'nope'"),
    ({"derive": ["=step"]}, "--set must be NAME=EXPRESSION"),
    ({"where": "read_csv('/etc/passwd') IS NOT NULL"}, "--where"),
])
def test_bad_where_or_set_is_one_line(tmp_path, kw, needle):
    mapping = {"run_id": "run", "model_params": "params", "train_tokens": "tokens", "score": "acc", "step": "step"}
    with pytest.raises(TableImportError) as err:
        stage_table(_file(tmp_path, CKPT), mapping, experiment="e", benchmark="b", **kw)
    assert needle in str(err.value)


def test_a_file_without_run_ids_groups_a_long_table_by_its_run_fields(tmp_path):
    text = "params,tokens,task,acc\n70M,20B,arc,0.4\n70M,20B,piqa,0.6\n160M,20B,arc,0.45\n160M,20B,piqa,0.64\n"
    mapping = {"model_size": "params", "train_tokens": "tokens", "benchmark": "task", "score": "acc"}
    with stage_table(_file(tmp_path, text), mapping, experiment="e") as st:
        runs, metrics = st.runs.to_pylist(), st.metrics.to_pylist()
    assert len(runs) == 2 and all(r["run_id"].startswith("i-") for r in runs) and len(metrics) == 4


def _owner(tmp: Path, then: str) -> subprocess.Popen:
    """A process that makes a staging folder under ``tmp``, prints it, then runs ``then``."""
    code = textwrap.dedent(f"""
        import os, signal, sys, time
        from grid.staging import new_stage
        print(new_stage(), flush=True)
        {then}
    """)
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)


def test_a_killed_imports_folder_is_removed_and_a_live_ones_kept(tmp_path) -> None:
    dead = _owner(tmp_path, "os.kill(os.getpid(), signal.SIGKILL)")
    dead_folder = Path(dead.stdout.readline().strip())
    assert dead.wait() == -signal.SIGKILL and dead_folder.is_dir()  # what a kill -9 used to leave behind
    live = _owner(tmp_path, "time.sleep(60)")
    try:
        live_folder = Path(live.stdout.readline().strip())
        assert not dead_folder.exists()  # the next import's start removed it
        orphan = tmp_path / (STAGE_PREFIX + "old-format")  # no lock file, older than the grace period
        orphan.mkdir()
        os.utime(orphan, (0, 0))
        fresh = tmp_path / (STAGE_PREFIX + "being-made")  # no lock file yet: another import creating it
        fresh.mkdir()
        removed = sweep_stale_stages(tmp_path)
        assert removed == [str(orphan)]
        assert live_folder.is_dir() and fresh.is_dir()
    finally:
        live.kill()
        live.wait()
    assert sweep_stale_stages(tmp_path) == [str(live_folder)]
