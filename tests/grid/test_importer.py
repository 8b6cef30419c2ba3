"""import-runs: column maps, derived FLOPs/tokens, the held-out split, and bad files leave the registry unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from grid.errors import TableImportError
from grid.importer import parse_column_map, rows_to_runs
from grid.registry import Registry
from grid.split import heldout_mask
from toolscale.cli import main

CHINCHILLA = Path(__file__).resolve().parents[2].parent / "shared" / "reference" / "chinchilla" / \
    "chinchilla_fig4_points.csv"


def _table(tmp_path: Path, rows: list[dict], name: str = "runs.csv") -> Path:
    path = tmp_path / name
    frame = pd.DataFrame(rows)
    if name.endswith(".parquet"):
        frame.to_parquet(path)
    else:
        frame.to_csv(path, index=False)
    return path


ROWS = [{"id": f"run{i}", "N": 1e6 * 2 ** i, "D": 1e8, "acc": 0.1 * i, "tools": 4 * (i + 1), "note": "x"}
        for i in range(8)]
MAP = ["id=run_id", "N=model_size", "D=train_tokens", "acc=score", "tools=tool_diversity"]


def test_heldout_mask_known_list() -> None:
    assert heldout_mask([5, 1, 8, 3, 7, 2, 6, 4], 0.25) == [False, False, True, False, True, False, False, False]
    assert heldout_mask([1, 1, 2, 2], 0.25) == [False, False, True, True]  # ties held out together
    assert heldout_mask([1, 2, 3], 0.0) == [False, False, False]
    with pytest.raises(ValueError, match="fraction"):
        heldout_mask([1.0], 1.0)


def test_rows_to_runs_derives_flops_and_split() -> None:
    axes, runs, metrics = rows_to_runs(ROWS, parse_column_map(MAP), experiment="byo", benchmark="bfcl")
    assert axes == ["tool_diversity"]
    assert runs[3].train_flops == pytest.approx(6 * 8e6 * 1e8)
    assert [r.split for r in runs].count("heldout") == 2
    assert {r.split for r in runs[-2:]} == {"heldout"}
    assert metrics[2][0].benchmark == "bfcl" and metrics[2][0].score == pytest.approx(0.2)
    assert runs[0].metadata["columns"] == {"note": "x"}


def test_import_cli_csv_and_parquet_and_reimport_is_idempotent(tmp_path, capsys) -> None:
    db = str(tmp_path / "r.duckdb")
    for name in ("runs.csv", "runs.parquet"):
        path = _table(tmp_path, [{**r, "id": f"{name}-{r['id']}"} for r in ROWS], name)  # run ids are registry-wide
        args = ["import-runs", str(path), "--experiment", f"byo-{name}", "--benchmark", "bfcl", "--registry", db,
                "--json"] + [x for m in MAP for x in ("--map", m)]
        assert main(args) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["rows"] == 8 and out["new_runs"] == 8
        assert main(args) == 0
        assert json.loads(capsys.readouterr().out)["new_runs"] == 0
    with Registry(db, read_only=True) as reg:
        counts = reg.status_counts()
        assert counts["byo-runs.csv"]["done"] == 8 and counts["byo-runs.parquet"]["done"] == 8
        assert len(reg.metrics("byo-runs.csv")) == 8


@pytest.mark.parametrize(
    ("rows", "maps", "needle"),
    [
        (ROWS, ["missing=score"], "column 'missing' not in the file; columns: id, N, D"),
        ([{**r, "acc": "n/a"} if i == 2 else r for i, r in enumerate(ROWS)], ["acc=score"],
         "row 4: column 'acc' (score) must be a number, got 'n/a'"),
        (ROWS, ["N=model_size"], "must map a column to score"),
        (ROWS, ["acc"], "--map must be COLUMN=FIELD, got 'acc'"),
        (ROWS, ["acc=score", "N=Bad-Axis"], "--map target 'Bad-Axis' is unknown"),
        (ROWS, ["acc=score", "tools=tool_diversty"], "unknown (did you mean 'tool_diversity'?)"),
        (ROWS, ["acc=score", "N=stderr"], "a new axis needs --axis stderr"),
        ([{**r, "part": "train" if i == 3 else "fit"} for i, r in enumerate(ROWS)], ["acc=score", "part=split"],
         "row 5: column 'part' (split) must be fit or heldout, got 'train'"),
    ],
)
def test_bad_input_is_one_clear_line_and_registry_unchanged(tmp_path, capsys, rows, maps, needle) -> None:
    db = str(tmp_path / "r.duckdb")
    path = _table(tmp_path, ROWS, "good.csv")
    assert main(["import-runs", str(path), "--experiment", "keep", "--benchmark", "b", "--registry", db,
                 "--map", "acc=score"]) == 0
    bad = _table(tmp_path, rows, "bad.csv")
    capsys.readouterr()
    code = main(["import-runs", str(bad), "--experiment", "keep", "--benchmark", "b", "--registry", db,
                 *[x for m in maps for x in ("--map", m)]])
    err = capsys.readouterr().err
    assert code == 2
    assert needle in err
    assert err.count("\n") == 1
    with Registry(db, read_only=True) as reg:
        assert reg.status_counts()["keep"]["done"] == 8
        assert len(reg.metrics("keep")) == 8


def test_empty_and_header_only_files(tmp_path) -> None:
    from grid.importer import read_table

    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(TableImportError, match="the file is empty"):
        read_table(empty)
    header = tmp_path / "header.csv"
    header.write_text("a,b\n")
    with pytest.raises(TableImportError, match="header but no rows"):
        read_table(header)
    with pytest.raises(TableImportError, match="expected a .csv or .parquet"):
        read_table(_table(tmp_path, ROWS, "x.txt"))


@pytest.mark.skipif(not CHINCHILLA.exists(), reason="shared/reference/chinchilla not beside the checkout")
def test_import_chinchilla_points(tmp_path) -> None:
    db = str(tmp_path / "r.duckdb")
    assert main(["import-runs", str(CHINCHILLA), "--experiment", "chinchilla", "--benchmark", "pile-loss",
                 "--map", "Model Size=model_size", "--map", "Training FLOP=train_flops", "--map", "loss=loss",
                 "--registry", db]) == 0
    with Registry(db, read_only=True) as reg:
        runs = reg.runs("chinchilla")
    assert len(runs) == 245
    r = runs[0]
    assert r.train_tokens == pytest.approx(r.train_flops / (6 * r.model_params))
    assert r.metrics["pile-loss/loss"] > 0


def test_split_column_overrides_the_flops_rule() -> None:
    rows = [{**r, "part": "heldout" if i in (0, 1, 2) else "fit"} for i, r in enumerate(ROWS)]
    _, runs, _ = rows_to_runs(rows, parse_column_map([*MAP, "part=split"]), experiment="byo", benchmark="b")
    assert [r.split for r in runs] == ["heldout"] * 3 + ["fit"] * 5  # the smallest runs, not the top FLOPs
    assert "part" not in runs[0].metadata["columns"]


def test_empty_metric_cells_are_missing_values(tmp_path, capsys) -> None:
    rows = [{**r, "acc": "" if i == 1 else r["acc"]} for i, r in enumerate(ROWS)]
    _, runs, metrics = rows_to_runs(rows, parse_column_map(MAP), experiment="byo", benchmark="b")
    assert len(runs) == 8 and metrics[1] == [] and len(metrics[2]) == 1
    db = str(tmp_path / "r.duckdb")
    path = _table(tmp_path, rows)
    assert main(["import-runs", str(path), "--experiment", "byo", "--benchmark", "b", "--registry", db,
                 *[x for m in MAP for x in ("--map", m)]]) == 0
    with Registry(db, read_only=True) as reg:
        assert reg.status_counts()["byo"]["done"] == 8 and len(reg.metrics("byo")) == 7


NO_LADDER = """
[experiment]
name = "imported"

