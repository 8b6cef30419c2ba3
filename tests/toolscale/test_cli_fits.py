"""`toolscale fits list|show|diff`, `--fit-id`, and `predict`'s guards on its inputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolscale.cli import main

SMALL = Path(__file__).resolve().parents[1] / "fit" / "small.toml"


@pytest.fixture(scope="module")
def two_fits(tmp_path_factory) -> tuple[str, str, str]:
    """A simulated experiment with two stored fits: saturating, then additive (the newest)."""
    db = str(tmp_path_factory.mktemp("fits") / "r.duckdb")
    assert main(["simulate", "--config", str(SMALL), "--registry", db, "--experiment", "sim", "--noise", "0.01"]) == 0
    ids = []
    for law in ("saturating", "additive"):
        common = ["--registry", db, "--experiment", "sim", "--benchmark", "simulated", "--law", law,
                  "--bootstrap", "0", "--starts", "2", "--no-interaction"]
        assert main(["fit", *common]) == 0
    from grid.registry import Registry

    with Registry(db, read_only=True) as reg:
        ids = [f.fit_id for f in reg.fits("sim")]
    return db, ids[1], ids[0]  # saturating, additive


def test_fits_list_show_and_diff(two_fits, capsys):
    db, sat, add = two_fits
    capsys.readouterr()
    assert main(["fits", "list", "--registry", db, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["fits"]
    assert [r["fit_id"] for r in rows] == [add, sat] and rows[0]["law"] == "additive"
    assert main(["fits", "show", sat, "--registry", db]) == 0
    text = capsys.readouterr().out
    assert f"stored as {sat}" in text and "formula: S = S_max - sum_k A_k t_k^(-alpha_k)" in text
    assert main(["fits", "diff", sat, add, "--registry", db, "--json"]) == 0
    diff = json.loads(capsys.readouterr().out)
    assert diff["fields"]["law"] == ["saturating", "additive"]
    assert diff["params"]["S_max"]["b"] is None and diff["params"]["S0"]["a"] is None


def test_predict_uses_the_fit_id_given_not_the_newest(two_fits, capsys):
    db, sat, add = two_fits
    at = "model_size=2e6,tool_diversity=8,task_count=128,repair_rate=0.5"
    assert main(["predict", "--registry", db, "--fit-id", sat, "--at", at, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["fit_id"] == sat and out["law"] == "saturating"
    assert main(["predict", "--registry", db, "--experiment", "sim", "--benchmark", "simulated", "--at", at,
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["fit_id"] == add


def test_predict_flags_every_input_outside_its_fitted_range(two_fits, capsys):
    db, sat, _ = two_fits
    assert main(["predict", "--registry", db, "--fit-id", sat, "--json",
                 "--at", "model_size=5e9,tool_diversity=400,task_count=128,repair_rate=0.5"]) == 0
    (p,) = json.loads(capsys.readouterr().out)["points"]
    assert p["beyond_range"] and set(p["beyond_inputs"]) == {"N", "tool_diversity"}
    assert p["beyond_inputs"]["tool_diversity"] == pytest.approx(10.0)  # 400 / the largest fitted level, 40


@pytest.mark.parametrize(("at", "needle"), [
    ("model_size=2e6,tool_diversity=8,task_count=128,repair_rate=0.5,foo=3", "unknown input 'foo'"),
    ("model_size=2e6,tool_diversty=8,task_count=128,repair_rate=0.5", "unknown input 'tool_diversty' (did you mean "
                                                                      "'tool_diversity'?)"),
    ("model_size=2e6,tool_diversity=8,task_count=128,repair_rate=1.5", "repair_rate is a fraction and must be in "
                                                                       "[0, 1], got 1.5"),
    ("model_size=2e6,tool_diversity=-5,task_count=128,repair_rate=0.5", "tool_diversity must be > 0"),
    ("model_size=0,tool_diversity=8,task_count=128,repair_rate=0.5", "model_size must be > 0"),
])
def test_predict_refuses_unknown_inputs_and_values_outside_their_domain(two_fits, capsys, at, needle):
    db, sat, _ = two_fits
    capsys.readouterr()
    assert main(["predict", "--registry", db, "--fit-id", sat, "--at", at]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.strip().count("\n") == 0


def test_unknown_fit_id_is_one_line(two_fits, capsys):
    db, _, _ = two_fits
    assert main(["fits", "show", "f-nope", "--registry", db]) == 2
    assert "unknown fit id 'f-nope'" in capsys.readouterr().err


def test_allocate_takes_the_benchmark_from_the_fit_id(two_fits, capsys):
    db, sat, _ = two_fits
    capsys.readouterr()
    common = ["allocate", "--registry", db, "--budget", "5000", "--fit-id", sat, "--json"]
    assert main([*common, "--benchmark", "simulated"]) == 0
    named = json.loads(capsys.readouterr().out)
    assert main(common) == 0
    implied = json.loads(capsys.readouterr().out)
    assert implied["benchmark"] == "simulated" and implied["fit_id"] == named["fit_id"] == sat
    assert implied["plan"]["levels"] == named["plan"]["levels"]
    assert main(["allocate", "--registry", db, "--budget", "5000"]) == 2
    assert "allocate needs --benchmark NAME (a stored fit's --fit-id ID names its own)" in capsys.readouterr().err
    assert main(["allocate", "--registry", db, "--budget", "5000", "--fit-id", "f-nope"]) == 2
    assert "unknown fit id 'f-nope'" in capsys.readouterr().err


def test_the_header_says_converged_at_a_bound(capsys):
    """``converged=True`` beside a parameter stuck at its bound reads as a clean fit: the header says how many
    free parameters sit at a bound (a held one does not count)."""
    from fit.models import FitResult, FitSummary
    from toolscale.cli.fits import render_fit

    base = dict(law="saturating", inputs=[], params={"a": 1.0, "b": 0.5, "c": 2.0}, target="score", loss=0.01,
                converged=True, n_points=40, n_params=3, data_hash="h", huber_delta=1.0, n_starts=4, residual_sd=0.01,
                log_likelihood=0.0, aic=0.0, bic=0.0, experiment="e", benchmark="b", metric="score")
    for update, header in (({}, "converged=True; stored as f-1"),
                           ({"at_bounds": ["b", "c"], "fixed": {"c": 2.0}}, "converged=True (1 at a bound: b); stored")):
        f = FitResult(**{**base, **update})
        render_fit(f, FitSummary.of(f, "f-1"), "f-1")
        assert header in capsys.readouterr().out.splitlines()[0]
