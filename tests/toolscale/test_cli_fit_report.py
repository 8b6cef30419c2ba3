"""`report`'s allocation chart (toolscale/cli/fit_report.py): `--sweep` plans on imported runs at `--model-size`
and `--tokens`/`--tokens-per-param`, bad values are refused in one line, and stored allocations are drawn as one
line only for one model (N, D), the report saying which and how many it left out."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from toolscale.cli import main

@pytest.fixture(scope="module")
def byo(tmp_path_factory, make_byo) -> tuple[str, str]:
    """The imported experiment of ``conftest.make_byo`` (no [[ladder]] anywhere), 8 bootstrap draws, no allocation."""
    return make_byo(tmp_path_factory.mktemp("byo_report"), 8)


def _report(db: str, cfg: str, out: Path, *extra: str) -> int:
    return main(["report", "--registry", db, "--config", cfg, "--benchmark", "bfcl", "--out", str(out), *extra])


def _written(out: Path) -> tuple[dict, str]:
    """The report's JSON file and Markdown."""
    return json.loads((out / "byo__bfcl.json").read_text()), (out / "byo__bfcl.md").read_text()


@pytest.mark.parametrize("d_args, tokens, d_source", [
    (["--tokens", "300B"], 3e11, "--tokens"),
    (["--tokens-per-param", "20"], 2.8e10, "--tokens-per-param (20 x N)"),
])
def test_sweep_on_imported_runs_plans_at_the_model_size_and_tokens_given(byo, tmp_path, capsys, d_args, tokens,
                                                                          d_source):
    db, cfg = byo
    before = hashlib.sha256(Path(db).read_bytes()).hexdigest()
    out = tmp_path / "rep"
    capsys.readouterr()
    assert _report(db, cfg, out, "--sweep", "1000:10000:3", "--model-size", "1.4B", *d_args, "--json") == 0
    basis = json.loads(capsys.readouterr().out)["allocation"]
    assert basis["swept"] is True and basis["plans"] == 3 and basis["left_out"] == 0
    assert basis["model_params"] == pytest.approx(1.4e9) and basis["tokens"] == pytest.approx(tokens)
    assert basis["model_source"] == "--model-size" and basis["tokens_source"] == d_source
    data, md = _written(out)
    assert [round(a["budget"]) for a in data["allocations"]] == [1000, 3162, 10000]
    assert data["allocation_basis"] == basis
    assert (f"Planned now for this report (`--sweep`, not stored) at 3 budgets (usd), for N = 1.4e+09 parameters "
            f"(--model-size) and D = {tokens:.3g} training tokens ({d_source}).") in md
    assert (out / "byo__bfcl_plots" / "allocation.png").stat().st_size > 0
    assert hashlib.sha256(Path(db).read_bytes()).hexdigest() == before  # the sweep's plans are not stored


def test_a_sweep_for_a_model_outside_the_fitted_sizes_says_so(byo, tmp_path, capsys):
    """The chart's plans for a model 10x smaller than any fitted run (70M-410M fitted) are extrapolations, and
    the report says so beside the chart; a model inside the fitted sizes gets no such sentence."""
    db, cfg = byo
    capsys.readouterr()
    said = {}
    for size in ("160M", "7M"):
        out = tmp_path / size
        assert _report(db, cfg, out, "--sweep", "1000:10000:2", "--model-size", size, "--tokens", "20B",
                       "--json") == 0
        said[size] = (json.loads(capsys.readouterr().out)["allocation"]["size_extrapolation"], _written(out)[1])
    assert said["160M"][0] == {} and "outside the fitted runs" not in said["160M"][1]
    assert said["7M"][0] == {"N": pytest.approx(10.0)}
    assert "This model lies outside the fitted runs (model size x10): every plan extrapolates the law there." \
        in said["7M"][1]


def test_sweep_on_imported_runs_without_a_model_still_says_what_to_pass(byo, tmp_path, capsys):
    db, cfg = byo
    capsys.readouterr()
    assert _report(db, cfg, tmp_path / "rep", "--sweep", "1000:10000:3", "--tokens", "300B") == 2
    err = capsys.readouterr().err
    assert "pass --model-size N (e.g. 1.4B)" in err and err.strip().count("\n") == 0


