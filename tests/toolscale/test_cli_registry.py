"""toolscale/cli/registry.py: ``toolscale registry check`` on a good, a damaged and a truncated registry."""

from __future__ import annotations

import json
import shutil

from grid.models import MetricResult, RunSpec, run_id_for
from grid.registry import Registry
from toolscale.cli import main


def _registry(path) -> str:
    runs = [RunSpec(run_id=run_id_for("e", "v1", {"tool_diversity": float(i)}, "s", 0), experiment="e",
                    design_version="v1", recipe={"tool_diversity": float(i)}, model_size="s", model_params=1e5,
                    train_tokens=1e6, train_flops=6e11) for i in range(50)]
    with Registry(path) as reg:
        reg.import_runs("e", ["tool_diversity"], runs, [[MetricResult(benchmark="b", score=0.5)]] * 50)
    return str(path)


def test_check_good_then_truncated(tmp_path, capsys) -> None:
    good = _registry(tmp_path / "good.duckdb")
    assert main(["registry", "check", "--registry", good, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and {t["table"]: t["rows"] for t in report["tables"]}["runs"] == 50
    assert main(["registry", "check", "--registry", good]) == 0
    assert "ok, every table read" in capsys.readouterr().out
    bad = tmp_path / "bad.duckdb"
    shutil.copy(good, bad)
    with open(bad, "r+b") as fh:
        fh.truncate(bad.stat().st_size // 2)
    assert main(["registry", "check", "--registry", str(bad), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert not report["ok"]
    assert "corrupt or truncated" in report["error"] or any(not t["ok"] for t in report["tables"])
