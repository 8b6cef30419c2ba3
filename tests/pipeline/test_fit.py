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
