"""`allocate` on imported runs: it says which model and token count it plans for, needs them when nothing else
says, and reports unspent budget and the caps that bound the plan."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from toolscale.cli import main

@pytest.fixture(scope="module")
def byo(tmp_path_factory, make_byo) -> tuple[str, str]:
    """The imported experiment of ``conftest.make_byo``, with 16 bootstrap draws."""
    return make_byo(tmp_path_factory.mktemp("byo"), 16)


def test_imported_runs_without_a_model_size_or_tokens_are_refused_and_change_nothing(byo, capsys):
    db, cfg = byo
    before = hashlib.sha256(Path(db).read_bytes()).hexdigest()
    capsys.readouterr()
    for extra in ([], ["--model-size", "1.4B"]):
        assert main(["allocate", "--budget", "5000", "--benchmark", "bfcl", "--registry", db, "--config", cfg,
                     *extra]) == 2
        err = capsys.readouterr().err
        assert "imported runs and the config has no [[ladder]]: pass --model-size N" in err
        assert err.strip().count("\n") == 0
    assert hashlib.sha256(Path(db).read_bytes()).hexdigest() == before


def test_allocate_says_what_it_assumed_unspent_budget_and_caps(byo, capsys):
    db, cfg = byo
    capsys.readouterr()
    assert main(["allocate", "--budget", "1e9", "--benchmark", "bfcl", "--registry", db, "--config", cfg,
                 "--model-size", "1.4B", "--tokens", "300B"]) == 0
    text = capsys.readouterr().out
    assert "planned for a model of N = 1.4e+09 parameters (--model-size) and 3e+11 training tokens (--tokens)" in text
    assert "unspent" in text and "cap: tool_diversity at 20 tools (1.25 x its largest tested level 16" in text
    assert main(["allocate", "--budget", "1e300", "--benchmark", "bfcl", "--registry", db, "--config", cfg,
                 "--model-size", "1.4B", "--tokens", "300B"]) == 0
    text = capsys.readouterr().out
    assert "Allocation of 1e+300 usd" in text and " of 1e+300 usd; unspent 1e+300 usd" in text  # not 300 digits
    assert main(["allocate", "--budget", "1e9", "--benchmark", "bfcl", "--registry", db, "--config", cfg,
                 "--model-size", "1.4B", "--tokens-per-param", "20", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["tokens"] == pytest.approx(2.8e10) and out["tokens_source"].startswith("--tokens-per-param")
    assert out["unspent"] > 0.99e9 and set(out["caps"]) == {"tool_diversity", "repair_rate"}
    assert out["plan"]["levels"]["tool_diversity"] == 20 and out["extrapolation_detail"]["tool_diversity"] == 1.25
    # every arm is held to the cap: the diversity-only baseline and the quality-pinned comparison too
    assert out["baseline_extrapolation"]["tool_diversity"] == 1.25 and out["baseline"]["levels"]["tool_diversity"] == 20
    assert all(v <= 1.25 + 1e-9 for k in ("extrapolation_detail", "baseline_extrapolation", "pinned_extrapolation")
               for v in out[k].values())


def test_a_model_outside_the_fitted_sizes_is_flagged_in_text_and_json(byo, capsys):
    """Planning for a model 10x smaller or larger than any fitted run says so, with the factor (the issue's 6.8M
    model planned from 70M-1.4B runs, with no warning); a model inside the fitted sizes says nothing."""
    db, cfg = byo
    common = ["allocate", "--budget", "5000", "--benchmark", "bfcl", "--registry", db, "--config", cfg,
              "--tokens", "20B"]
    capsys.readouterr()
    factors = {}
    for size in ("160M", "7M", "4.1B"):  # fitted: 70M-410M (1.4B held out)
        assert main([*common, "--model-size", size, "--json"]) == 0
        factors[size] = json.loads(capsys.readouterr().out)["size_extrapolation"]
    assert factors["160M"] == {}
    assert factors["7M"] == {"N": pytest.approx(10.0)} and factors["4.1B"] == {"N": pytest.approx(10.0)}
    assert main([*common, "--model-size", "7M"]) == 0
    text = capsys.readouterr().out
    assert "WARNING: the plan's model lies outside the fitted runs (model size x10" in text


def test_extrapolate_allows_more_and_widens_the_interval(byo, capsys):
    db, cfg = byo
    common = ["allocate", "--budget", "1e9", "--benchmark", "bfcl", "--registry", db, "--config", cfg,
              "--model-size", "1.4B", "--tokens", "300B", "--json"]
    assert main(common) == 0
    near = json.loads(capsys.readouterr().out)
    assert main([*common, "--extrapolate", "4"]) == 0
    far = json.loads(capsys.readouterr().out)
    assert far["plan"]["levels"]["tool_diversity"] == 64 and far["max_extrapolation"] == 4
    assert far["extrapolation_detail"]["tool_diversity"] == pytest.approx(4.0)
    assert far["baseline_extrapolation"]["tool_diversity"] == pytest.approx(4.0)  # said for the baseline as well
    width = [x["interval"][1] - x["interval"][0] for x in (near, far)]
    assert width[1] > width[0]  # two doublings past the tested maximum instead of a third of one


def test_an_lm_eval_results_folder_end_to_end_to_allocate(tmp_path, capsys, byo_config):
    """The README's lm-eval path, one command each: import the folder (the recipe read from the model name),
    fit, allocate for a model the runs do not include."""
    rng = np.random.default_rng(3)
    folder = tmp_path / "results"
    for n in (7e7, 1.6e8, 4.1e8, 1.0e9):
        for tools in (4, 8, 16):
            model = f"org/agent-{n:.2g}-tools-{tools}"
            for step in (1000, 4000):
                d = step * 2097152
                acc = 0.85 - 0.3 * (n / 7e7) ** -0.3 - 0.15 * (tools / 4) ** -0.6 - 0.05 * (d / 2e9) ** -0.3
                res = {"results": {"arc_easy": {"alias": "arc_easy", "acc,none": float(acc + rng.normal(0, 0.004)),
                                                "acc_stderr,none": 0.004}},
                       "config": {"model": "hf", "model_args": f"pretrained={model},revision=step{step}",
                                  "model_num_parameters": n}}
                sub = folder / model.replace("/", "__")
                sub.mkdir(parents=True, exist_ok=True)
                (sub / f"results_{step}.json").write_text(json.dumps(res))
    cfg = tmp_path / "agent.toml"
    cfg.write_text(byo_config.split("[[axes]]\nname = \"repair_rate\"")[0])
    db = str(tmp_path / "r.duckdb")
    assert main(["import-runs", str(folder), "--from", "lm-eval", "--experiment", "mine", "--registry", db,
                 "--map", "acc=score", "--weight", "acc_stderr", "--set", "tokens=step*2097152",
                 "--map", "tokens=train_tokens", "--set", "n_tools=regexp_extract(run_id, 'tools-([0-9]+)', 1)",
                 "--map", "n_tools=tool_diversity", "--json"]) == 0
    imported = json.loads(capsys.readouterr().out)
    assert imported["rows"] == 12 and imported["axes"] == ["tool_diversity"]
    assert main(["fit", "--registry", db, "--experiment", "mine", "--benchmark", "arc_easy", "--law", "saturating",
                 "--bootstrap", "16", "--jobs", "1", "--json"]) == 0
    fit = json.loads(capsys.readouterr().out)
    assert fit["weighted"] and fit["heldout_n"] == 3
    assert main(["allocate", "--registry", db, "--benchmark", "arc_easy", "--budget", "500", "--config", str(cfg),
                 "--model-size", "1.4B", "--tokens", "300B", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["model_params"] == 1.4e9 and plan["tokens"] == 3e11 and plan["plan"]["total_cost"] <= 500


def _readme_lmeval_commands() -> list[list[str]]:
    """The README's lm-eval commands (its first ``sh`` block under "Bring your own runs"), each as argv."""
    import shlex

    text = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    block = text.split("## Bring your own runs", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    joined = block.replace("\\\n", " ")
    return [shlex.split(line) for line in joined.splitlines() if line.strip() and not line.startswith("#")]


def test_the_readme_lm_eval_recipe_runs_end_to_end_on_models_with_one_final_step(tmp_path, monkeypatch, capsys,
                                                                                 byo_config):
    """The README's lm-eval commands, verbatim, on a folder where every model stops at the same step (one D):
    import-runs, fit and allocate each exit 0 and allocate prints a plan for the model the README names."""
    commands = _readme_lmeval_commands()
    assert [c[:2] for c in commands] == [["toolscale", "import-runs"], ["toolscale", "fit"],
                                         ["toolscale", "allocate"]]
    rng = np.random.default_rng(5)
    for n, label in ((7e7, "70m"), (1.6e8, "160m"), (4.1e8, "410m"), (1.0e9, "1b")):
        for tools in (4, 8, 16):
            model = f"org/agent-{label}-tools-{tools}"
            for step in (71000, 143000):  # every model's last checkpoint is step 143000
                acc = 0.85 - 0.3 * (n / 7e7) ** -0.3 - 0.15 * (tools / 4) ** -0.6 - 0.1 * (step / 1e3) ** -0.3
                res = {"results": {"arc_easy": {"alias": "arc_easy", "acc,none": float(acc + rng.normal(0, 0.004)),
                                                "acc_stderr,none": 0.004}},
                       "config": {"model": "hf", "model_args": f"pretrained={model},revision=step{step}",
                                  "model_num_parameters": n}}
                sub = tmp_path / "results" / model.replace("/", "__")
                sub.mkdir(parents=True, exist_ok=True)
                (sub / f"results_step{step}.json").write_text(json.dumps(res))
    (tmp_path / "my.toml").write_text(byo_config.split("[[axes]]\nname = \"repair_rate\"")[0])
    monkeypatch.chdir(tmp_path)  # the README's commands use the default registry, ./toolscale.duckdb
    for argv in commands:
        assert main(argv[1:]) == 0, f"{' '.join(argv)}: {capsys.readouterr().err}"
    out = capsys.readouterr().out
    assert "imported 12 runs into 'mine'" in out and "axes: tool_diversity" in out  # the last step of each model
    assert "Allocation of 50,000 usd for arc_easy" in out
    assert "planned for a model of N = 1.4e+09 parameters (--model-size) and 3e+11 training tokens (--tokens)" in out
    assert main([*commands[2][1:], "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["experiment"] == "mine" and plan["model_params"] == 1.4e9 and plan["tokens"] == 3e11
    assert plan["plan"]["levels"]["tool_diversity"] > 0 and 0 < plan["plan"]["total_cost"] <= 50000
