"""The code domain through the CLI and the config: init, validate, grid design, the protocol shared with demo."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from synth.domains import domain_of, get_domain
from synth.errors import RecipeError
from toolscale.cli import main
from toolscale.config import DOMAIN_KNOBS, TOOL_ONLY_SYNTH, ConfigError, load_config, parse_config

PRESETS = Path(__file__).resolve().parents[2] / "toolscale" / "presets"


def test_init_domain_code_writes_a_valid_config_that_designs_like_the_demo(tmp_path, capsys):
    path = tmp_path / "c.toml"
    assert main(["init", str(path), "--domain", "code"]) == 0
    cfg = load_config(path)
    assert cfg.experiment.domain == "code" and [a.name for a in cfg.axes] == ["tool_diversity", "task_count",
                                                                           "spec_dependency"]
    assert cfg.eval.benchmarks == ["code-indist", "code-heldout-apis"]
    capsys.readouterr()
    assert main(["grid", "design", str(path), "--dry-run", "--json"]) == 0
    code = json.loads(capsys.readouterr().out)
    demo = tmp_path / "d.toml"
    assert main(["init", str(demo), "--preset", "demo"]) == 0
    capsys.readouterr()
    assert main(["grid", "design", str(demo), "--dry-run", "--json"]) == 0
    tools = json.loads(capsys.readouterr().out)
    assert code["runs"] == tools["runs"] and code["heldout_runs"] == tools["heldout_runs"]
    assert code["extrapolation_factor"] == pytest.approx(tools["extrapolation_factor"])
    assert [c["train_flops"] for c in code["cells"]] == [c["train_flops"] for c in tools["cells"]]


def test_the_code_preset_keeps_the_demo_protocol():
    """Everything but the domain's own parts equals the demo preset: a protocol change to one must reach both."""
    demo = tomllib.loads((PRESETS / "demo.toml").read_text())
    code = tomllib.loads((PRESETS / "code.toml").read_text())
    for section in ("ladder", "lr_scan", "design", "probe", "train", "executor", "cost"):
        assert code.get(section) == demo.get(section), section
    own = ("benchmarks", "validation")  # the domain's test benchmarks and its validation split
    assert {k: v for k, v in code["eval"].items() if k not in own} == \
        {k: v for k, v in demo["eval"].items() if k not in own}
    assert code["eval"]["validation"] == "code-valid" and demo["eval"]["validation"] == "valid-calls"
    assert [(a["kind"], a["min"], a["max"], a["levels"], a["spacing"]) for a in code["axes"]] == \
        [(a["kind"], a["min"], a["max"], a["levels"], a["spacing"]) for a in demo["axes"]]
    assert {k: v for k, v in code["experiment"].items() if k not in ("name", "domain")} == \
        {k: v for k, v in demo["experiment"].items() if k != "name"}


def _code(**changes) -> dict:
    data = tomllib.loads((PRESETS / "code.toml").read_text())
    for path, value in changes.items():
        section, key = path.split("__")
        data.setdefault(section, {})[key] = value
    return data


@pytest.mark.parametrize("setting", sorted(TOOL_ONLY_SYNTH))
def test_every_tool_domain_synth_setting_is_refused_naming_it(setting):
    value = {"servers": ["python -m s"], "arg_values": {"a": ["b"]}, "heldout_servers": ["travel"], "min_tools": 5,
             "transform_rate": 0.5, "max_chain_len": 2, "max_turns": 4, "judge_threshold": 0.5,
             "llm_url": "http://h:1/v1", "llm": {"judge": {"base_url": "http://h:1/v1", "model": "m"}},
             "narratives": True, "narrative_min_judge": 0.5, "narrative_min_coherence": 2}[setting]
    with pytest.raises(ConfigError) as err:
        parse_config(_code(**{f"synth__{setting}": value}))
    lines = str(err.value).splitlines()
    assert len(lines) == 1 and f"synth.{setting} is a tool-domain setting" in lines[0]


def test_code_settings_and_a_revalidated_dump_pass():
    cfg = parse_config(_code(synth__error_rate=0.3, synth__backend="live"))
    again = parse_config(cfg.model_dump(mode="json"))  # a job re-reads the dumped config: defaults are no settings
    assert again == cfg


def test_axes_and_stages_the_code_domain_lacks_are_refused():
    data = _code()
    data["axes"][2]["name"] = "coverage_quota"
    with pytest.raises(ConfigError, match="axis 'coverage_quota' is not a knob of the code domain"):
        parse_config(data)
    with pytest.raises(ConfigError, match="grpo"):
        parse_config(_code(train__stages=["sft", "grpo"]))


