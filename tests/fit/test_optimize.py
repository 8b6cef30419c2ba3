"""The optimiser's two-step path: stage 1 on final checkpoints, stage 2 on all, fixed parameters per stage."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from fit.data import points_from_runs
from fit.laws import get_law
from fit.models import Points
from fit.optimize import fit_any


def _ladder(rng):
    n, d, step, final, loss, acc = [], [], [], [], [], []
    for size in (2e7, 6e7, 2e8, 6e8):
        for mult in (10, 20, 40):
            for s in (1, 2, 3, 4):
                tokens = mult * size * s / 4
                clean = 1.8 + 400 * size ** -0.34 + 2000 * tokens ** -0.36
                bump = 0.0 if s == 4 else 0.15  # unannealed checkpoints sit above the law
                n.append(size), d.append(tokens), step.append(s), final.append(s == 4)
                loss.append(clean + bump)
                acc.append(0.25 + 0.7 / (1 + np.exp(4.0 * (clean + bump - 3.0))) + rng.normal(0, 0.005))
    return Points(inputs={"N": n, "D": d, "L": loss}, y=list(np.clip(acc, 0, 1)), steps=step, final=final)


def test_stage_one_uses_final_checkpoints_and_the_floor_is_held():
    pts = _ladder(np.random.default_rng(0))
    law = get_law("two_step")
    opt = fit_any(law, pts, huber_delta=None, n_starts=4, max_grid=2048, seed=0, fixed={"lo": 0.25})
    assert opt.params["lo"] == 0.25 and opt.params["hi"] <= 1.0
    assert opt.params["E"] == pytest.approx(1.8, abs=0.1) and opt.params["alpha"] == pytest.approx(0.34, abs=0.05)
    # with every checkpoint in stage 1 the bumped losses bias it
    every = pts.model_copy(update={"final": []})
    biased = fit_any(law, every, huber_delta=None, n_starts=4, max_grid=2048, seed=0, fixed={"lo": 0.25})
    pred = law.stages[0].predict
    X = {"N": np.array([2e9]), "D": np.array([8e10])}
    truth = 1.8 + 400 * 2e9 ** -0.34 + 2000 * 8e10 ** -0.36
    assert abs(pred(opt.params, X)[0] - truth) < abs(pred(biased.params, X)[0] - truth)


def test_stage_one_metric_can_be_another_benchmarks_task_loss():
    runs = [SimpleNamespace(run_id=f"r{i}", recipe={}, model_params=1e8 * (i + 1), train_tokens=2e9, train_flops=1.2e18,
                            split="fit", source="import", model_size="x", metadata={},
                            metrics={"mmlu/score": 0.3 + 0.01 * i, "mmlu-bpb/loss": 1.0 - 0.05 * i, "mmlu/loss": 9.0})
            for i in range(4)]
    pts = points_from_runs(runs, benchmark="mmlu", metric="score", inputs=("N", "D"), intermediate=("L", "mmlu-bpb/loss"))
    assert pts.inputs["L"] == pytest.approx([1.0, 0.95, 0.9, 0.85])
    same = points_from_runs(runs, benchmark="mmlu", metric="score", inputs=("N", "D"), intermediate=("L", "loss"))
    assert same.inputs["L"] == [9.0] * 4
