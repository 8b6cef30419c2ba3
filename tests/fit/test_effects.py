"""Paired effects of a two-level axis, per size, with t intervals over seeds."""

from __future__ import annotations

import pytest
from scipy import stats

from fit.effects import paired_effects
from fit.errors import FitInputError
from grid.models import RunRecord


def _run(i, size, mid, seed, value, grpo=0.0):
    return RunRecord.model_construct(run_id=f"r{i}", recipe={"midtrain_tokens": mid, "grpo_steps": grpo},
                                     model_size=size, seed=seed, metrics={"b/score": value})


def test_paired_differences_and_their_interval():
    runs = [_run(0, "s", 0.0, 0, 0.10), _run(1, "s", 100.0, 0, 0.13),
            _run(2, "s", 0.0, 1, 0.20), _run(3, "s", 100.0, 1, 0.21),
            _run(4, "s", 0.0, 2, 0.15), _run(5, "s", 100.0, 2, 0.17),
            _run(6, "l", 0.0, 0, 0.30), _run(7, "l", 100.0, 0, 0.25),
            _run(8, "l", 0.0, 1, 0.30)]  # an unpaired run is left out
    by = {e.model_size: e for e in paired_effects(runs, "midtrain_tokens", "b/score")}
    s = by["s"]
    d = [0.03, 0.01, 0.02]
    assert s.n_pairs == 3 and s.effect == pytest.approx(0.02)
    half = stats.t.ppf(0.975, 2) * stats.tstd(d) / 3 ** 0.5
    assert (s.lo, s.hi) == pytest.approx((0.02 - half, 0.02 + half))
    assert by["l"].n_pairs == 1 and by["l"].effect == pytest.approx(-0.05) and by["l"].lo is None
    assert s.others == {"grpo_steps": 0.0} and s.level == 0.95
    s90 = next(e for e in paired_effects(runs, "midtrain_tokens", "b/score", level=0.9) if e.model_size == "s")
    half90 = stats.t.ppf(0.95, 2) * stats.tstd(d) / 3 ** 0.5
    assert (s90.lo, s90.hi) == pytest.approx((0.02 - half90, 0.02 + half90)) and half90 < half and s90.level == 0.9
    with pytest.raises(FitInputError, match="level must be in"):
        paired_effects(runs, "midtrain_tokens", "b/score", level=1.0)


def test_cells_of_other_axes_are_kept_apart_and_bad_axes_refused():
    runs = [_run(0, "s", 0.0, 0, 0.1, grpo=0), _run(1, "s", 9.0, 0, 0.2, grpo=0),
            _run(2, "s", 0.0, 0, 0.3, grpo=4), _run(3, "s", 9.0, 0, 0.1, grpo=4)]
    effects = paired_effects(runs, "midtrain_tokens", "b/score")
    assert sorted(e.effect for e in effects) == pytest.approx([-0.2, 0.1])
    three = paired_effects(runs + [_run(9, "s", 5.0, 0, 0.15)], "midtrain_tokens", "b/score")
    mid = [e for e in three if e.high == 5.0]
    assert len(mid) == 1 and mid[0].low == 0.0 and mid[0].effect == pytest.approx(0.05) and len(three) == 3
    with pytest.raises(FitInputError, match="at least two levels"):
        paired_effects(runs[:1], "midtrain_tokens", "b/score")
    with pytest.raises(FitInputError, match="no seed-paired runs"):
        paired_effects(runs, "midtrain_tokens", "b/loss")


def test_effect_cli_refuses_an_unknown_axis_naming_it(tmp_path, capsys):
    from pathlib import Path

    from toolscale.cli import main

    small = Path(__file__).resolve().parent / "small.toml"
    db = str(tmp_path / "r.duckdb")
    assert main(["simulate", "--config", str(small), "--registry", db, "--experiment", "sim", "--json"]) == 0
    capsys.readouterr()
    assert main(["effect", "--registry", db, "--experiment", "sim", "--axis", "not_an_axis",
                 "--benchmark", "simulated"]) == 2
    err = capsys.readouterr().err
    assert "unknown axis 'not_an_axis'" in err and "tool_diversity" in err and err.strip().count("\n") == 0