[[axes]]
name = "tool_diversity"
kind = "diversity"
unit = "tools"
min = 4
max = 32
levels = 3
integer = true
"""


def test_config_without_ladder_serves_imports_and_columns_named_like_axes_map_themselves(tmp_path, capsys) -> None:
    cfg = tmp_path / "imp.toml"
    cfg.write_text(NO_LADDER)
    assert main(["validate", str(cfg)]) == 0
    rows = [{"N": r["N"], "D": r["D"], "acc": r["acc"], "tool_diversity": r["tools"]} for r in ROWS]
    path = _table(tmp_path, rows)
    db = str(tmp_path / "r.duckdb")
    capsys.readouterr()
    assert main(["import-runs", str(path), "--experiment", "imp", "--benchmark", "b", "--registry", db,
                 "--config", str(cfg), "--map", "N=model_size", "--map", "D=train_tokens", "--map", "acc=score",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["axes"] == ["tool_diversity"]
    with Registry(db, read_only=True) as reg:
        recipes = [r.recipe for r in reg.runs("imp")]
    assert sorted(r["tool_diversity"] for r in recipes) == sorted(r["tools"] for r in ROWS)
    # designing needs model sizes: one line, exit 2
    assert main(["grid", "design", str(cfg), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "grid design needs model sizes: the config has no [[ladder]]" in err and err.count("\n") == 1


def test_tied_flops_never_hold_out_every_run() -> None:
    from grid.split import heldout_mask

    assert heldout_mask([1e18] * 8, 0.25) == [True] * 8  # the plain tie rule (designs size their top cell)
    assert heldout_mask([1e18] * 8, 0.25, min_fit=1) == [False] * 8
    assert heldout_mask([1.0, 2.0, 2.0, 2.0], 0.5, min_fit=2) == [False] * 4
    assert heldout_mask([1.0, 1.0, 2.0, 2.0], 0.25, min_fit=1) == [False, False, True, True]
    rows = [{"model": 1e6, "tokens": 1e9, "acc": 0.5 + i / 100} for i in range(8)]
    _, runs, _ = rows_to_runs(rows, parse_column_map(["model=model_size", "tokens=train_tokens", "acc=score"]),
                              experiment="tied", benchmark="b")
    assert [r.split for r in runs] == ["fit"] * 8
