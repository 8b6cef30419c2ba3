"""Shared fixtures of the CLI tests: an experiment of imported runs, as a user brings them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from toolscale.cli import main

BYO_CONFIG = """
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


@pytest.fixture(scope="session")
def byo_config() -> str:
    """The config of the imported experiment: a diversity axis (tools, 4-16) and a quality axis (repair rate)."""
    return BYO_CONFIG


@pytest.fixture(scope="session")
def make_byo() -> Callable[[Path, int], tuple[str, str]]:
    """``make(folder, bootstrap) -> (registry, config path)``: imported runs (a W&B-shaped table with sizes as 70M,
    160M..., no [[ladder]] anywhere) with a stored saturating fit of ``bootstrap`` draws, and no allocation."""

    def make(d: Path, bootstrap: int) -> tuple[str, str]:
        rng = np.random.default_rng(0)
        rows = []
        for n, label in ((7e7, "70M"), (1.6e8, "160M"), (4.1e8, "410M"), (1.4e9, "1.4B")):
            for tools in (4, 8, 16):
                for rr in (0.0, 1.0):
                    acc = 0.8 - 0.3 * (n / 7e7) ** -0.3 - 0.15 * (tools / 4) ** -0.6 + 0.03 * rr + rng.normal(0, 0.004)
                    rows.append({"ID": f"r-{label}-{tools}-{rr:g}", "params": label, "tokens": "20B",
                                 "n_tools": tools, "repair": rr, "acc": round(acc, 4), "State": "finished"})
        path = d / "wandb.csv"
        pd.DataFrame(rows).to_csv(path, index=False)
        (d / "byo.toml").write_text(BYO_CONFIG)
        db = str(d / "r.duckdb")
        assert main(["import-runs", str(path), "--from", "wandb", "--experiment", "byo", "--benchmark", "bfcl",
                     "--registry", db, "--map", "params=model_size", "--map", "tokens=train_tokens",
                     "--map", "n_tools=tool_diversity", "--map", "repair=repair_rate", "--map", "acc=score"]) == 0
        assert main(["fit", "--registry", db, "--experiment", "byo", "--benchmark", "bfcl", "--law", "saturating",
                     "--bootstrap", str(bootstrap), "--jobs", "1", "--no-interaction"]) == 0
        return db, str(d / "byo.toml")

    return make
