"""Predictions whose intervals mix the candidate forms by their BIC weight."""

from __future__ import annotations

import numpy as np
import pytest

from fit.errors import FitInputError
from fit.experiment import with_forms
from fit.interaction import compare_hypotheses
from fit.laws import get_law
from fit.models import FitResult
from fit.predict import bic_weights, components, predict_at, predict_points


def test_bic_weights():
    w = bic_weights({"a": 10.0, "b": 12.0, "c": 30.0})
    assert sum(w.values()) == pytest.approx(1.0)
    assert w["a"] / w["b"] == pytest.approx(np.exp(1.0)) and w["c"] < 1e-4


def test_mixed_intervals_cover_every_supported_form(sim, truths):
    """Intervals that mix law forms cover each form's own predictions. About 11 s: three forms fitted with 16
    bootstrap draws each, the fewest that give each form an interval."""
    runs = sim.design_runs(n_points=20, seed=4)
    # weak evidence: small quality effect, so additive and interaction both keep weight
    pts = sim.simulated_points("interaction", {**truths["additive"], "kappa": -2.0}, runs, noise=0.02, seed=3)
    _, fits = compare_hypotheses(pts, sim.small_inputs(), n_starts=4, max_grid=512, n_bootstrap=16, n_jobs=1)
    inputs = sim.small_inputs()
    main = fits["additive"]
    mixed = with_forms(main, [fits["multiplicative"], fits["interaction"]], pts, get_law("additive", inputs))
    comps = components(mixed)
    assert {f.law for f, _, _ in comps} == {"additive", "multiplicative", "interaction"}
    assert sum(w for _, _, w in comps) == pytest.approx(1.0)
    assert mixed.heldout is not None and mixed.heldout.points[0].lo is not None
    # one far point: the mixture's interval is at least as wide as the fitted form's alone
    X = {"N": [3e7], "tool_diversity": [40.0], "task_count": [1024.0], "repair_rate": [1.0], "support_depth": [4.0]}
    _, lo1, hi1 = predict_points(main, X)
    p, lo, hi = predict_points(mixed, X)
    assert hi[0] - lo[0] >= 0.95 * (hi1[0] - lo1[0])
    assert lo[0] <= p[0] <= hi[0]
    # the stored payload round-trips with its forms
    again = FitResult.model_validate(mixed.model_dump(mode="json"))
    assert [f.law for f in again.forms] == [f.law for f in mixed.forms]
    pred = predict_at(again, [{k: v[0] for k, v in X.items()}], max_fitted_flops=1.0)
    assert pred.points[0].flops is None and set(pred.form_weights) == {"additive", "multiplicative", "interaction"}
    with pytest.raises(FitInputError, match="lacks input 'support_depth'"):
        predict_at(again, [{k: v[0] for k, v in X.items() if k != "support_depth"}])


def test_a_point_where_the_law_is_undefined_is_refused_not_predicted_as_nan():
    """Under an axis's tested minimum an effective-data multiplier ``1 + c (1 - t^-gamma)`` can fall below 0: the
    law has no value there. ``predict_at`` says so, naming the input below the fitted range, instead of returning
    NaN with exit 0; at the minimum itself the prediction is finite."""
    from fit.fitting import fit_law
    from fit.models import LawInput, Points

    rng = np.random.default_rng(0)
    inputs = (LawInput(name="N", kind="size", ref=1e7), LawInput(name="D", kind="tokens", ref=1e8),
              LawInput(name="tool_diversity", kind="diversity", ref=4.0))
    law = get_law("effective", inputs)
    n, d, t = np.meshgrid([1e7, 3e7, 1e8], [1e8, 4e8], [4.0, 8.0, 16.0])
    y = 0.9 - 0.3 * (n / 1e7) ** -0.3 - 0.3 * (d * (1 + 0.5 * (1 - (t / 4) ** -0.5)) / 1e8) ** -0.3
    pts = Points(inputs={"N": n.ravel().tolist(), "D": d.ravel().tolist(), "tool_diversity": t.ravel().tolist()},
                 y=(y.ravel() + rng.normal(0, 0.003, y.size)).tolist())
    fit = fit_law(pts, law, n_bootstrap=0, n_starts=2, max_grid=256)
    c = next(k for k in fit.params if k.startswith("c_"))
    steep = fit.model_copy(update={"params": {**fit.params, c: 1000.0}})
    ok = predict_at(steep, [{"N": 3e7, "D": 2e8, "tool_diversity": 4.0}])
    assert np.isfinite(ok.points[0].predicted)
    with pytest.raises(FitInputError, match=r"--at #2: law 'effective' has no finite prediction there; "
                                            r"tool_diversity=2 \(fitted minimum 4\) lies below the fitted range"):
        predict_at(steep, [{"N": 3e7, "D": 2e8, "tool_diversity": 4.0}, {"N": 3e7, "D": 2e8, "tool_diversity": 2.0}])
