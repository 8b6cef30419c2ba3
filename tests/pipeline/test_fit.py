"""fit's registry edge (pipeline/fit.py): the MCP ``fit_summary`` tool and ``fit --json`` are one object."""

from __future__ import annotations

import json

from toolscale.cli import main


def test_mcp_fit_summary_is_fit_json_decision_accuracy_included(tmp_path, capsys) -> None:
    """Simulated results over a config's design, fitted once; the stored fit read back through the MCP tool's
    function equals what ``fit --json`` printed, the decision accuracies included (they were missing)."""
    from pipeline.fit import stored_summary
    from toolscale.cli.project import example_config_text

    cfg = tmp_path / "c.toml"
    cfg.write_text(example_config_text("micro"))
    db = str(tmp_path / "r.duckdb")
    assert main(["simulate", "--config", str(cfg), "--registry", db, "--experiment", "simx", "--benchmark", "sim",
                 "--seed", "1"]) == 0
    capsys.readouterr()
    assert main(["fit", "--config", str(cfg), "--registry", db, "--experiment", "simx", "--benchmark", "sim",
                 "--bootstrap", "0",
                 "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    stored = stored_summary(db, "sim").model_dump(mode="json")
    assert printed["decision_accuracy"] is not None and stored["decision_accuracy"] == printed["decision_accuracy"]
    for key in ("law", "params", "heldout_mae", "decision_accuracy_law", "interaction", "formula"):
        assert stored[key] == printed[key], key


def test_the_fit_edge_reads_fits_and_stores(tmp_path, capsys) -> None:
    """pipeline.fit.load_runs -> fit_loaded -> store_fit (what ``toolscale fit`` runs): the registry's only
    experiment is found, the stored fit reads back with the fitted parameters, and a registry with two experiments
    is refused naming both."""
    import pytest

    from fit.models import FitRequest
    from pipeline.fit import fit_loaded, load_runs, store_fit, stored_summary
    from toolscale.cli.project import example_config_text
    from toolscale.errors import UsageError

    cfg = tmp_path / "c.toml"
    cfg.write_text(example_config_text("micro"))
    db = str(tmp_path / "r.duckdb")
    assert main(["simulate", "--config", str(cfg), "--registry", db, "--experiment", "simx", "--benchmark", "sim",
                 "--seed", "1"]) == 0
    loaded = load_runs(db, None)
    assert loaded.experiment == "simx" and loaded.simulated and loaded.config is not None
    assert {r.status for r in loaded.runs} == {"done"}
    request = FitRequest(experiment="simx", benchmark="sim", law="multiplicative", n_bootstrap=0, n_starts=2,
                         interaction_test=False)
    fit = fit_loaded(loaded, request).fit
    assert fit.law == "multiplicative" and fit.n_points == sum(r.split == "fit" for r in loaded.runs)
    fit_id = store_fit(db, fit)
    stored = stored_summary(db, "sim", experiment="simx", fit_id=fit_id).model_dump(mode="json")
    assert stored["fit_id"] == fit_id and {k: v["estimate"] for k, v in stored["params"].items()} == pytest.approx(fit.params)
    assert main(["simulate", "--config", str(cfg), "--registry", db, "--experiment", "simy", "--benchmark", "sim",
                 "--seed", "2"]) == 0
    capsys.readouterr()
    with pytest.raises(UsageError, match="simx, simy|simy, simx"):
        load_runs(db, None)
