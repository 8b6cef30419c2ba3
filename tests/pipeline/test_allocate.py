"""allocate's registry edge (pipeline/allocate.py) end to end on a stored fit: JSON contract, CLI, sweep plot, bad
input, the MCP server over stdio, and the MCP ``allocate`` tool answering what ``allocate --json`` prints."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from allocator.errors import AllocatorUsageError
from allocator.models import AllocationQuery, AllocationReport
from fit.laws import get_law
from fit.models import FitResult
from fit.simulate import builtin_truth, law_inputs_for_config, simulate_results
from grid.design import build_design
from grid.models import MetricResult
from grid.registry import Registry
from pipeline.allocate import plan_allocation
from toolscale.cli import allocate_main, main
from toolscale.cli.project import example_config_text
from toolscale.config import parse_config

CONTRACT = {"budget", "benchmark", "plan", "interval", "baseline", "baseline_method", "gain_over_baseline",
            "gain_interval", "p_beats_baseline", "pinned", "decision", "extrapolation", "experiment", "law", "fit_id",
            "metric", "allocation_id"}


def _config():
    import tomllib

    return parse_config(tomllib.loads(example_config_text("micro")))


def _fit_result(cfg, converged: bool = True) -> FitResult:
    truth = builtin_truth(law_inputs_for_config(cfg), "multiplicative", benchmark="bench")
    law = get_law("multiplicative", law_inputs_for_config(cfg))
    rng = np.random.default_rng(0)
    draws = [{k: v * float(rng.uniform(0.95, 1.05)) for k, v in truth.params.items()} for _ in range(40)]
    return FitResult(law="multiplicative", inputs=list(law.inputs), params=truth.params, target="score", loss=0.0,
                     converged=converged, message="" if converged else "gradient norm 3e-2 at iteration limit",
                     n_points=18, n_params=len(truth.params), data_hash="test", huber_delta=0.05, n_starts=1,
                     residual_sd=0.01, log_likelihood=0.0, aic=0.0, bic=0.0, bootstrap=draws, bootstrap_seed=0,
                     experiment="exp", benchmark="bench", metric="token_prob")


@pytest.fixture(scope="module")
def _template(tmp_path_factory) -> str:
    cfg = _config()
    path = str(tmp_path_factory.mktemp("alloc") / "template.duckdb")
    runs = [r.model_copy(update={"experiment": "exp"}) for r in build_design(cfg).runs]
    truth = builtin_truth(law_inputs_for_config(cfg), "multiplicative", benchmark="bench")
    scores = simulate_results(runs, truth, get_law("multiplicative", law_inputs_for_config(cfg)), seed=0)
    with Registry(path) as reg:
        reg.import_runs("exp", [a.name for a in cfg.axes], runs,
                        [[MetricResult(benchmark="bench", metric="token_prob", score=v)] for v in scores],
                        source="design")
        reg.ensure_experiment("exp", config=cfg.model_dump(mode="json"))
        fit = _fit_result(cfg)
        reg.save_fit(experiment="exp", benchmark="bench", metric="token_prob", law=fit.law, converged=True,
                     n_points=fit.n_points, data_hash="test", payload=fit.model_dump(mode="json"))
    return path


@pytest.fixture
def registry(_template, tmp_path) -> str:
    """A fresh copy of the template registry (experiment, done runs, one converged fit) per test."""
    import shutil

    path = str(tmp_path / "r.duckdb")
    shutil.copy(_template, path)
    return path


def _query(registry: str, budget: float = 5000.0, **fields) -> AllocationQuery:
    return AllocationQuery.of(registry=registry, budget=budget, benchmark="bench", **fields)


def test_plan_from_registry_respects_budget_and_truth(registry) -> None:
    cfg = _config()
    plan = plan_allocation(_query(registry))
    assert plan.experiment == "exp" and plan.law == "multiplicative" and plan.allocation_id
    assert plan.plan.total_cost <= 5000.0 * (1 + 1e-9)
    truth = builtin_truth(law_inputs_for_config(cfg), "multiplicative")
    law = get_law("multiplicative", law_inputs_for_config(cfg))
    X = {k: np.array([v]) for k, v in plan.plan.levels.items()}
    X["N"] = np.array([cfg.target_size.approx_params])
    assert plan.plan.predicted_score == pytest.approx(float(law.predict(truth.params, X)[0]))
    assert plan.gain_over_baseline >= 0
    assert plan.interval[0] <= plan.plan.predicted_score <= plan.interval[1]
    with Registry(registry, read_only=True) as reg:
        assert reg.allocations("exp")[0]["payload"]["budget"]["value"] == 5000.0


def test_fit_id_names_the_experiment_when_several_have_fits(registry) -> None:
    """With two experiments fitted on one benchmark, a plan needs --experiment; --fit-id names its own."""
    cfg = _config()
    fit = _fit_result(cfg).model_copy(update={"experiment": "exp2"})
    with Registry(registry) as reg:
        reg.ensure_experiment("exp2", config=cfg.model_dump(mode="json"))
        fid = reg.save_fit(experiment="exp2", benchmark="bench", metric="token_prob", law=fit.law, converged=True,
                           n_points=fit.n_points, data_hash="test", payload=fit.model_dump(mode="json"))
    with pytest.raises(AllocatorUsageError, match="several experiments have fits for 'bench'"):
        plan_allocation(_query(registry), save=False)
    plan = plan_allocation(_query(registry, fit_id=fid), save=False)
    assert plan.experiment == "exp2" and plan.fit_id == fid


def test_score_intervals_are_predictive_like_predicts(registry) -> None:
    """The plan's and the baseline's score intervals carry the runs' noise (and the extrapolation error) as
    ``predict``'s do (issue 29, item 8), not the bootstrap spread only; the gain interval is of expected
    scores and keeps the draws' spread (verify adds the realised gain's seed variance)."""
    from fit.predict import predict_at

    plan = plan_allocation(_query(registry))
    fit = _fit_result(_config())
    point = predict_at(fit, [{**plan.plan.levels, "N": plan.model_params}]).points[0]
    assert point.predicted == pytest.approx(plan.plan.predicted_score)
    width, expected = plan.interval[1] - plan.interval[0], point.hi - point.lo
    assert width == pytest.approx(expected, rel=0.15)  # 40 draws against predict's 4,000 simulations
    draws_only = fit.model_copy(update={"residual_sd": 0.0})
    narrow = predict_at(draws_only, [{**plan.plan.levels, "N": plan.model_params}]).points[0]
    assert width > 1.15 * (narrow.hi - narrow.lo)  # wider than the bootstrap spread alone (about 0.75x predict's)


def test_allocate_cli_json_contract_and_toolscale_alias(registry, capsys) -> None:
    assert allocate_main(["--budget", "5000", "--benchmark", "bench", "--registry", registry, "--json",
                          "--draws", "8"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert CONTRACT <= set(out) and out["metric"] == "token_prob"  # the fitted metric, named
    assert AllocationReport.model_validate(out).plan.total_cost <= 5000  # the JSON is the model, dumped
    assert set(out["plan"]["spend"]) == set(out["plan"]["levels"])
    assert main(["allocate", "--budget", "5000", "--benchmark", "bench", "--registry", registry, "--json",
                 "--draws", "8"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["plan"]["levels"] == out["plan"]["levels"]  # same inputs, same plan
    assert main(["allocate", "--budget", "5000", "--benchmark", "bench", "--registry", registry, "--draws", "8"]) == 0
    table = capsys.readouterr().out
    assert "the next usd buys the" in table and "diversity-only baseline" in table
    assert "predicted token_prob: " in table and "points of token_prob per usd" in table
    assert "baseline: diversity-only law" in table and "quality pinned at baseline" in table
    assert "DECISION: gain" in table or "no decision at this budget" in table
    assert out["decision"]["verdict"] in ("recommend", "no_decision") and out["baseline_method"]


def test_sweep_writes_plot_and_is_monotone(registry, tmp_path, capsys) -> None:
    plot = tmp_path / "sweep.png"
    assert main(["allocate", "--budget", "1000", "--benchmark", "bench", "--registry", registry, "--sweep",
                 "2000:40000:3", "--plot", str(plot), "--json", "--draws", "4"]) == 0
    out = json.loads(capsys.readouterr().out)
    scores = [p["plan"]["predicted_score"] for p in out["plans"]]
    assert all(b >= a - 1e-9 for a, b in zip(scores, scores[1:]))
    assert plot.stat().st_size > 10_000 and plot.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize(
    ("argv", "needle", "code"),
    [
        (["--budget", "5000", "--benchmark", "nope"], "no fit for benchmark 'nope'; benchmarks with fits: bench", 2),
        (["--budget", "10", "--benchmark", "bench"], "below the cheapest feasible plan", 2),
        (["--budget", "5000", "--benchmark", "bench", "--unit", "eur"], "--unit must be one of usd, gpu_hours", 2),
        (["--budget", "5000", "--benchmark", "bench", "--unit", "gpu_hours"], "does not match", 2),
        (["--budget", "5000", "--benchmark", "bench", "--model-size", "huge"], "unknown model size 'huge'", 2),
        (["--budget", "5000", "--benchmark", "bench", "--experiment", "other"], "experiment 'other' has no fit", 2),
        (["--budget", "0", "--benchmark", "bench"], "must be a positive number, got 0", 2),
        (["--budget", "nan", "--benchmark", "bench"], "must be a positive number, got nan", 2),
    ],
)
def test_bad_input_one_line(registry, capsys, argv, needle, code) -> None:
    assert allocate_main([*argv, "--registry", registry]) == code
    err = capsys.readouterr().err
    assert needle in err
    assert "Traceback" not in err


def test_unconverged_fit_is_refused(registry, capsys) -> None:
    cfg = _config()
    bad = _fit_result(cfg, converged=False)
    with Registry(registry) as reg:
        reg.save_fit(experiment="exp", benchmark="bench", metric="score", law=bad.law, converged=False,
                     n_points=bad.n_points, data_hash="test", payload=bad.model_dump(mode="json"))
    assert allocate_main(["--budget", "5000", "--benchmark", "bench", "--registry", registry]) == 2
    assert "did not converge (gradient norm 3e-2 at iteration limit)" in capsys.readouterr().err


def test_mcp_server_over_stdio(registry, tmp_path) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async def talk():
        params = StdioServerParameters(command=sys.executable, args=["-m", "toolscale.cli", "serve-mcp",
                                                                      "--registry", registry],
                                       cwd=str(Path(__file__).resolve().parents[2]))
        with open(tmp_path / "server.err", "w") as errlog:  # a real file: pytest's capture has no fileno
            async with Client(stdio_client(params, errlog=errlog)) as client:
                return await _calls(client)

    async def _calls(client):
        tools = {t.name for t in (await client.list_tools()).tools}
        listed = await client.call_tool("list_benchmarks", {})
        plan = await client.call_tool("allocate", {"budget": 5000, "benchmark": "bench"})
        summary = await client.call_tool("fit_summary", {"benchmark": "bench"})
        bad = await client.call_tool("allocate", {"budget": 5000, "benchmark": "nope"})
        exps = await client.call_tool("list_experiments", {})
        fits = await client.call_tool("list_fits", {})
        at = {"model_size": 3e6, "tool_diversity": 8, "task_count": 256, "db_diversity": 2, "repair_rate": 0.5,
              "coverage_quota": 0.1, "support_depth": 2}
        pred = await client.call_tool("predict", {"benchmark": "bench", "at": [at]})
        outside = await client.call_tool("predict", {"benchmark": "bench", "at": [{**at, "repair_rate": 1.5}]})
        version = client.server_info.version
        return tools, listed, plan, summary, bad, (exps, fits, pred, outside, version)

    tools, listed, plan, summary, bad, more = asyncio.run(talk())
    exps, fits, pred, outside, version = more
    assert {"allocate", "list_benchmarks", "fit_summary", "predict", "list_experiments", "list_fits"} <= tools
    assert version  # the package version, not ""
    assert exps.structured_content["result"][0]["name"] == "exp"
    assert fits.structured_content["result"][0]["law"] == "multiplicative"
    assert not pred.is_error, pred.content[0].text
    assert pred.structured_content["points"][0]["lo"] <= pred.structured_content["points"][0]["hi"]
    assert outside.is_error and "repair_rate is a fraction" in outside.content[0].text
    assert listed.structured_content["bench"] == ["exp"]
    assert plan.structured_content["plan"]["total_cost"] <= 5000
    assert CONTRACT <= set(plan.structured_content)
    assert AllocationReport.model_validate(plan.structured_content).allocation_id is None  # not stored over MCP
    assert summary.structured_content["law"] == "multiplicative"
    assert bad.is_error and "no fit for benchmark 'nope'" in bad.content[0].text


@pytest.mark.parametrize(("budget", "label"), [(500.0, "500"), (2000.0, "2k"), (3068.0, "3.1k"), (10860.0, "11k"),
                                               (1.5e6, "1.5M")])
def test_sweep_plot_budget_labels_are_short(budget, label) -> None:
    from allocator.plots import _short

    assert _short(budget) == label


def test_next_dollar_names_every_axis_tied_at_the_optimum() -> None:
    from toolscale.cli.allocate import _next_dollar_line

    line = _next_dollar_line({"a": 1.59e-7, "b": 1.5905e-7, "c": 6.7e-11}, "usd", "token_prob")
    assert line == "the next usd buys the same on a, b (1.59e-07 points of token_prob per usd each: the plan is balanced)"
    assert _next_dollar_line({"a": 2e-7, "b": 1e-7}, "usd", "score") == \
        "the next usd buys the most on: a (2e-07 points of score per usd)"


def test_a_law_without_data_axes_says_no_axis_buys_anything() -> None:
    # chinchilla over N and D (what `fit --law auto` may choose): every axis's marginal value is 0; the lines
    # said "the plan is balanced" and "every axis the law values is at its cap" with no axis capped
    from toolscale.cli.allocate import _next_dollar_line, _unspent_reason

    line = _next_dollar_line({"tool_diversity": 0.0, "task_count": 0.0}, "usd", "bpb")
    assert line == ("the next usd buys nothing on task_count, tool_diversity: the law's prediction of bpb does not "
                    "improve with any of them")
    assert _unspent_reason(set(), {"tool_diversity": 0.0, "task_count": 0.0}) == \
        "no axis improves the law's prediction: more of any buys nothing"
    assert _unspent_reason({"task_count"}, {"tool_diversity": 0.0}) == "every axis the law values is at its cap"


def test_baseline_is_a_diversity_only_law_and_quality_pinned_is_kept(registry) -> None:
    plan = plan_allocation(_query(registry), save=False)
    assert plan.baseline_method.startswith("diversity-only law (saturating over N and tool_diversity")
    assert "quality marginalised" in plan.baseline_method  # micro: too few runs at baseline quality
    assert all(plan.baseline.levels[a] == lv for a, lv in plan.pinned.levels.items()
               if a in ("repair_rate", "coverage_quota", "support_depth"))
    assert plan.baseline.total_cost <= 5000.0 and plan.pinned.total_cost <= 5000.0
    assert plan.gain_over_pinned >= 0 and plan.baseline_own_prediction is not None
    for name in ("tool_diversity", "task_count", "db_diversity", "support_depth"):  # integer axes of micro
        assert plan.plan.levels[name] == int(plan.plan.levels[name])
    assert plan.decision.verdict in ("recommend", "no_decision") and plan.decision.reason


def test_other_law_forms_are_mixed_by_bic_weight(registry) -> None:
    from allocator.planning import form_weights

    cfg = _config()
    fit = _fit_result(cfg)
    add_law = get_law("additive", law_inputs_for_config(cfg))
    add_params = builtin_truth(law_inputs_for_config(cfg), "additive").params
    other = fit.model_copy(update={"law": "additive", "params": add_params, "bic": fit.bic + 2.0,
                                   "inputs": list(add_law.inputs), "bootstrap": [add_params] * 40})
    with Registry(registry) as reg:
        reg.save_fit(experiment="exp", benchmark="bench", metric="token_prob", law="additive", converged=True,
                     n_points=18, data_hash="test", payload=other.model_dump(mode="json"))
        reg.save_fit(experiment="exp", benchmark="bench", metric="token_prob", law=fit.law, converged=True,
                     n_points=18, data_hash="test", payload=fit.model_dump(mode="json"))
    w = form_weights([fit, other])
    assert w["multiplicative"] == pytest.approx(1 / (1 + np.exp(-1.0)))
    plan = plan_allocation(_query(registry), save=False)
    assert set(plan.law_weights) == {"multiplicative", "additive"}
    assert plan.law_weights["additive"] == pytest.approx(round(w["additive"] * 40) / plan.draws_used)
    alone = plan_allocation(_query(registry, mix_forms=False), save=False)
    assert alone.law_weights == {"multiplicative": 1.0}
    assert alone.gain_interval != plan.gain_interval


def test_forms_attached_to_the_fit_are_mixed_by_their_weight(registry) -> None:
    cfg = _config()
    fit = _fit_result(cfg)
    add_law = get_law("additive", law_inputs_for_config(cfg))
    add_params = builtin_truth(law_inputs_for_config(cfg), "additive").params
    other = fit.model_copy(update={"law": "additive", "params": add_params, "inputs": list(add_law.inputs),
                                   "bootstrap": [add_params] * 40, "form_weight": 0.25})
    fit = fit.model_copy(update={"forms": [other], "form_weight": 0.75})
    with Registry(registry) as reg:
        reg.save_fit(experiment="exp", benchmark="bench", metric="token_prob", law=fit.law, converged=True,
                     n_points=18, data_hash="test", payload=fit.model_dump(mode="json"))
    plan = plan_allocation(_query(registry), save=False)
    assert plan.law_weights == {"additive": 10 / 40, "multiplicative": 30 / 40} and plan.draws_used == 40


def test_the_mcp_allocate_tool_returns_what_allocate_json_prints(registry, capsys) -> None:
    """One question, asked as ``allocate --json`` and of the MCP ``allocate`` tool (in process): both build one
    AllocationQuery and call :func:`pipeline.allocate.plan_allocation`, so the objects are the same. The fit has
    MCP_REDRAWS draws, so the tool's fewer re-solved draws (10 against 30) are every draw in both; the only field
    that differs is the stored plan's id (nothing is stored over MCP)."""
    from mcp import Client

    from toolscale.cli.mcp_server import MCP_REDRAWS, build_server

    fit = _fit_result(_config())
    with Registry(registry) as reg:
        reg.save_fit(experiment="exp", benchmark="bench", metric="token_prob", law=fit.law, converged=True,
                     n_points=fit.n_points, data_hash="test",
                     payload=fit.model_copy(update={"bootstrap": fit.bootstrap[:MCP_REDRAWS]}).model_dump(mode="json"))
    assert main(["allocate", "--budget", "4000", "--benchmark", "bench", "--tokens", "2e6", "--extrapolate", "1.5",
                 "--registry", registry, "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)

    async def ask():
        async with Client(build_server(registry)) as client:
            return await client.call_tool("allocate", {"budget": 4000, "benchmark": "bench", "tokens": "2e6",
                                                       "extrapolate": 1.5})

    answer = asyncio.run(ask())
    assert not answer.is_error, answer.content[0].text
    got = json.loads(json.dumps(answer.structured_content))
    assert printed["allocation_id"] and got["allocation_id"] is None
    assert set(got) == set(printed) and {k for k in printed if got[k] != printed[k]} == {"allocation_id"}
    assert printed["draws_used"] == MCP_REDRAWS and printed["spend_spread"] and printed["regret_interval"]
    direct = plan_allocation(_query(registry, 4000.0, tokens="2e6", extrapolate=1.5), save=False)
    assert json.loads(json.dumps(direct.model_dump(mode="json"))) == got  # the library's object, as both print it