def test_domains_recipes_and_capacity():
    cfg = parse_config(_code())
    dom = domain_of(cfg)
    assert dom.name == "code" and dom.knobs == DOMAIN_KNOBS["code"]
    recipe = dom.recipe({"tool_diversity": 13.0, "task_count": 1024.0, "spec_dependency": 0.5}, 7, cfg.synth)
    assert (recipe.tool_diversity, recipe.task_count, recipe.spec_dependency, recipe.seed) == (13, 1024, 0.5, 7)
    assert recipe.error_rate == cfg.synth.error_rate
    assert dom.tool_capacity(cfg) == 68
    tools = get_domain("tools")
    assert tools.recipe({"tool_diversity": 6.0}, 0).tool_diversity == 6
    with pytest.raises(RecipeError, match="unknown domain 'cod'.*did you mean 'code'"):
        get_domain("cod")


def test_synth_a_code_dataset_from_the_pipeline_helpers(tmp_path):
    from pipeline.job import recipe_for

    cfg = parse_config(_code())
    recipe = recipe_for(cfg, {"tool_diversity": 4.0, "task_count": 8.0, "spec_dependency": 1.0}, 0)
    manifest = domain_of(cfg).build(recipe, tmp_path)
    assert manifest.domain == "code" and manifest.counts["accepted"] == 8
    assert (tmp_path / "train.jsonl").is_file() and json.loads((tmp_path / "manifest.json").read_text())["domain"] == \
        "code"


def test_synth_cli_builds_a_code_recipe_and_refuses_tool_options(tmp_path, capsys):
    assert main(["synth", "--example-recipe", "--domain", "code"]) == 0
    text = capsys.readouterr().out
    assert 'domain = "code"' in text and "spec_dependency" in text
    recipe = tmp_path / "r.toml"
    recipe.write_text(text.replace("task_count = 128", "task_count = 3"))
    assert main(["synth", "--recipe", str(recipe), "--out", str(tmp_path / "d"), "--set", "spec_dependency=1.0",
                 "--json"]) == 0
    manifest = json.loads(capsys.readouterr().out)
    assert manifest["domain"] == "code" and manifest["counts"]["accepted"] == 3
    assert manifest["recipe"]["spec_dependency"] == 1.0
    assert main(["synth", "--recipe", str(recipe), "--out", str(tmp_path / "e"), "--server", "python -m x"]) == 2
    assert "--server is a tool-domain option" in capsys.readouterr().err
    assert not (tmp_path / "e").exists()


def test_the_committed_code_experiment_keeps_the_proxy_protocol(capsys):
    """docs/results/code/code.toml is proxy.toml (the tool domain's committed experiment) but for the domain's own
    parts, and it designs: the same runs and the same >= 16x held-out rung (issue 33's protocol rule)."""
    root = PRESETS.parents[1]
    code_path, proxy_path = root / "docs" / "results" / "code" / "code.toml", root / "docs" / "results" / "proxy.toml"
    code, proxy = tomllib.loads(code_path.read_text()), tomllib.loads(proxy_path.read_text())
    for section in ("ladder", "lr_scan", "design", "probe", "train", "cost"):
        assert code.get(section) == proxy.get(section), section
    own = ("benchmarks", "validation")
    assert {k: v for k, v in code["eval"].items() if k not in own} == \
        {k: v for k, v in proxy["eval"].items() if k not in own}
    assert {k: v for k, v in code["executor"].items() if k != "folder"} == \
        {k: v for k, v in proxy["executor"].items() if k != "folder"}
    assert [(a["kind"], a["min"], a["max"], a["levels"], a["spacing"]) for a in code["axes"]] == \
        [(a["kind"], a["min"], a["max"], a["levels"], a["spacing"]) for a in proxy["axes"]]
    assert code["experiment"]["domain"] == "code" and code["axes"][-1]["name"] == "spec_dependency"
    assert {k: v for k, v in code["experiment"].items() if k not in ("name", "domain", "registry")} == \
        {k: v for k, v in proxy["experiment"].items() if k not in ("name", "registry")}
    capsys.readouterr()
    assert main(["grid", "design", str(code_path), "--dry-run", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["runs"] == 45 and out["heldout_runs"] == 9 and out["extrapolation_factor"] >= 16.0
    assert out["resolution_roman"] == "IV"
