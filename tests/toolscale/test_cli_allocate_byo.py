"""`allocate` on imported runs: it says which model and token count it plans for, needs them when nothing else
says, and reports unspent budget and the caps that bound the plan."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from toolscale.cli import main

CONFIG = """
[experiment]
name = "byo"

[[axes]]
name = "tool_diversity"
kind = "diversity"
unit = "tools"
min = 4
max = 16
levels = 3
integer = true
cost_per_unit = 10.0

[[axes]]
name = "repair_rate"
kind = "quality"
unit = "fraction"
min = 0.0
max = 1.0
levels = 2
spacing = "linear"
cost_per_unit = 100.0
"""


@pytest.fixture(scope="module")
def byo(tmp_path_factory) -> tuple[str, str]:
    """Imported runs (a W&B-shaped table with sizes as 70M, 160M...) with a stored saturating fit."""
    d = tmp_path_factory.mktemp("byo")
    rng = np.random.default_rng(0)
    rows = []
    for n, label in ((7e7, "70M"), (1.6e8, "160M"), (4.1e8, "410M"), (1.4e9, "1.4B")):
        for tools in (4, 8, 16):
            for rr in (0.0, 1.0):
                acc = 0.8 - 0.3 * (n / 7e7) ** -0.3 - 0.15 * (tools / 4) ** -0.6 + 0.03 * rr + rng.normal(0, 0.004)
                rows.append({"ID": f"r-{label}-{tools}-{rr:g}", "params": label, "tokens": "20B", "n_tools": tools,
                             "repair": rr, "acc": round(acc, 4), "State": "finished"})
    path = d / "wandb.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    (d / "byo.toml").write_text(CONFIG)
    db = str(d / "r.duckdb")
    assert main(["import-runs", str(path), "--from", "wandb", "--experiment", "byo", "--benchmark", "bfcl",
                 "--registry", db, "--map", "params=model_size", "--map", "tokens=train_tokens",
                 "--map", "n_tools=tool_diversity", "--map", "repair=repair_rate", "--map", "acc=score"]) == 0
    assert main(["fit", "--registry", db, "--experiment", "byo", "--benchmark", "bfcl", "--law", "saturating",
                 "--bootstrap", "16", "--jobs", "1", "--no-interaction"]) == 0
    return db, str(d / "byo.toml")


def test_imported_runs_without_a_model_size_or_tokens_are_refused_and_change_nothing(byo, capsys):
    db, cfg = byo
    before = hashlib.sha256(Path(db).read_bytes()).hexdigest()
    capsys.readouterr()
    for extra in ([], ["--model-size", "1.4B"]):
        assert main(["allocate", "--budget", "5000", "--benchmark", "bfcl", "--registry", db, "--config", cfg,
                     *extra]) == 2
        err = capsys.readouterr().err
        assert "imported runs and the config has no [[ladder]]: pass --model-size N" in err
        assert err.strip().count("\n") == 0
    assert hashlib.sha256(Path(db).read_bytes()).hexdigest() == before


def test_allocate_says_what_it_assumed_unspent_budget_and_caps(byo, capsys):
    db, cfg = byo
    capsys.readouterr()
    assert main(["allocate", "--budget", "1e9", "--benchmark", "bfcl", "--registry", db, "--config", cfg,
                 "--model-size", "1.4B", "--tokens", "300B"]) == 0
    text = capsys.readouterr().out
    assert "planned for a model of N = 1.4e+09 parameters (--model-size) and 3e+11 training tokens (--tokens)" in text
    assert "unspent" in text and "cap: tool_diversity at 20 tools (1.25 x its largest tested level 16" in text
    assert main(["allocate", "--budget", "1e9", "--benchmark", "bfcl", "--registry", db, "--config", cfg,
                 "--model-size", "1.4B", "--tokens-per-param", "20", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["tokens"] == pytest.approx(2.8e10) and out["tokens_source"].startswith("--tokens-per-param")
    assert out["unspent"] > 0.99e9 and set(out["caps"]) == {"tool_diversity", "repair_rate"}
    assert out["plan"]["levels"]["tool_diversity"] == 20 and out["extrapolation_detail"]["tool_diversity"] == 1.25


def test_extrapolate_allows_more_and_widens_the_interval(byo, capsys):
    db, cfg = byo
    common = ["allocate", "--budget", "1e9", "--benchmark", "bfcl", "--registry", db, "--config", cfg,
              "--model-size", "1.4B", "--tokens", "300B", "--json"]
    assert main(common) == 0
    near = json.loads(capsys.readouterr().out)
    assert main([*common, "--extrapolate", "4"]) == 0
    far = json.loads(capsys.readouterr().out)
    assert far["plan"]["levels"]["tool_diversity"] == 64 and far["max_extrapolation"] == 4
    assert far["extrapolation_detail"]["tool_diversity"] == pytest.approx(4.0)
    width = [x["interval"][1] - x["interval"][0] for x in (near, far)]
    assert width[1] > width[0]  # two doublings past the tested maximum instead of a third of one
