"""`toolscale next`'s registry edge (pipeline/next_runs.py) end to end on a stored fit: the proposal, its costs, bad input, `grid design --augment`,
`allocate` showing the interval before the proposal's runs, and the MCP ``next_runs`` tool over stdio.

The fit is the micro preset's multiplicative truth with 40 jittered parameter draws (as in test_allocate.py),
so a proposal takes seconds; each propose call here is about 5-15 s on 2 shared cores.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

from allocator.errors import AllocatorError, AllocatorUsageError
from allocator.models import AllocationQuery, NextRuns
from fit.laws import get_law
from fit.models import FitResult
from fit.simulate import builtin_truth, law_inputs_for_config, simulate_results
from grid.design import build_design
from grid.models import MetricResult
from grid.registry import Registry
from pipeline.allocate import plan_allocation
from pipeline.next_runs import propose_next_runs
from toolscale.cli import main
from toolscale.cli.project import example_config_text
from toolscale.config import parse_config

FAST = {"redraws": 5, "sims": 48}


def _config_text() -> str:
    return example_config_text("micro").replace('name = "toolscale-micro"', 'name = "exp"', 1)


def _config():
    return parse_config(tomllib.loads(_config_text()))


def _query(registry: str, budget: float = 5000.0, **fields) -> AllocationQuery:
    return AllocationQuery.of(registry=registry, budget=budget, benchmark="bench", **fields)


def _fit(cfg) -> FitResult:
    truth = builtin_truth(law_inputs_for_config(cfg), "multiplicative", benchmark="bench")
    law = get_law("multiplicative", law_inputs_for_config(cfg))
    rng = np.random.default_rng(0)
    draws = [{k: v * float(rng.uniform(0.9, 1.1)) for k, v in truth.params.items()} for _ in range(40)]
    return FitResult(law="multiplicative", inputs=list(law.inputs), params=truth.params, target="score", loss=0.0,
                     converged=True, n_points=18, n_params=len(truth.params), data_hash="test", huber_delta=0.05,
                     n_starts=1, residual_sd=0.015, log_likelihood=0.0, aic=0.0, bic=0.0, bootstrap=draws,
                     bootstrap_seed=0, experiment="exp", benchmark="bench", metric="score")


def _save_fit(path: str) -> None:
    fit = _fit(_config())
    with Registry(path) as reg:
        reg.save_fit(experiment="exp", benchmark="bench", metric="score", law=fit.law, converged=True,
                     n_points=fit.n_points, data_hash="test", payload=fit.model_dump(mode="json"))


@pytest.fixture(scope="module")
def _template(tmp_path_factory) -> tuple[str, NextRuns]:
    cfg = _config()
    path = str(tmp_path_factory.mktemp("next") / "template.duckdb")
    runs = list(build_design(cfg).runs)
    truth = builtin_truth(law_inputs_for_config(cfg), "multiplicative", benchmark="bench")
    scores = simulate_results(runs, truth, get_law("multiplicative", law_inputs_for_config(cfg)), seed=0)
    with Registry(path) as reg:
        reg.import_runs("exp", [a.name for a in cfg.axes], runs,
                        [[MetricResult(benchmark="bench", metric="score", score=v)] for v in scores], source="design")
        reg.ensure_experiment("exp", config=cfg.model_dump(mode="json"))
    _save_fit(path)
    return path, propose_next_runs(_query(path), runs=4, **FAST)


@pytest.fixture
def registry(_template, tmp_path) -> str:
    path = str(tmp_path / "r.duckdb")
    shutil.copy(_template[0], path)
    return path


@pytest.fixture
def proposal(_template) -> NextRuns:
    return _template[1]


def _digest(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_proposal_runs_are_new_priced_and_expected_to_narrow_the_interval(registry, proposal) -> None:
    cfg = _config()
    assert [r.rank for r in proposal.runs] == [1, 2, 3, 4] and proposal.experiment == "exp"
    with Registry(registry, read_only=True) as reg:
        existing = {(json.dumps(sorted(r.recipe.items())), r.model_size, r.seed) for r in reg.runs("exp")}
    rungs = {m.name for m in cfg.ladder}
    total = 0.0
    for r in proposal.runs:
        assert (json.dumps(sorted(r.recipe.items())), r.model_size, r.seed) not in existing
        assert r.model_size in rungs and r.cost == pytest.approx(r.data_cost + r.compute_cost)
        assert (r.data_cost > 0) == r.new_dataset  # micro prices no compute: a reused dataset is free
        total += r.cost
        assert r.cumulative_cost == pytest.approx(total)
        for a in cfg.axes:
            assert a.min <= r.recipe[a.name] <= a.max
    assert proposal.total_cost == pytest.approx(total)
    assert proposal.width_now == pytest.approx(proposal.gain_interval[1] - proposal.gain_interval[0])
    assert proposal.expected_width_after < proposal.width_now
    # the predictive interval holds a run's noise per arm, which no run removes
    assert 0.0 < proposal.width_floor <= proposal.expected_width_after
    assert proposal.expected_regret_after <= proposal.expected_regret_now
    assert "per_pflop is 0" in proposal.cost_rule
    assert NextRuns.model_validate(proposal.model_dump(mode="json")) == proposal


def test_fewer_runs_are_the_first_of_more_and_max_cost_caps_them(registry, proposal) -> None:
    two = propose_next_runs(_query(registry), runs=2, **FAST)
    assert two.rows() == proposal.rows()[:2]
    cap = max(r.cost for r in proposal.runs) * 1.01
    assert cap > 0
    capped = propose_next_runs(_query(registry), runs=4, max_cost=cap, **FAST)
    assert capped.total_cost <= cap and capped.runs
    priced = _config().model_copy(update={"cost": _config().cost.model_copy(update={"per_pflop": 1e3})})
    with pytest.raises(AllocatorUsageError, match=r"no candidate run costs at most 0\.01 \(the cheapest costs"):
        propose_next_runs(_query(registry, config=priced), runs=2, max_cost=0.01, **FAST)


@pytest.mark.parametrize(("fields", "kwargs", "error", "needle"), [
    ({}, {"runs": 0}, AllocatorUsageError, "--runs must be a positive integer, got 0"),
    ({}, {"runs": 2, "max_cost": -5.0}, AllocatorUsageError, "--max-cost must be a positive number, got -5"),
    ({"budget": 10.0}, {"runs": 2}, AllocatorError, "below the cheapest feasible plan"),
    ({"experiment": "exp2"}, {"runs": 2}, AllocatorUsageError, "unknown experiment 'exp2'"),
])
def test_bad_input_is_refused(registry, fields, kwargs, error, needle) -> None:
    with pytest.raises(error, match=needle.replace("(", r"\(")):
        propose_next_runs(_query(registry, **fields), **kwargs, **FAST)


def _save_flat_fit(registry: str) -> None:
    """Store, as the newest fit, the law with every diversity coefficient 0 (it scores every plan alike)."""
    fit = _fit(_config())
    flat = lambda p: {k: (0.0 if k.startswith("G_") else v) for k, v in p.items()}  # noqa: E731
    fit = fit.model_copy(update={"params": flat(fit.params), "bootstrap": [flat(d) for d in fit.bootstrap]})
    with Registry(registry) as reg:
        reg.save_fit(experiment="exp", benchmark="bench", metric="score", law=fit.law, converged=True,
                     n_points=fit.n_points, data_hash="test", payload=fit.model_dump(mode="json"))


def test_a_law_that_values_no_data_axis_is_refused_naming_the_fit(registry) -> None:
    """With every diversity coefficient 0 the law (like the form on N and D alone) scores every plan alike:
    no run can change the allocation, so next says so instead of proposing runs with expected width 0."""
    _save_flat_fit(registry)
    with pytest.raises(AllocatorUsageError, match=r"scores every plan alike .* no run can change this allocation"):
        propose_next_runs(_query(registry), runs=2, **FAST)


def test_an_experiment_without_a_fit_or_with_a_stale_one_names_the_command(registry) -> None:
    cfg = _config()
    with Registry(registry) as reg:
        reg.ensure_experiment("bare", config=cfg.model_dump(mode="json"))
    with pytest.raises(AllocatorUsageError, match="experiment 'bare' has no fit for 'bench'; run `toolscale fit "
                                                  "--experiment bare --benchmark bench` first"):
        propose_next_runs(_query(registry, experiment="bare"), runs=2)
    with Registry(registry) as reg:
        rid = reg.runs("exp")[0].run_id
        reg.set_status([rid], "done")  # finishes after the fit
    with pytest.raises(AllocatorError, match=r"stale: 1 run\(s\) finished after it; run `toolscale fit "
                                             r"--experiment exp --benchmark bench` first"):
        propose_next_runs(_query(registry), runs=2)


def _newest_fit_id(registry: str) -> str:
    with Registry(registry, read_only=True) as reg:
        return reg.fits("exp", "bench")[0].fit_id


def test_fit_id_plans_from_that_fit_not_the_newest(registry) -> None:
    """A stored fit other than the newest is planned from when named; the newest (here one that values no data
    axis) would be refused. A fit of another benchmark is refused naming both."""
    first = _newest_fit_id(registry)
    _save_flat_fit(registry)
    with pytest.raises(AllocatorUsageError, match="scores every plan alike"):
        propose_next_runs(_query(registry), runs=2, **FAST)
    got = propose_next_runs(_query(registry, fit_id=first), runs=2, **FAST)
    assert got.fit_id == first and len(got.runs) == 2
    with pytest.raises(AllocatorUsageError, match=f"fit {first} is of exp/bench, not of exp/other"):
        propose_next_runs(AllocationQuery.of(registry=registry, budget=5000.0, benchmark="other", fit_id=first),
                          runs=2, **FAST)


def test_cli_fit_id_names_the_benchmark_and_an_unknown_id_is_exit_2(registry, capsys) -> None:
    first = _newest_fit_id(registry)
    base = ["next", "--registry", registry, "--budget", "5000", "--runs", "2"]
    assert main(base + ["--fit-id", first, "--json"]) == 0
    got = NextRuns.model_validate_json(capsys.readouterr().out)
    assert got.fit_id == first and got.benchmark == "bench"
    before = _digest(registry)
    for extra, needle in ((["--fit-id", "f-nope"], "f-nope"), ([], "next needs --benchmark NAME")):
        assert main(base + extra) == 2
        err = capsys.readouterr().err
        assert needle in err and len(err.strip().splitlines()) == 1, err
    assert _digest(registry) == before


@pytest.mark.parametrize(("argv", "needle"), [
    (["--runs", "0"], "argument --runs: must be a positive integer, got 0"),
    (["--runs", "3", "--max-cost", "-1"], "argument --max-cost: must be a positive number, got -1"),
    (["--runs", "3", "--budget", "10"], "below the cheapest feasible plan"),
    (["--runs", "3", "--experiment", "nope"], "unknown experiment 'nope'"),
])
def test_cli_bad_input_one_line_exit_2_nothing_stored(registry, capsys, argv, needle) -> None:
    before = _digest(registry)
    base = ["next", "--benchmark", "bench", "--registry", registry, "--budget", "5000"]
    assert main(base + argv) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert _digest(registry) == before


def test_cli_table_json_out_then_augment_launchable_and_allocate_shows_the_old_interval(registry, tmp_path,
                                                                                        capsys) -> None:
    out = tmp_path / "next.json"
    assert main(["next", "--benchmark", "bench", "--registry", registry, "--budget", "5000", "--runs", "3",
                 "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "proposed runs (3)" in text and "exp. width after" in text and "--augment" in text
    proposal = NextRuns.model_validate_json(out.read_text())
    assert len(proposal.runs) == 3
    cfg_path = tmp_path / "exp.toml"
    cfg_path.write_text(_config_text())
    argv = ["grid", "design", str(cfg_path), "--registry", registry, "--augment", str(out)]
    assert main(argv + ["--json"]) == 0
    added = json.loads(capsys.readouterr().out)
    assert added["new_runs"] == 3 and added["group"].startswith("next-")
    assert main(argv) == 0 and "unchanged" in capsys.readouterr().out  # the same proposal again adds nothing
    assert main(["grid", "design", str(cfg_path), "--registry", registry]) == 0  # the design itself still records
    capsys.readouterr()
    assert main(["launch", "--config", str(cfg_path), "--registry", registry, "--dry-run", "--json"]) == 0
    planned = {rid for g in json.loads(capsys.readouterr().out)["plan"] for rid in g["runs"]}
    assert planned == {r["run_id"] for r in added["runs"]}  # launch runs them as usual
    with Registry(registry) as reg:
        group = [r for r in reg.runs("exp") if r.design_version == added["group"]]
        assert len(group) == 3 and {r.status for r in group} == {"pending"} and {r.split for r in group} == {"fit"}
        assert all(r.metadata["max_steps"] > 0 and r.source == "augment" for r in group)
        for r in group:
            reg.add_metrics(r.run_id, [MetricResult(benchmark="bench", metric="score", score=0.4)])
        reg.set_status([r.run_id for r in group], "done")
    with pytest.raises(AllocatorError, match="stale"):  # their results are not in the fit yet
        propose_next_runs(_query(registry), runs=1, **FAST)
    assert plan_allocation(_query(registry, redraws=0), save=False).earlier is None
    _save_fit(registry)  # the refit
    report = plan_allocation(_query(registry, redraws=0), save=False)
    assert report.earlier is not None and report.earlier.group == added["group"] and report.earlier.runs_done == 3
    assert report.earlier.gain_interval == proposal.gain_interval
    assert plan_allocation(_query(registry, 6000.0, redraws=0), save=False).earlier is None
    assert main(["allocate", "--budget", "5000", "--benchmark", "bench", "--registry", registry]) == 0
    text = capsys.readouterr().out
    assert f"before the 3 runs of `toolscale next` group {added['group']}" in text and "\nnow: gain" in text


@pytest.mark.parametrize(("content", "needle"), [
    ("{not json", "not a `toolscale next --json` proposal"),
    ('{"experiment": "exp"}', "not a `toolscale next --json` proposal"),
])
def test_augment_bad_file_exit_2(registry, tmp_path, capsys, proposal, content, needle) -> None:
    cfg_path = tmp_path / "exp.toml"
    cfg_path.write_text(_config_text())
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    before = _digest(registry)
    assert main(["grid", "design", str(cfg_path), "--registry", registry, "--augment", str(bad)]) == 2
    assert needle in capsys.readouterr().err
    other = tmp_path / "other.json"
    other.write_text(proposal.model_copy(update={"experiment": "elsewhere"}).model_dump_json())
    assert main(["grid", "design", str(cfg_path), "--registry", registry, "--augment", str(other)]) == 2
    assert "the proposal is for experiment 'elsewhere', the config for 'exp'" in capsys.readouterr().err
    assert _digest(registry) == before


def test_mcp_next_runs_over_stdio(registry, tmp_path) -> None:
    fit_id = _newest_fit_id(registry)
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async def talk():
        params = StdioServerParameters(command=sys.executable, args=["-m", "toolscale.cli", "serve-mcp",
                                                                      "--registry", registry],
                                       cwd=str(Path(__file__).resolve().parents[2]))
        with open(tmp_path / "server.err", "w") as errlog:
            async with Client(stdio_client(params, errlog=errlog)) as client:
                tools = {t.name for t in (await client.list_tools()).tools}
                good = await client.call_tool("next_runs", {"budget": 5000, "benchmark": "bench", "runs": 2,
                                                            "fit_id": fit_id})
                bad = await client.call_tool("next_runs", {"budget": 5000, "benchmark": "bench", "runs": 0})
                return tools, good, bad

    tools, good, bad = asyncio.run(talk())
    assert "next_runs" in tools
    got = NextRuns.model_validate(good.structured_content)
    assert len(got.runs) == 2 and got.experiment == "exp" and got.fit_id == fit_id
    assert bad.is_error and "runs must be a positive integer, got 0" in bad.content[0].text  # the parameter, not --runs


def test_the_text_says_how_low_no_runs_take_the_width(proposal, capsys) -> None:
    """`toolscale next` prints the width's floor beside the expected width, from the same proposal."""
    from toolscale.cli.next_runs import _render

    _render(proposal, None)
    text = capsys.readouterr().out
    assert f"expected gain-interval width {proposal.expected_width_after:.4f}" in text
    assert f"no runs take it below {proposal.width_floor:.4f}" in text