@pytest.mark.parametrize("extra, named", [
    (["--sweep", "1000:10000:3", "--model-size", "banana", "--tokens", "300B"], "--model-size must be a positive "
                                                                                "count (1.4e9, 70M, 300B), got 'banana'"),
    (["--sweep", "1000:10000:3", "--model-size", "0", "--tokens", "300B"], "got '0'"),
    (["--sweep", "1000:10000:3", "--model-size", "1.4B", "--tokens", "lots"], "--tokens must be a positive count "
                                                                              "(1.4e9, 70M, 300B), got 'lots'"),
    (["--sweep", "1000:10000:3", "--model-size", "1.4B", "--tokens-per-param", "-3"], "got -3"),
    (["--sweep", "1000:10000:3", "--model-size", "1.4B", "--tokens", "3e11", "--tokens-per-param", "20"],
     "give --tokens or --tokens-per-param, not both"),
    (["--model-size", "1.4B"], "--model-size sets the model of --sweep's plans; add --sweep"),
    (["--tokens-per-param", "20"], "--tokens-per-param sets the model of --sweep's plans"),
])
def test_bad_model_size_or_tokens_exit_2_in_one_line_naming_the_value(byo, tmp_path, capsys, extra, named):
    db, cfg = byo
    out = tmp_path / "rep"
    capsys.readouterr()
    assert _report(db, cfg, out, *extra) == 2
    err = capsys.readouterr().err
    assert named in err and err.strip().count("\n") == 0, err
    assert not (out / "byo__bfcl.md").exists()


def _allocate(db: str, cfg: str, budget: str, n: str, d: str) -> None:
    assert main(["allocate", "--budget", budget, "--benchmark", "bfcl", "--registry", db, "--config", cfg,
                 "--model-size", n, "--tokens", d, "--json"]) == 0


def test_stored_allocations_are_drawn_only_at_the_newest_ones_model(byo, tmp_path, capsys):
    src, cfg = byo
    db = str(tmp_path / "r.duckdb")
    shutil.copyfile(src, db)
    _allocate(db, cfg, "1000", "1.4B", "20B")
    _allocate(db, cfg, "5000", "1.4B", "20B")
    _allocate(db, cfg, "20000", "7B", "300B")  # the newest: another model
    capsys.readouterr()
    assert _report(db, cfg, tmp_path / "a", "--json") == 0
    basis = json.loads(capsys.readouterr().out)["allocation"]
    assert basis == {"swept": False, "model_params": 7e9, "tokens": 3e11, "model_source": "--model-size",
                     "tokens_source": "--tokens", "unit": "usd", "plans": 1, "left_out": 2,
                     "size_extrapolation": {"N": pytest.approx(7e9 / 4.1e8)}}  # fitted: 70M-410M
    data, md = _written(tmp_path / "a")
    assert [a["budget"] for a in data["allocations"]] == [20000.0]
    assert ("The fit's stored allocations at 1 budget (usd), for the newest one's N = 7e+09 parameters "
            "(--model-size) and D = 3e+11 training tokens (--tokens). This model lies outside the fitted runs (model "
            "size x17.1): every plan extrapolates the law there. Left out: 2 stored allocation(s) at another N, D "
            "or unit") in md
    assert "Left out: 2 stored allocation(s)" in (tmp_path / "a" / "byo__bfcl.html").read_text()

    _allocate(db, cfg, "2000", "1.4B", "20B")  # now the newest is at 1.4B and 20B again
    capsys.readouterr()
    assert _report(db, cfg, tmp_path / "b", "--json") == 0
    basis = json.loads(capsys.readouterr().out)["allocation"]
    assert (basis["model_params"], basis["tokens"], basis["plans"], basis["left_out"]) == (1.4e9, 2e10, 3, 1)
    data, md = _written(tmp_path / "b")
    assert sorted(a["budget"] for a in data["allocations"]) == [1000.0, 2000.0, 5000.0]
    assert "N = 1.4e+09 parameters (--model-size) and D = 2e+10 training tokens (--tokens). This model" in md
    assert "(model size x3.41): every plan extrapolates the law there. Left out: 1" in md
