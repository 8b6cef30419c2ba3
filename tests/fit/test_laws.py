"""The law registry: names, formulas, user-added forms, rebuilding a stored fit's law."""

from __future__ import annotations

import numpy as np
import pytest

from fit.errors import FitInputError, UnknownLawError
from fit.laws import Law, get_law, known_laws, law_of, register_law
from fit.models import FitResult, LawInput


def test_registry_holds_the_issue_forms():
    assert {"chinchilla", "saturating", "additive", "multiplicative", "interaction", "two_step"} <= set(known_laws())


def test_unknown_law_lists_known_ones():
    with pytest.raises(UnknownLawError) as err:
        get_law("chinchila")
    msg = str(err.value)
    assert "did you mean 'chinchilla'" in msg and "additive" in msg and "\n" not in msg


def test_chinchilla_formula():
    law = get_law("chinchilla")
    p = {"E": 1.8, "A": 400.0, "alpha": 0.34, "B": 2000.0, "beta": 0.36}
    N, D = np.array([1e8, 1e9]), np.array([1e9, 2e10])
    expected = 1.8 + 400 * N ** -0.34 + 2000 * D ** -0.36
    assert np.allclose(law.predict(p, {"N": N, "D": D}), expected)
    assert law.axes == ("N", "D") and law.target == "loss"


def test_hypothesis_forms_nest_and_differ(sim):
    inputs = sim.small_inputs()
    add, mul, inter = (get_law(n, inputs) for n in ("additive", "multiplicative", "interaction"))
    assert add.param_names == mul.param_names and inter.param_names == (*add.param_names, "kappa")
    p = {name: (0.3 if name.startswith(("S0", "A_", "G_", "H_")) else 0.7) for name in add.param_names}
    X = {"N": np.array([2.6e5, 1e6]), "tool_diversity": np.array([4.0, 40.0]), "task_count": np.array([64.0, 1024.0]),
         "repair_rate": np.array([0.0, 1.0]), "support_depth": np.array([1.0, 4.0])}
    # interaction at kappa = 0 is the additive law
    assert np.allclose(inter.predict({**p, "kappa": 0.0}, X), add.predict(p, X))
    # at the lowest levels (no diversity gain, no quality gain) both hypotheses agree ...
    assert np.isclose(add.predict(p, X)[0], mul.predict(p, X)[0])
    # ... and multiplicative quality scales the diversity gain instead of adding its own
    assert not np.isclose(add.predict(p, X)[1], mul.predict(p, X)[1])


def test_predict_names_missing_parameter_and_input():
    law = get_law("chinchilla")
    with pytest.raises(FitInputError, match="missing parameters beta"):
        law.predict({"E": 1, "A": 1, "alpha": 1, "B": 1}, {"N": [1.0], "D": [1.0]})
    with pytest.raises(FitInputError, match="missing inputs D"):
        law.predict({"E": 1, "A": 1, "alpha": 1, "B": 1, "beta": 1}, {"N": [1.0]})


def test_user_law_in_a_few_lines_is_fitted_without_touching_the_fitter():
    from fit.fitting import fit_law
    from fit.models import Points

    register_law(Law(name="test_kaplan_n", target="loss", inputs=(LawInput(name="N", kind="size"),),
                     param_names=("Nc", "alpha"), bounds={"Nc": (1e3, 1e16), "alpha": (0.01, 2.0)},
                     start_grid={"Nc": (1e8, 1e13), "alpha": (0.05, 0.3)}, log_params=frozenset({"Nc"}),
                     fn=lambda p, X: (X["N"] / p["Nc"]) ** -p["alpha"]), replace=True)
    N = np.geomspace(1e6, 1e9, 12)
    pts = Points(inputs={"N": list(N)}, y=list((N / 8.8e13) ** -0.076), target="loss")
    fit = fit_law(pts, get_law("test_kaplan_n"))
    assert fit.params["alpha"] == pytest.approx(0.076, rel=1e-3)


def test_law_validation_rejects_missing_bounds():
    with pytest.raises(ValueError, match="needs bounds and a start grid"):
        Law(name="bad", target="score", inputs=(), param_names=("a",), bounds={}, start_grid={"a": (1.0,)},
            fn=lambda p, X: p["a"])


def test_law_of_rebuilds_the_same_normalisation(sim):
    inputs = sim.small_inputs()
    law = get_law("additive", inputs)
    params = {p: 0.5 for p in law.param_names}
    fit = FitResult(law="additive", inputs=list(inputs), params=params, target="score", loss=0.0, converged=True,
                    n_points=10, n_params=len(params), data_hash="x", huber_delta=0.05, n_starts=1, residual_sd=0.01,
                    log_likelihood=0.0, aic=0.0, bic=0.0)
    again = law_of(FitResult.model_validate(fit.model_dump(mode="json")))
    X = {"N": [3e5], "tool_diversity": [10.0], "task_count": [200.0], "repair_rate": [0.4], "support_depth": [2.0]}
    assert np.allclose(again.predict(params, X), law.predict(params, X))


def test_score_law_needs_a_size_input():
    with pytest.raises(FitInputError, match="exactly one 'size' input"):
        get_law("additive", (LawInput(name="x", kind="diversity"), LawInput(name="q", kind="quality")))


def test_two_step_chains_loss_to_accuracy():
    law = get_law("two_step")
    p = {"E": 1.8, "A": 400.0, "alpha": 0.34, "B": 2000.0, "beta": 0.36, "lo": 0.1, "hi": 0.9, "k": 4.0, "L0": 2.5}
    X = {"N": np.array([1e8, 1e10]), "D": np.array([1e9, 1e11])}
    acc = law.predict(p, X)
    assert acc[1] > acc[0] and np.all((acc > 0.1) & (acc < 0.9))
