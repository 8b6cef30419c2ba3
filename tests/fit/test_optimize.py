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


def _low_accuracy_ladder(rng):
    """Checkpoints whose accuracies cover only the sigmoid's lower part (losses 1.0-2.0), so where its ceiling
    lies is decided by the ideal point, not by the data (CSQA on the OLMo ladder)."""
    loss = np.linspace(1.0, 2.0, 60)
    acc = 0.2 + 0.5 / (1 + np.exp(4.0 * (loss - 1.3))) + rng.normal(0, 0.01, loss.size)
    n = np.repeat([2e7, 6e7, 2e8], 20)
    d = np.tile(np.geomspace(2e8, 8e9, 20), 3)
    return Points(inputs={"N": list(n), "D": list(d), "L": list(loss)}, y=list(acc))


def test_ideal_point_with_least_squares_is_the_olmo_ladders_stage_two():
    """``ideal_point`` adds (loss 0, accuracy 1) to stage 2's data, as allenai/OLMo-ladder's step2.py does; with
    a Huber threshold no residual reaches (1 on accuracies) stage 2 is its ``curve_fit`` least squares."""
    from dataclasses import replace

    from scipy.optimize import curve_fit

    pts = _low_accuracy_ladder(np.random.default_rng(3))
    law = replace(get_law("two_step"), ideal_point=(0.0, 1.0))
    opt = fit_any(law, pts, huber_delta=1.0, n_starts=8, max_grid=4096, seed=0)
    x, y = np.append(pts.inputs["L"], 0.0), np.append(pts.y, 1.0)

    def sig(v, a, x0, k, b):  # the authors' parametrisation: b the ceiling, a + b the floor
        return a / (1 + np.exp(-k * (v - x0))) + b

    c, _ = curve_fit(sig, x, y, p0=[-0.8, 0.9, 3.0, 1.0], bounds=([-1, 0, 0, 0], [0, np.inf, np.inf, 1]),
                     maxfev=100000)
    ours = [opt.params["lo"] - opt.params["hi"], opt.params["L0"], opt.params["k"], opt.params["hi"]]
    assert ours == pytest.approx(list(c), abs=2e-3)
    assert np.sum((y - sig(x, *ours)) ** 2) <= np.sum((y - sig(x, *c)) ** 2) + 1e-9
    plain = fit_any(get_law("two_step"), pts, huber_delta=1.0, n_starts=8, max_grid=4096, seed=0)
    assert abs(plain.params["hi"] - opt.params["hi"]) > 0.02  # the point moves the free ceiling


def test_the_huber_threshold_reaches_stage_two():
    """``--huber-delta`` on a two-step law sets stage 2's threshold (it used to fall back to the sigmoid's 0.05)."""
    from dataclasses import replace

    pts = _low_accuracy_ladder(np.random.default_rng(3))
    law = replace(get_law("two_step"), ideal_point=(0.0, 1.0))
    robust = fit_any(law, pts, huber_delta=0.01, n_starts=8, max_grid=4096, seed=0)
    squares = fit_any(law, pts, huber_delta=1.0, n_starts=8, max_grid=4096, seed=0)
    assert abs(robust.params["k"] - squares.params["k"]) > 0.05  # the ideal point's large residual counts less
    by_law = fit_any(replace(law, huber_delta=1.0), pts, huber_delta=None, n_starts=8, max_grid=4096, seed=0)
    assert by_law.params == pytest.approx(squares.params, rel=1e-6)
