"""``toolscale grid design`` and grid/planner.py: the command-line contract and registry writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grid.models import DesignSummary
from grid.registry import Registry
from toolscale.cli import main


@pytest.fixture
def micro(tmp_path: Path) -> Path:
    path = tmp_path / "micro.toml"
    assert main(["init", str(path), "--preset", "micro"]) == 0
    text = path.read_text().replace('registry = "./toolscale.duckdb"', f'registry = "{tmp_path / "reg.duckdb"}"')
    path.write_text(text)
    return path


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_dry_run_json_contract(micro, capsys):
    code, out, _ = _run(capsys, "grid", "design", str(micro), "--dry-run", "--json")
    assert code == 0
    report = json.loads(out)
    for key in ("runs", "resolution", "levels", "heldout_runs", "extrapolation_factor"):
        assert key in report
    assert 16 <= report["runs"] <= 24 and report["resolution"] == 3  # the micro preset: 2^(6-3) + center
    assert report["extrapolation_factor"] >= 16 and report["written"] is None
    assert set(report["levels"]) == {"tool_diversity", "task_count", "db_diversity", "repair_rate",
                                     "coverage_quota", "support_depth"}
    assert not (micro.parent / "reg.duckdb").exists()  # dry run writes nothing
    extra = {"dry_run", "written", "alias"}
    assert DesignSummary.model_validate({k: v for k, v in report.items() if k not in extra}).runs == report["runs"]


def test_design_writes_pending_runs_and_rerun_changes_nothing(micro, capsys):
    code, out, _ = _run(capsys, "grid", "design", str(micro))
    assert code == 0 and "recorded 24 pending runs" in out
    with Registry(micro.parent / "reg.duckdb", read_only=True) as reg:
        runs = reg.runs("toolscale-micro")
        designs = reg.designs("toolscale-micro")
    assert len(runs) == 24 and {r.status for r in runs} == {"pending"}
    assert sum(r.split == "heldout" for r in runs) == 6
    assert len(designs) == 1 and designs[0]["summary"]["runs"] == 24
    code, out, _ = _run(capsys, "grid", "design", str(micro), "--json")
    assert code == 0 and json.loads(out)["written"]["new_runs"] == 0
    with Registry(micro.parent / "reg.duckdb", read_only=True) as reg:
        assert len(reg.runs("toolscale-micro")) == 24 and len(reg.designs("toolscale-micro")) == 1


def test_changed_config_needs_new_version(micro, capsys):
    assert _run(capsys, "grid", "design", str(micro))[0] == 0
    micro.write_text(micro.read_text().replace("center_points = 1 ", "center_points = 2 "))
    code, _, err = _run(capsys, "grid", "design", str(micro))
    assert code == 2 and "already has design version" in err and "--new-version" in err
    errors = [line for line in err.strip().splitlines() if not line.startswith("warning:")]  # the copy-depth warning
    assert len(errors) == 1
    with Registry(micro.parent / "reg.duckdb", read_only=True) as reg:
        assert len(reg.runs("toolscale-micro")) == 24  # nothing written
    code, out, _ = _run(capsys, "grid", "design", str(micro), "--new-version", "--json")
    written = json.loads(out)["written"]
    assert code == 0 and written["new_runs"] > 0 and len(written["other_versions"]) == 1
    with Registry(micro.parent / "reg.duckdb", read_only=True) as reg:
        versions = {r.design_version for r in reg.runs("toolscale-micro")}
    assert len(versions) == 2


def test_text_output_of_a_write_and_of_an_unchanged_rerun(micro, capsys):
    code, out, _ = _run(capsys, "grid", "design", str(micro))
    assert code == 0 and "recorded " in out and "pending runs (0 already present)" in out
    code, out, _ = _run(capsys, "grid", "design", str(micro))
    assert code == 0 and "unchanged: design d-" in out and "runs were already recorded" in out


def test_json_is_the_design_report_and_show_runs_adds_the_runs(micro, capsys):
    from grid.design import DesignReport

    code, out, _ = _run(capsys, "grid", "design", str(micro), "--dry-run", "--json", "--show-runs")
    report = DesignReport.model_validate(json.loads(out))
    assert code == 0 and report.dry_run and report.written is None and len(report.run_list) == report.runs
    code, out, _ = _run(capsys, "grid", "design", str(micro), "--json")
    report = DesignReport.model_validate(json.loads(out))
    assert "run_list" not in json.loads(out) and report.written.new_runs == report.runs and not report.dry_run


def test_text_output_names_the_essentials(micro, capsys):
    code, out, _ = _run(capsys, "grid", "design", str(micro), "--dry-run")
    assert code == 0
    assert "resolution III" in out and "held out" in out and "dry run: nothing written" in out
    assert "alias:" in out


def test_bad_config_is_one_line_exit_2(micro, capsys):
    micro.write_text(micro.read_text().replace("resolution = 3 ", "resolution = 4 "))
    code, _, err = _run(capsys, "grid", "design", str(micro))
    assert code == 2
    assert "resolution IV over 6 axes cannot be reached" in err and "16 points reach it" in err
    assert len(err.strip().splitlines()) == 1
    assert not (micro.parent / "reg.duckdb").exists()


def test_help_has_an_example(capsys):
    code, out, _ = _run(capsys, "grid", "design", "--help")
    assert code == 0 and "toolscale grid design my.toml --dry-run" in out


def test_empty_axis_range_is_one_line_and_writes_nothing(micro, capsys):
    text = micro.read_text().replace("min = 64\nmax = 1024", "min = 64\nmax = 64")
    assert text != micro.read_text()
    micro.write_text(text)
    code, _, err = _run(capsys, "grid", "design", str(micro))
    assert code == 2 and "empty range" in err and "task_count" in err
    assert len(err.strip().splitlines()) == 1
    assert not (micro.parent / "reg.duckdb").exists()
