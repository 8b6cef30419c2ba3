"""`toolscale eval`: the command-line contract (gold scores 1.0, --json fields, one-line errors)."""

from __future__ import annotations

import json

import pytest

from toolscale.cli import main

from ..eval.test_bfcl import needs_wheel


@needs_wheel
def test_eval_gold_bfcl_json(capsys):
    assert main(["eval", "--model", "gold", "--benchmark", "bfcl", "--limit", "25", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"benchmark", "version", "score", "stderr", "n_items"} <= set(out)
    assert out["benchmark"] == "bfcl" and out["score"] == 1.0 and out["n_items"] == 25
    assert out["metrics"]["field_match"]["score"] == 1.0


@needs_wheel
def test_eval_table(capsys):
    assert main(["eval", "--model", "gold", "--benchmark", "bfcl", "--limit", "5"]) == 0
    assert "score 1.0000" in capsys.readouterr().out


def test_eval_list(capsys):
    assert main(["eval", "--list", "--json"]) == 0
    names = {b["name"] for b in json.loads(capsys.readouterr().out)}
    assert {"heldout-calls", "heldout-env", "bfcl"} <= names


@pytest.mark.parametrize("argv, needle, code", [
    (["eval", "--model", "gold", "--benchmark", "nope"], "unknown benchmark 'nope'", 2),
    (["eval", "--model", "gold"], "needs --model", 2),
    pytest.param(["eval", "--model", "/no/such/dir", "--benchmark", "bfcl", "--limit", "1"], "does not exist", 1,
                 marks=needs_wheel),
])
def test_eval_errors_are_one_line(capsys, argv, needle, code):
    assert main(argv) == code
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1


def test_eval_bad_limit(capsys):
    assert main(["eval", "--model", "gold", "--benchmark", "bfcl", "--limit", "0"]) == 2
    assert "must be a positive integer, got 0" in capsys.readouterr().err


def test_eval_gold_heldout_calls(capsys):
    assert main(["eval", "--model", "gold", "--benchmark", "heldout-calls", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["score"] == 1.0 and out["n_items"] > 100 and out["version"]


def test_eval_tiny_model_heldout_calls(tmp_path, capsys):
    """A real (random, tiny) model folder through the command: garbage output scored, not crashed."""
    from eval.heldout import build_heldout_calls

    from ..eval.tiny_model import save_tiny_model

    model = save_tiny_model(tmp_path / "m", build_heldout_calls(calls_per_domain=4, parallel_per_domain=1,
                                                                irrelevant_per_domain=1))
    assert main(["eval", "--model", model, "--benchmark", "heldout-calls", "--limit", "4", "--max-new-tokens", "16",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n_items"] == 4 and 0.0 <= out["score"] <= 0.5  # only irrelevance items can be right
    assert out["metrics"]["loss"]["score"] > 0 and out["metrics"]["loss"]["higher_is_better"] is False


@pytest.mark.slow
def test_eval_gold_heldout_env(capsys):
    pytest.importorskip("synth.envs.api")
    assert main(["eval", "--model", "gold", "--benchmark", "heldout-env", "--limit", "10", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["score"] == 1.0 and out["n_items"] == 10 and out["metrics"]["f1"]["score"] == 1.0
