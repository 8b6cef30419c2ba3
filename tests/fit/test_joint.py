"""The cross-domain fit: shared exponents recovered, and BIC telling shared from different exponents."""

from __future__ import annotations

import numpy as np
import pytest

from fit.errors import FitInputError
from fit.fitting import fit_law
from fit.joint import DOMAIN_INPUT, DomainRuns, fit_joint, is_exponent, joint_points
from fit.laws import get_law
from fit.models import LawInput, Points

TRUE = {"E": 0.3, "A": 0.5, "alpha": 0.3, "B": 3.0, "beta": 0.35, "R_star": 5.0, "U0": 3.0,
        "rho_tool_diversity": 0.8, "rho_task_count": 0.3}


def _law(quality: str):
    return get_law("chinchilla_unique", (
        LawInput(name="N", kind="size", ref=2000.0), LawInput(name="D", kind="tokens", ref=8000.0),
        LawInput(name="tool_diversity", kind="diversity", ref=4.0), LawInput(name="task_count", kind="diversity",
                                                                             ref=512.0),
        LawInput(name=quality, kind="quality", lo=0.0, hi=1.0)))


def _points(quality: str, params: dict, seed: int, name: str) -> Points:
    rng = np.random.default_rng(seed)
    law = _law(quality)
    rows = []
    recipes = [(4, 512, 0.0), (40, 512, 1.0), (4, 2048, 1.0), (40, 2048, 0.0), (13, 1024, 0.5)]
    for n in (2000.0, 8000.0, 18000.0):
        for tpp in (2.0, 6.0, 20.0):
            for t, k, q in recipes:
                rows.append((n, n * tpp, t, k, q, "fit"))
    for t, k, q in recipes[:4]:
        rows.append((87000.0, 87000.0 * 20, t, k, q, "heldout"))
    X = {"N": [r[0] for r in rows], "D": [r[1] for r in rows], "tool_diversity": [r[2] for r in rows],
         "task_count": [r[3] for r in rows], quality: [r[4] for r in rows]}
    full = {**params, f"c_{quality}": 0.2, f"gamma_{quality}": 1.0}
    y = law.predict(full, X) * np.exp(rng.normal(0, 0.02, len(rows)))
    return Points(inputs=X, y=list(y), target="loss", split=[r[5] for r in rows],
                  run_ids=[f"{name}-{i}" for i in range(len(rows))], flops=[6 * r[0] * r[1] for r in rows],
                  experiment=name, benchmark="b", metric="bpb")


def _domain(name: str, quality: str, params: dict, seed: int) -> DomainRuns:
    law, pts = _law(quality), _points(quality, params, seed, name)
    own = fit_law(pts, law, n_starts=4, max_grid=2048, seed=0)
    return DomainRuns(name, "b/bpb", law, pts, own, "chinchilla_unique")


@pytest.fixture(scope="module")
def shared_truth():
    """Two domains with the same exponents and different constants (about 10 s of fitting on one core)."""
    tools = _domain("tools", "repair_rate", TRUE, 0)
    code = _domain("code", "spec_dependency", {**TRUE, "E": 0.5, "B": 5.0, "U0": 1.5}, 1)
    return tools, code


def test_joint_points_carry_each_domain_and_neutral_values(shared_truth):
    pts = joint_points(shared_truth)
    dom = np.asarray(pts.inputs[DOMAIN_INPUT])
    assert pts.n == 98 and set(dom) == {0.0, 1.0}
    assert set(np.asarray(pts.inputs["spec_dependency"])[dom == 0]) == {0.0}  # the tool points lack it: its low end
    assert set(np.asarray(pts.inputs["repair_rate"])[dom == 1]) == {0.0}


def test_shared_exponents_are_recovered_and_sharing_them_is_preferred(shared_truth):
    res = fit_joint(shared_truth, n_starts=4)
    assert set(res.shared) >= {"alpha", "beta", "rho_tool_diversity", "rho_task_count"}
    assert "gamma_repair_rate" not in res.shared and "E" in res.domain_params
    assert res.joint_params["beta"] == pytest.approx(TRUE["beta"], abs=0.08)
    assert res.joint_params["rho_tool_diversity"] == pytest.approx(TRUE["rho_tool_diversity"], abs=0.25)
    assert res.k_joint < res.k_separate and res.delta_bic < 0
    assert "preferred by BIC" in res.verdict
    for d in res.domains:
        assert d.heldout_relative_mae_joint is not None and d.heldout_relative_mae_joint < 0.1
        assert d.extrapolation_factor == pytest.approx(87000 ** 2 * 20 / (18000 ** 2 * 20))


def test_different_exponents_make_sharing_cost_fit_quality():
    """Two more separate fits and a joint one, about 10 s on one core: the comparison must be able to say no."""
    tools = _domain("tools", "repair_rate", TRUE, 0)
    code = _domain("code", "spec_dependency", {**TRUE, "beta": 0.9, "rho_tool_diversity": 0.1}, 1)
    res = fit_joint([tools, code], n_starts=4)
    assert res.delta_bic > 0 and res.lr_p is not None and res.lr_p < 0.01
    assert "costs fit quality" in res.verdict


