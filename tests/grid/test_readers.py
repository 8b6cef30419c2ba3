"""grid/readers.py: lm-evaluation-harness results and W&B exports as tables, end to end through import-runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grid.errors import TableImportError
from grid.readers import read_lmeval, read_wandb
from grid.registry import Registry
from toolscale.cli import main


def _lmeval_v04(model: str, step: int, params: float, acc: dict[str, float]) -> dict:
    """The shape `lm_eval --output_path` writes (harness 0.4): metric keys carry a filter (``acc,none``)."""
    return {"results": {t: {"alias": t, "acc,none": a, "acc_stderr,none": 0.01, "acc_norm,none": a + 0.01,
                            "acc_norm_stderr,none": 0.011} for t, a in acc.items()},
            "groups": {}, "n-shot": {t: 0 for t in acc},
            "config": {"model": "hf", "model_args": f"pretrained={model},revision=step{step},dtype=float32",
                       "model_num_parameters": params, "batch_size": 8},
            "model_name": model}


def _lmeval_v03(model: str, step: int, acc: dict[str, float]) -> dict:
    """The older shape (harness 0.3, as in EleutherAI/pythia's evals/): plain metric keys, no parameter count."""
    return {"results": {t: {"acc": a, "acc_stderr": 0.01} for t, a in acc.items()},
            "versions": {t: 0 for t in acc},
            "config": {"model": "gpt2", "model_args": f"pretrained={model},revision=step{step}", "num_fewshot": 0}}


@pytest.fixture
def lmeval_folder(tmp_path) -> Path:
    d = tmp_path / "results"
    for i, (name, n) in enumerate([("org/m-70m", "70M"), ("org/m-160m", "160M"), ("org/m-410m", "410M")]):
        params = {"70M": 7.0e7, "160M": 1.6e8, "410M": 4.1e8}[n]
        for step in (1000, 2000):
            acc = {"arc_easy": 0.40 + 0.05 * i + 0.01 * step / 1000, "piqa": 0.60 + 0.03 * i}
            sub = d / name.replace("/", "__")
            sub.mkdir(parents=True, exist_ok=True)
            (sub / f"results_step{step}.json").write_text(json.dumps(_lmeval_v04(name, step, params, acc)))
    return d


def test_lmeval_rows_read_model_step_params_tasks_and_stderr(lmeval_folder):
    rows = read_lmeval(lmeval_folder)
    assert len(rows) == 3 * 2 * 2  # models x steps x tasks
    row = next(r for r in rows if r["run_id"] == "org/m-160m" and r["step"] == "2000" and r["task"] == "arc_easy")
    assert row["model_params"] == "160000000.0" and row["revision"] == "step2000"
    assert float(row["acc"]) == pytest.approx(0.47) and float(row["acc_stderr"]) == 0.01
    assert "acc_norm" in row and "alias" not in row


def test_lmeval_old_format_reads_plain_metric_keys(tmp_path):
    f = tmp_path / "160m_step143000.json"
    f.write_text(json.dumps(_lmeval_v03("EleutherAI/pythia-160m", 143000, {"lambada_openai": 0.35})))
    (row,) = read_lmeval(f)
    assert row["run_id"] == "EleutherAI/pythia-160m" and row["step"] == "143000" and row["model_params"] == ""
    assert row["task"] == "lambada_openai" and float(row["acc"]) == 0.35


def test_lmeval_folder_without_results_is_one_line(tmp_path):
    (tmp_path / "notes.json").write_text(json.dumps({"hello": 1}))
    with pytest.raises(TableImportError, match="no lm-evaluation-harness results in this folder"):
        read_lmeval(tmp_path)


def test_lmeval_import_keeps_the_last_checkpoint_per_model_with_stderr_weights(lmeval_folder, tmp_path, capsys):
    db = str(tmp_path / "r.duckdb")
    assert main(["import-runs", str(lmeval_folder), "--from", "lm-eval", "--experiment", "lm", "--registry", db,
                 "--map", "acc=score", "--weight", "acc_stderr", "--set", "tokens=step*2097152",
                 "--map", "tokens=train_tokens", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rows"] == 3 and out["new_runs"] == 3 and out["new_metrics"] == 6  # 3 models x 2 tasks, last step
    assert any("kept the last checkpoint" in n for n in out["notes"])
    with Registry(db, read_only=True) as reg:
        runs = {r.run_id: r for r in reg.runs("lm")}
    assert set(runs) == {"org/m-70m", "org/m-160m", "org/m-410m"}  # the user's ids, verbatim
    r = runs["org/m-410m"]
    assert r.model_params == 4.1e8 and r.train_tokens == 2000 * 2097152 and r.metadata["step"] == 2000
    assert r.metrics["arc_easy/score"] == pytest.approx(0.52) and r.stderrs["arc_easy/score"] == 0.01


WANDB_UI = ("Name,ID,State,Runtime,params,tokens,n_tools,acc,acc_stderr,_timestamp\n"
            "run-a,a1,finished,100,70M,20B,4,0.41,0.01,1\n"
            "run-b,b1,finished,100,160M,20B,8,0.47,0.01,2\n"
            "run-c,c1,crashed,5,410M,20B,8,NaN,NaN,3\n"
            "run-d,d1,finished,100,410M,20B,16,0.55,0.012,4\n")


def test_wandb_ui_export_with_suffixes_nan_and_a_state_filter(tmp_path, capsys):
    f = tmp_path / "wandb_export.csv"
    f.write_text(WANDB_UI)
    db = str(tmp_path / "r.duckdb")
    assert main(["import-runs", str(f), "--from", "wandb", "--experiment", "wb", "--benchmark", "bfcl",
                 "--registry", db, "--where", "State = 'finished'", "--map", "params=model_size",
                 "--map", "tokens=train_tokens", "--axis", "n_tools", "--map", "n_tools=n_tools",
                 "--map", "acc=score", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rows"] == 3 and out["axes"] == ["n_tools"]
    with Registry(db, read_only=True) as reg:
        runs = {r.run_id: r for r in reg.runs("wb")}
    assert set(runs) == {"a1", "b1", "d1"}  # the W&B run ids
    assert runs["b1"].model_params == 1.6e8 and runs["b1"].model_size == "160M" and runs["b1"].train_tokens == 2e10


def test_wandb_api_export_expands_config_and_summary(tmp_path):
    import pandas as pd

    f = tmp_path / "project.csv"
    pd.DataFrame({"name": ["x", "y"],
                  "config": [str({"params": 7e7, "lr": 1e-3}), str({"params": 1.6e8, "lr": 1e-3})],
                  "summary": [json.dumps({"acc": 0.4, "lr": 0.0}), json.dumps({"acc": 0.5, "lr": 0.0})]}).to_csv(f)
    rows = read_wandb(f)
    assert rows[0]["run_id"] == "x" and rows[0]["params"] == "70000000.0" and rows[1]["acc"] == "0.5"
    assert rows[0]["config.lr"] == "0.001" and rows[0]["summary.lr"] == "0.0"  # a key in both keeps its prefix


@pytest.mark.parametrize("source", ["csv", "wandb"])
def test_import_keeps_the_users_run_ids_verbatim_spaces_included(tmp_path, source):
    """`--map id=run_id` stores each cell as it is: " run-2 " (unquoted) and "  run-3" (quoted) keep their spaces,
    and the row-by-row importer agrees with the bulk one."""
    from grid.importer import parse_column_map, rows_to_runs

    f = tmp_path / "runs.csv"
    f.write_text('id,params,tokens,acc\nrun-1,70M,20B,0.41\n run-2 ,160M,20B,0.47\n"  run-3",410M,20B,0.55\n')
    db = str(tmp_path / "r.duckdb")
    assert main(["import-runs", str(f), "--from", source, "--experiment", "e", "--benchmark", "bfcl", "--registry", db,
                 "--map", "id=run_id", "--map", "params=model_size", "--map", "tokens=train_tokens",
                 "--map", "acc=score"]) == 0
    with Registry(db, read_only=True) as reg:
        runs = {r.run_id: r for r in reg.runs("e")}
    assert set(runs) == {"run-1", " run-2 ", "  run-3"}
    assert runs[" run-2 "].model_params == 1.6e8 and runs["  run-3"].metrics["bfcl/score"] == 0.55
    rows = [{"id": " run-2 ", "params": "160M", "tokens": "20B", "acc": 0.47}]
    _, specs, _ = rows_to_runs(rows, parse_column_map(["id=run_id", "params=model_size", "tokens=train_tokens",
                                                       "acc=score"]), experiment="e", benchmark="bfcl")
    assert specs[0].run_id == " run-2 "
