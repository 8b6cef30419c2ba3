"""Reports: golden Markdown/JSON for a fixed simulated fit, the HTML is self-contained, simulated data is labelled.

Regenerate the golden files after an intended change with ``make golden``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fit.fitting import fit_law
from fit.interaction import compare_hypotheses
from fit.laws import get_law
from fit.models import ExperimentFit, FitRequest
from fit.report import render_html, render_markdown, report_data, write_report

GOLDEN = Path(__file__).with_name("golden")
_NUM = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?")


@pytest.fixture(scope="module")
def result() -> ExperimentFit:
    from types import SimpleNamespace

    import numpy as np

    from fit.models import LawInput, Points, Truth
    from fit.simulate import simulate_results

    inputs = (LawInput(name="N", kind="size", ref=2.6e5), LawInput(name="tool_diversity", kind="diversity", ref=4.0),
              LawInput(name="repair_rate", kind="quality", lo=0.0, hi=1.0))
    rng = np.random.default_rng(0)
    runs = []
    for i in range(24):
        recipe = {"tool_diversity": float(rng.choice([4, 9, 19, 40])), "repair_rate": float(rng.choice([0, .5, 1]))}
        for j, n in enumerate((2.6e5, 1.3e6, 6.8e6, 3.4e7)):
            runs.append(SimpleNamespace(run_id=f"r{i:02d}-{j}", recipe=recipe, model_params=n, train_tokens=1e6 * (j + 1),
                                        train_flops=6e6 * n * (j + 1), split="heldout" if j == 3 else "fit"))
    truth = Truth(law="multiplicative", params={"S0": 0.3, "A_N": 0.3, "alpha_N": 0.4, "G_tool_diversity": 0.15,
                                                "alpha_tool_diversity": 0.6, "H_repair_rate": 0.8,
                                                "beta_repair_rate": 1.0}, noise_sd=0.01)
    law = get_law("multiplicative", inputs)
    y = simulate_results(runs, truth, law, seed=4)
    pts = Points(inputs={a: [r.model_params if a == "N" else r.recipe[a] for r in runs] for a in law.axes}, y=y,
                 run_ids=[r.run_id for r in runs], split=[r.split for r in runs], flops=[r.train_flops for r in runs],
                 experiment="golden", benchmark="toy", simulated=True)
    fit = fit_law(pts, law, n_starts=4, max_grid=512, holdout_rule="split", holdout_source="stored split column")
    inter, _ = compare_hypotheses(pts, inputs, n_starts=4, max_grid=512)
    req = FitRequest(experiment="golden", benchmark="toy", law="multiplicative", n_bootstrap=0)
    return ExperimentFit(request=req, fit=fit, interaction=inter, points=pts)


def test_report_matches_golden(result, golden):
    data = report_data(result)
    data.pop("message")  # optimizer wording varies across scipy builds
    md = render_markdown(report_data(result), {"axes": "p/axes.png"})
    masked = _NUM.sub("#", "\n".join(l for l in md.splitlines() if not l.startswith("- Diagnostics")))
    want = json.loads(golden.check_in(GOLDEN / "report.json", json.dumps(data, indent=2, sort_keys=True) + "\n"))
    problems = golden.diff(data, want, rel=1e-3, abs_tol=1e-6)
    assert not problems, f"report numbers differ from tests/fit/golden/report.json ({problems[:5]}); " \
                         f"if intended, regenerate: {golden.command}"
    golden_md = _NUM.sub("#", "\n".join(l for l in golden.check_in(GOLDEN / "report.md", md).splitlines()
                                        if not l.startswith("- Diagnostics")))
    assert masked == golden_md, f"report layout differs from tests/fit/golden/report.md; regenerate: {golden.command}"


def test_report_content(result, tmp_path):
    data = report_data(result)
    assert data["simulated"] and data["interaction"]["supported"] == "multiplicative"
    assert data["heldout"]["n"] == 24 and data["heldout"]["extrapolation_factor"] == pytest.approx(5 * 4 / 3)
    md = render_markdown(data)
    assert md.startswith("# Scaling-law report: golden / toy/score [SIMULATED]")
    assert "| alpha_N |" in md and "supported form **multiplicative**" in md and "Verdict: **amplifies**" in md
    assert "- Residuals: relative" in md
    html = render_html(data, {"axes": b"\x89PNG fake"})
    assert "<table>" in html and "data:image/png;base64," in html and "SIMULATED DATA" in html
    paths = write_report(result, tmp_path)
    assert set(paths) == {"markdown", "html", "json"}
    assert json.loads(paths["json"].read_text())["n_points"] == 72
    assert "golden__toy_plots/heldout.png" in paths["markdown"].read_text()
    real = result.model_copy(update={"fit": result.fit.model_copy(update={"simulated": False})})
    assert "SIMULATED" not in render_markdown(report_data(real))


def test_heldout_error_is_also_relative_and_the_plan_reference_only_for_scores(result):
    h = report_data(result)["heldout"]
    actual = [p["actual"] for p in h["points"]]
    assert h["actual_min"] == min(actual) and h["actual_max"] == max(actual)
    assert h["relative_mae"] == pytest.approx(h["mae"] / (sum(map(abs, actual)) / len(actual)))
    assert f"the MAE is {h['relative_mae']:.0%} of their mean" in render_markdown(report_data(result))
    assert "SynthAPI" in render_markdown(report_data(result))
    # a continuous proxy metric (token_prob) is not on the reference's accuracy scale: no comparison
    other = result.model_copy(update={"fit": result.fit.model_copy(update={"metric": "token_prob"})})
    assert "SynthAPI" not in render_markdown(report_data(other))


def test_loss_report_with_many_sizes_draws_without_warnings(tmp_path):
    import numpy as np

    from fit.models import Points

    rng = np.random.default_rng(0)
    N = np.geomspace(1e7, 1e10, 40)
    D = N * rng.uniform(5, 40, N.size)
    law = get_law("chinchilla")
    y = law.predict({"E": 1.8, "A": 400.0, "alpha": 0.34, "B": 2000.0, "beta": 0.36}, {"N": N, "D": D})
    flops = 6 * N * D
    split = ["heldout" if f >= np.quantile(flops, 0.75) else "fit" for f in flops]
    pts = Points(inputs={"N": list(N), "D": list(D)}, y=list(y), target="loss", split=split, flops=list(flops),
                 run_ids=[f"r{i}" for i in range(N.size)], experiment="c", benchmark="pile", metric="loss")
    fit = fit_law(pts, law, n_starts=4, n_bootstrap=10, n_jobs=1)
    res = ExperimentFit(request=FitRequest(experiment="c", benchmark="pile", metric="loss", law="chinchilla"),
                        fit=fit, points=pts)
    paths = write_report(res, tmp_path)
    md = paths["markdown"].read_text()
    assert "(loss)" in md and "SynthAPI" not in md and "[SIMULATED]" not in md
    assert (tmp_path / "c__pile_plots" / "axes.png").stat().st_size > 1000


def test_one_function_per_figure(result):
    from fit.report import FIGURE_MAKERS, FIGURES

    assert set(FIGURE_MAKERS) == {k for k, _ in FIGURES}
    needs_more = {"coverage": "bootstrap draws", "allocation": "plans across budgets"}  # this fit has neither
    for key, maker in FIGURE_MAKERS.items():
        blob = maker(result)
        if key in needs_more:
            assert blob is None, key
        else:
            assert blob is not None and blob.startswith(b"\x89PNG"), key
    no_heldout = result.model_copy(update={"fit": result.fit.model_copy(update={"heldout": None}),
                                           "interaction": None})
    assert FIGURE_MAKERS["heldout"](no_heldout) is None and FIGURE_MAKERS["hypotheses"](no_heldout) is None
    # a loss fit has no interaction test; --law auto's choice among forms is what it compared
    chosen = no_heldout.model_copy(update={"fit": no_heldout.fit.model_copy(update={"selection": _selection()})})
    assert FIGURE_MAKERS["hypotheses"](chosen).startswith(b"\x89PNG")


def _selection():
    from fit.models import LawCandidate, LawSelection

    return LawSelection(criterion="rung_cv", predicted_size=4.2e4, fit_sizes=[4.7e3, 1.3e4], chosen="chinchilla_unique",
                        extrapolation_sd=0.2, cv_rms=0.16, cv_noise_sd=0.05, effect_slope=1.8,
                        effect_slope_se=0.1, effect_sd=1.5,
                        candidates=[LawCandidate(label="chinchilla_ND", law="chinchilla", n_params=5, cv_mae=0.3,
                                                 cv_relative_mae=0.18, bic=-80.0),
                                    LawCandidate(label="chinchilla_unique", law="chinchilla_unique", n_params=12,
                                                 cv_mae=0.14, cv_relative_mae=0.081, bic=-115.0)])


def test_auto_law_choice_is_in_the_report_when_made():
    sel = _selection()
    d = {"selection": sel.model_dump()}
    from fit.report import _selection_lines

    text = "\n".join(_selection_lines(d))
    assert "| chinchilla_unique **(chosen)** | 12 | 0.14 | 0.081 |" in text and "predicting the fitted runs at N = 4.2e+04" in text
    assert "(largest fold: CV RMS 0.16, the CV fit's noise 0.05)" in text and ": 0.2 per decade of N" in text
    assert "came out 1.8 x the predicted ones (SE 0.1)" in text and "off by 1.5 of itself per decade" in text
    assert _selection_lines({"selection": None}) == [] and _selection_lines({}) == []