def test_bad_inputs():
    assert is_exponent("rho_task_count") and is_exponent("beta") and not is_exponent("B") and not is_exponent("U0")
    one = _domain("tools", "repair_rate", TRUE, 0)
    with pytest.raises(FitInputError, match="at least two"):
        fit_joint([one])
    other = DomainRuns("x", "b", get_law("chinchilla"), one.points, one.fit.model_copy(update={"law": "chinchilla"}),
                       "chinchilla")
    with pytest.raises(FitInputError, match="one form"):
        fit_joint([one, other])


def test_fit_experiments_on_the_command_line(tmp_path, capsys):
    """Two imported experiments, own fits and the joint one through ``toolscale fit --experiments`` (about 10 s)."""
    import json

    from toolscale.cli import main

    reg = str(tmp_path / "r.duckdb")
    for name, quality, params, seed in (("tools", "repair_rate", TRUE, 0),
                                        ("code", "spec_dependency", {**TRUE, "E": 0.5}, 1)):
        pts = _points(quality, params, seed, name)
        lines = ["run_id,model,tokens,loss,split,tool_diversity,task_count," + quality]
        for i in range(pts.n):
            lines.append(",".join(str(v) for v in (pts.run_ids[i], pts.inputs["N"][i], pts.inputs["D"][i], pts.y[i],
                                                   pts.split[i], pts.inputs["tool_diversity"][i],
                                                   pts.inputs["task_count"][i], pts.inputs[quality][i])))
        (tmp_path / f"{name}.csv").write_text("\n".join(lines) + "\n")
        assert main(["import-runs", str(tmp_path / f"{name}.csv"), "--registry", reg, "--experiment", name,
                     "--benchmark", "b", "--map", "run_id=run_id", "--map", "model=model_size", "--map",
                     "tokens=train_tokens", "--map", "loss=loss", "--map", "split=split", "--map",
                     "tool_diversity=tool_diversity", "--map", "task_count=task_count", "--map",
                     f"{quality}={quality}"]) == 0
    capsys.readouterr()
    assert main(["fit", "--registry", reg, "--experiments", "tools,code", "--benchmark", "b/loss", "--law",
                 "chinchilla_unique", "--holdout", "split", "--bootstrap", "0", "--starts", "4", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["experiments"] == ["tools", "code"] and out["law"] == "chinchilla_unique"
    assert {d["experiment"]: d["n_heldout"] for d in out["domains"]} == {"tools": 4, "code": 4}
    assert "beta" in out["shared"] and out["delta_bic"] < 0


def test_a_first_experiment_fitted_on_n_and_d_alone_sets_that_form_for_every_experiment(tmp_path, capsys):
    """``--law auto`` on a first experiment without data axes chooses Chinchilla on N and D alone: the other
    experiments are fitted with that form too, not with ``chinchilla``'s effective-data variant over their axes."""
    import json

    from toolscale.cli import main

    reg = str(tmp_path / "r.duckdb")
    for name, seed, axes in (("nd", 0, False), ("code", 1, True)):
        pts = _points("spec_dependency", TRUE, seed, name)
        head = "run_id,model,tokens,loss,split" + (",tool_diversity,task_count,spec_dependency" if axes else "")
        lines = [head]
        for i in range(pts.n):
            row = [pts.run_ids[i], pts.inputs["N"][i], pts.inputs["D"][i], pts.y[i], pts.split[i]]
            if axes:
                row += [pts.inputs["tool_diversity"][i], pts.inputs["task_count"][i], pts.inputs["spec_dependency"][i]]
            lines.append(",".join(str(v) for v in row))
        (tmp_path / f"{name}.csv").write_text("\n".join(lines) + "\n")
        maps = (["tool_diversity=tool_diversity", "task_count=task_count", "spec_dependency=spec_dependency"]
                if axes else [])
        args = ["import-runs", str(tmp_path / f"{name}.csv"), "--registry", reg, "--experiment", name, "--benchmark",
                "b", "--map", "run_id=run_id", "--map", "model=model_size", "--map", "tokens=train_tokens", "--map",
                "loss=loss", "--map", "split=split"]
        assert main(args + [x for m in maps for x in ("--map", m)]) == 0
    capsys.readouterr()
    assert main(["fit", "--registry", reg, "--experiments", "nd,code", "--benchmark", "b/loss", "--holdout", "split",
                 "--bootstrap", "0", "--starts", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["law"] == "chinchilla" and sorted(out["shared"]) == ["alpha", "beta"]
    assert {d["experiment"]: d["n_params_separate"] for d in out["domains"]} == {"nd": 5, "code": 5}
    assert not any(p.startswith(("gamma_", "c_")) for p in out["domain_params"])
