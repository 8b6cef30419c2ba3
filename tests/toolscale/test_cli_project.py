"""``toolscale ingest``: its --json is the IngestReport model, with the unreadable files' problems first."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from grid.models import IngestReport, MetricResult, RunResult, RunSpec, run_id_for
from grid.registry import Registry
from grid.results import write_result
from toolscale.cli import main


def test_ingest_json_is_the_ingest_report(tmp_path, capsys) -> None:
    recipe = {"tool_diversity": 4.0}
    spec = RunSpec(run_id=run_id_for("e1", "v1", recipe, "m", 0), experiment="e1", design_version="v1",
                   recipe=recipe, model_size="m", seed=0)
    db = tmp_path / "r.duckdb"
    with Registry(db) as reg:
        reg.add_runs([spec], code="c0")
    folder = tmp_path / "results"
    stamp = datetime.now(UTC)
    for run_id in (spec.run_id, "r-ghost"):
        write_result(folder, RunResult(run_id=run_id, experiment="e1", status="done", finished_at=stamp,
                                       metrics=[MetricResult(benchmark="b", score=0.5)]))
    (folder / "broken.result.json").write_text("{not json")
    assert main(["ingest", str(folder), "--registry", str(db), "--json"]) == 0
    report = IngestReport.model_validate(json.loads(capsys.readouterr().out))
    assert (report.ingested, report.duplicate, report.unknown_run) == (1, 0, 1)
    assert len(report.problems) == 2 and "broken.result.json" in report.problems[0]
    assert report.problems[1].endswith("unknown run r-ghost")
    assert main(["ingest", str(folder), "--registry", str(db)]) == 0
    assert "ingested 0 results (1 already in, 1 unknown runs, 2 problems)" in capsys.readouterr().out
