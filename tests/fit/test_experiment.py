"""fit_experiment: the automatic law choice, the stored hold-out fraction, and empty input."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from fit.errors import FitInputError
from fit.experiment import fit_experiment, stored_fraction
from fit.models import FitRequest
from toolscale.config import parse_config


def _records(sim, truths, hypothesis="additive", drop=()):
    runs = sim.design_runs(n_points=30, seed=2)
    pts = sim.simulated_points(hypothesis, truths[hypothesis], runs, noise=0.01)
    out = []
    for r, y in zip(runs, pts.y):
        recipe = {k: v for k, v in r.recipe.items() if k not in drop}
        out.append(SimpleNamespace(run_id=r.run_id, recipe=recipe, model_params=r.model_params,
                                   train_tokens=r.train_tokens, train_flops=r.train_flops, split=r.split,
                                   source="simulated", model_size=f"{r.model_params:g}", metadata={},
                                   metrics={"b/score": y}))
    return out


def test_auto_without_quality_axes_is_saturating(sim, truths):
    runs = _records(sim, truths, drop=("repair_rate", "support_depth"))
    res = fit_experiment(runs, FitRequest(experiment="e", benchmark="b", n_bootstrap=0, n_starts=2, max_grid=256))
    assert res.fit.law == "saturating" and res.interaction is None
    assert res.fit.heldout is not None and res.fit.holdout_source == "stored split column"


def test_auto_with_both_kinds_runs_the_interaction_test(sim, truths):
    runs = _records(sim, truths, "multiplicative")
    req = FitRequest(experiment="e", benchmark="b", n_bootstrap=0, n_starts=2, max_grid=256, interaction_bootstrap=0)
    res = fit_experiment(runs, req)
    assert res.interaction is not None and res.fit.law == res.interaction.supported == "multiplicative"
    assert res.fit.simulated
    # allocate takes quality axes past their tested maximum too: each gets the check a diversity axis gets
    assert set(res.fit.axis_extrapolation_sd) == {"tool_diversity", "task_count", "repair_rate", "support_depth"}


def test_stored_fraction_and_no_runs():
    tools = {"name": "tools", "kind": "diversity", "unit": "tools", "min": 1, "max": 9}
    config = parse_config({"experiment": {"name": "e"}, "axes": [tools], "ladder": [{"name": "s"}],
                           "design": {"heldout_fraction": 0.3}})
    assert stored_fraction(config) == 0.3
    assert stored_fraction(None) == 0.25
    with pytest.raises(FitInputError, match="has no done runs"):
        fit_experiment([], FitRequest(experiment="e", benchmark="b"))
