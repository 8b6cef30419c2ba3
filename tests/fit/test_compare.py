"""Laws fitted per training-stage set, side by side."""

from __future__ import annotations

from pathlib import Path

import pytest

from fit.compare import StageComparison, comparison_markdown
from fit.experiment import fit_experiment
from fit.laws import law_of
from fit.models import FitRequest, FitSummary
from grid.registry import Registry
from toolscale.cli import main
from toolscale.config import parse_config

SMALL = Path(__file__).resolve().parent / "small.toml"


def test_two_stage_sets_fitted_apart_and_tabled(tmp_path, capsys):
    db = str(tmp_path / "r.duckdb")
    assert main(["simulate", "--config", str(SMALL), "--registry", db, "--experiment", "sim", "--noise", "0.01",
                 "--json"]) == 0
    capsys.readouterr()
    with Registry(db, read_only=True) as reg:
        runs = reg.runs("sim", status="done")
        config = parse_config(reg.experiment("sim").config)
    # every other run "went on to GRPO"
    runs = [r.model_copy(update={"metadata": {**r.metadata, "stages": {"sft": {}, **({"grpo": {}} if i % 2 else {})}}})
            for i, r in enumerate(runs)]
    fits = {}
    for stages in (["sft"], ["sft", "grpo"]):
        req = FitRequest(experiment="sim", benchmark="simulated", law="multiplicative", n_bootstrap=4, n_starts=2,
                         n_jobs=1, interaction_test=False, train_stages=stages)
        res = fit_experiment(runs, req, config=config)
        fits["+".join(stages)] = FitSummary.of(res.fit, formula=law_of(res.fit).formula)
    assert fits["sft"].n_points + fits["sft"].heldout_n + fits["sft+grpo"].n_points + fits["sft+grpo"].heldout_n \
        == len(runs)
    cmp = StageComparison(experiment="sim", benchmark="simulated", fits=fits)
    md = comparison_markdown(cmp)
    assert "| | sft | sft+grpo |" in md
    for name in fits["sft"].params:
        assert f"| {name} | " in md
    assert StageComparison.model_validate_json(cmp.model_dump_json()) == cmp
    with pytest.raises(Exception, match="no done run trained with stages midtrain"):
        fit_experiment(runs, FitRequest(experiment="sim", benchmark="simulated", train_stages=["midtrain", "sft"]),
                       config=config)


def test_compare_stages_needs_two_sets(capsys):
    assert main(["report", "--experiment", "e", "--benchmark", "b", "--compare-stages", "sft"]) == 2
    assert "at least two stage sets" in capsys.readouterr().err


def test_compare_axes_fits_the_same_runs_with_each_axis_set(tmp_path, capsys):
    db = str(tmp_path / "r.duckdb")
    assert main(["simulate", "--config", str(SMALL), "--registry", db, "--experiment", "sim", "--noise", "0.01",
                 "--json"]) == 0
    capsys.readouterr()
    out = tmp_path / "cmp"
    assert main(["report", "--registry", db, "--experiment", "sim", "--benchmark", "simulated", "--law", "saturating",
                 "--bootstrap", "4", "--starts", "2", "--jobs", "1", "--compare-axes", "tool_diversity,repair_rate",
                 "--compare-axes", "tool_diversity,task_count,repair_rate", "--out", str(out), "--json"]) == 0
    cmp = StageComparison.model_validate_json(capsys.readouterr().out)
    assert cmp.by == "axes" and list(cmp.fits) == ["tool_diversity,repair_rate", "tool_diversity,task_count,repair_rate"]
    a, b = cmp.fits.values()
    assert (a.n_points, a.heldout_n) == (b.n_points, b.heldout_n)  # the same runs, two laws
    assert "A_task_count" in b.params and "A_task_count" not in a.params
    md = (out / "axes.md").read_text()
    assert md.startswith("# Laws by axes: sim / simulated") and "| BIC |" in md and "cannot tell the axis sets" in md


@pytest.mark.parametrize("argv,needle", [
    (["--compare-axes", "a,b"], "at least two different axis sets"),
    (["--compare-axes", "a,b", "--compare-axes", "a,b"], "at least two different axis sets"),
    (["--compare-axes", "a", "--compare-axes", "b", "--compare-stages", "sft"], "not both"),
])
def test_compare_axes_bad_input_is_one_line(capsys, argv, needle):
    assert main(["report", "--experiment", "e", "--benchmark", "b", *argv]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1
