"""Config: round trip, the shipped presets, and every validation error names its field."""

from __future__ import annotations

import tomllib

import pytest

from toolscale.cli import main
from toolscale.cli.project import example_config_text
from toolscale.config import DEFAULT_AXES, ExperimentConfig, load_config, parse_config, training_flops
from toolscale.errors import ConfigError


def _base() -> dict:
    return tomllib.loads(example_config_text("default"))


@pytest.mark.parametrize("preset", ["default", "micro"])
def test_presets_validate_and_have_default_axes(preset: str) -> None:
    cfg = parse_config(tomllib.loads(example_config_text(preset)))
    assert tuple(a.name for a in cfg.axes) == DEFAULT_AXES
    assert {a.kind for a in cfg.axes} == {"diversity", "quality"}
    assert len(cfg.ladder) >= 2


def test_round_trip_through_json_is_identical() -> None:
    cfg = parse_config(_base())
    again = ExperimentConfig.model_validate_json(cfg.model_dump_json())
    assert again == cfg
    assert again.model_dump() == cfg.model_dump()


def test_config_is_frozen() -> None:
    cfg = parse_config(_base())
    with pytest.raises(Exception):
        cfg.experiment.name = "other"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (lambda d: d["experiment"].update(colour="red"), "experiment.colour: Extra inputs are not permitted"),
        (lambda d: d["axes"][0].update(max=2.0, min=4.0), "empty range"),
        (lambda d: d["axes"][0].update(kind="quantity"), "axes.0.kind"),
        (lambda d: d["axes"][1].update(name="tool_diversity"), "duplicate axis names: tool_diversity"),
        (lambda d: d["axes"][0].update(min=0.0), "log spacing needs min > 0"),
        (lambda d: d["axes"].clear(), "at least one axis"),
        (lambda d: d["ladder"][0].update(hidden_size=2), "ladder.0.hidden_size"),
        (lambda d: d["experiment"].update(target_model_size="huge"), "'huge' is not in the ladder"),
        (lambda d: d["experiment"].update(budget_unit="eur"), "experiment.budget_unit"),
        (lambda d: d["executor"].update(kind="k8s"), "executor.kind"),
        (lambda d: d["design"].update(foldover=["nope"]), "unknown axes ['nope']"),
        (lambda d: d["axes"][3].update(cost_per_unit=-1), "axes.3.cost_per_unit"),
        (lambda d: d.setdefault("synth", {}).update(llm={"writer": {"base_url": "http://h/v1", "model": "m"}}),
         "synth.llm: unknown LLM role 'writer'"),
        (lambda d: d.setdefault("synth", {}).update(llm={"policy": {"base_url": "http://h/v1", "model": "m",
                                                                    "concurrency": 0}}),
         "synth.llm.policy.concurrency: Input should be greater than or equal to 1 (got 0)"),
        (lambda d: d.setdefault("synth", {}).update(llm={"policy": {"base_url": "http://h/v1", "model": "m",
                                                                    "price_out": "n/a"}}),
         "synth.llm.policy.price_out: Input should be a valid number (got 'n/a')"),
    ],
)
def test_each_validation_error_names_the_field(mutate, needle: str) -> None:
    data = _base()
    mutate(data)
    with pytest.raises(ConfigError) as err:
        parse_config(data, source="x.toml")
    assert needle in str(err.value)
    assert str(err.value).startswith("x.toml:")


def test_several_errors_are_listed_one_per_line() -> None:
    data = _base()
    data["experiment"]["colour"] = "red"
    data["ladder"][0]["num_layers"] = 0
    with pytest.raises(ConfigError) as err:
        parse_config(data)
    lines = str(err.value).splitlines()
    assert len(lines) == 2
    assert any("ladder.0.num_layers" in line for line in lines)


def test_load_config_errors(tmp_path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[experiment\nname = 'x'")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(bad)


def test_six_n_d():
    assert training_flops(82016, 1000) == 6 * 82016 * 1000
    assert training_flops(0, 10) == 0


def test_planned_flops_is_six_n_d_of_the_planned_tokens() -> None:
    m = parse_config(_base()).ladder[0]
    assert m.planned_flops == 6 * m.approx_params * m.max_steps * m.batch_size * m.max_seq_len


def test_ladder_must_run_from_smallest_to_largest() -> None:
    data = _base()
    data["ladder"] = list(reversed(data["ladder"]))
    with pytest.raises(ConfigError, match="smallest to largest parameter count N") as err:
        parse_config(data, source="x.toml")
    assert repr(data["ladder"][1]["name"]) in str(err.value)


def test_target_size_is_the_configured_rung_else_the_largest() -> None:
    data = _base()
    cfg = parse_config(data)
    assert cfg.target_size.name == max(cfg.ladder, key=lambda m: m.approx_params).name == cfg.ladder[-1].name
    data["experiment"]["target_model_size"] = data["ladder"][0]["name"]
    assert parse_config(data).target_size.name == data["ladder"][0]["name"]


def test_approx_params_matches_formula() -> None:
    cfg = parse_config(_base())
    m = cfg.ladder[0]
    h, f, v, n = m.hidden_size, m.ffn_size, m.vocab_size, m.num_layers
    assert m.approx_params == 2 * v * h + n * (4 * h * h + 3 * h * f + 2 * h) + h
    assert m.approx_params_nonembedding == m.approx_params - 2 * v * h


def test_init_then_validate_cli(tmp_path, capsys) -> None:
    path = tmp_path / "exp.toml"
    assert main(["init", str(path)]) == 0
    assert main(["validate", str(path)]) == 0
    assert "valid" in capsys.readouterr().out
    assert main(["init", str(path)]) == 2  # refuses to overwrite
    assert "exists" in capsys.readouterr().err


def test_validate_cli_prints_field_by_field(tmp_path, capsys) -> None:
    path = tmp_path / "exp.toml"
    path.write_text(example_config_text("default").replace('kind = "diversity"\nunit = "tools"', 'kind = "lots"\nunit = "tools"', 1)
                    .replace("levels = 4", "levels = 0", 1))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "axes.0.kind" in err and "axes.0.levels" in err
    assert "2 problems" in err


def test_synth_llm_roles_reach_the_recipe() -> None:
    from synth.models import Recipe

    data = _base()
    data.setdefault("synth", {})["llm"] = {"judge": {"base_url": "http://127.0.0.1:8000/v1", "model": "q",
                                                      "price_in": 1, "concurrency": 4}}
    cfg = parse_config(data)
    settings = {k: v for k, v in cfg.synth.model_dump().items() if k in Recipe.model_fields}  # as pipeline/job.py
    recipe = Recipe.from_axes({"task_count": 8}, **settings)
    assert recipe.llm["judge"] == cfg.synth.llm["judge"] and recipe.llm["judge"].price_in == 1.0


MIDTRAIN_AXIS = {"name": "midtrain_tokens", "kind": "stage", "unit": "tokens", "min": 0.0, "max": 1e5,
                 "spacing": "linear"}


@pytest.mark.parametrize(
    ("train", "synth", "axis", "needle"),
    [
        ({"stages": ["sft", "pretrain"]}, {}, None, "train.stages.1"),
        ({"stages": ["sft", "midtrain"]}, {"narratives": True}, None, "in the order midtrain, sft, grpo"),
        ({"stages": ["midtrain"]}, {"narratives": True}, None, "stages must include 'sft'"),
        ({"stages": ["midtrain", "sft"]}, {}, None, "stage 'midtrain' has no corpus"),
        ({"stages": ["sft", "grpo"], "grpo_n_envs": 0}, {}, None, "stage 'grpo' needs environments"),
        ({}, {"narratives": True}, MIDTRAIN_AXIS, "needs 'midtrain' in train.stages"),
        ({"stages": ["sft", "grpo"]}, {}, {**MIDTRAIN_AXIS, "name": "grpo_steps", "kind": "diversity", "min": 1.0},
         "axis 'grpo_steps' must have kind 'stage'"),
        ({"stages": ["midtrain", "sft"]}, {"narratives": True}, {**MIDTRAIN_AXIS, "name": "rl_steps"},
         "which only midtrain_tokens, grpo_steps can have"),
        ({"objective": "ppo"}, {}, None, "objective must be 'sft' or 'grpo'"),
        ({"stages": ["sft", "grpo"], "grpo_draw_cap": 0}, {}, None, "train.grpo_draw_cap"),
        ({"stages": ["sft", "grpo"], "grpo_generations": 1}, {}, None, "train.grpo_generations"),
        ({"stages": ["sft", "grpo"], "grpo_draw_cap": 2, "grpo_prompts_per_step": 3}, {}, None,
         "train.grpo_draw_cap = 2 is below train.grpo_prompts_per_step = 3"),
        ({"stages": ["sft", "grpo"], "grpo_n_envs": 2}, {}, None, "the curriculum's 3 phases need 3 or more"),
        ({"stages": ["sft", "grpo"], "warmstart_n_envs": 0}, {}, None, "set both to 0 (no warm start)"),
        ({"stages": ["sft", "grpo"], "grpo_reward": "shaped"}, {}, None, "train.grpo_reward"),
        ({"stages": ["sft", "grpo"], "grpo_top_p": 0}, {}, None, "train.grpo_top_p"),
        ({"stages": ["sft", "grpo"], "warmstart_loss": "prompt"}, {}, None, "train.warmstart_loss"),
        ({"stages": ["sft", "grpo"], "warmstart_copy_drills": -1}, {}, None, "train.warmstart_copy_drills"),
        ({"stages": ["sft", "grpo"], "grpo_beta": -0.1}, {}, None, "train.grpo_beta"),
        ({"stages": ["sft", "grpo"], "grpo_beta": float("nan")}, {}, None, "train.grpo_beta"),
        ({"stages": ["sft", "grpo"], "grpo_negative_weight": 1.5}, {}, None, "train.grpo_negative_weight"),
        ({"stages": ["sft", "grpo"], "grpo_negative_weight": -0.5}, {}, None, "train.grpo_negative_weight"),
    ],
)
def test_stage_config_errors(train, synth, axis, needle) -> None:
    data = _base()
    data.setdefault("train", {}).update(train)
    data.setdefault("synth", {}).update(synth)
    if axis:
        data["axes"].append(axis)
    with pytest.raises(ConfigError) as err:
        parse_config(data, source="x.toml")
    assert needle in str(err.value)


def test_stages_and_the_old_objective() -> None:
    data = _base()
    data.setdefault("train", {})["objective"] = "grpo"
    cfg = parse_config(data)
    assert cfg.train.stages == ["sft", "grpo"] and cfg.train.objective == "grpo"
    data = _base()
    data.setdefault("train", {}).update(stages=["midtrain", "sft"])
    data.setdefault("synth", {})["narratives"] = True
    data["axes"].append(MIDTRAIN_AXIS)
    cfg = parse_config(data)
    assert cfg.train.objective == "sft" and cfg.axis("midtrain_tokens").kind == "stage"


@pytest.mark.parametrize("content,needle", [("not json\n", "line 1 is not a JSON object"),
                                            ('{"text": "ok"}\n{"body": "x"}\n', "line 2"),
                                            (None, "does not exist")])
def test_a_bad_corpus_file_fails_before_anything_runs(tmp_path, capsys, content, needle) -> None:
    corpus = tmp_path / "corpus.jsonl"
    if content is not None:
        corpus.write_text(content)
    text = example_config_text("default") + f'\n[train]\nstages = ["midtrain", "sft"]\nmidtrain_corpus = "{corpus}"\n'
    if "[train]" in example_config_text("default"):
        pytest.skip("the preset has its own [train] table")
    path = tmp_path / "exp.toml"
    path.write_text(text)
    assert main(["validate", str(path)]) == 2
    assert needle in capsys.readouterr().err
    assert main(["grid", "design", str(path), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.strip().count("\n") == 0


@pytest.mark.parametrize("preset", ["proxy", "demo"])
def test_protocol_presets_init_and_validate(tmp_path, capsys, monkeypatch, preset) -> None:
    monkeypatch.chdir(tmp_path)  # the presets' run folders are relative: no scan result here
    path = tmp_path / f"{preset}.toml"
    assert main(["init", str(path), "--preset", preset]) == 0
    assert main(["validate", str(path)]) == 0
    cfg = load_config(path)
    assert cfg.train.tokenizer == "shared" and cfg.train.max_epochs == 4.0 and cfg.design.param_count == "nonembedding"
    from toolscale.config import COPY_MIN_LAYERS

    assert min(m.num_layers for m in cfg.ladder) >= COPY_MIN_LAYERS  # a proxy that can copy (issue 29)
    assert len({m.vocab_size for m in cfg.ladder}) == 1
    # grid design without the scan's result is refused, naming the command to run
    assert main(["grid", "design", str(path), "--registry", str(tmp_path / "r.duckdb")]) == 2
    assert f"run `toolscale lr-scan {path}` first" in capsys.readouterr().err


def test_shared_tokenizer_needs_one_vocabulary() -> None:
    data = _base()
    data["train"] = {"tokenizer": "shared"}
    data["experiment"].pop("target_model_size", None)
    data["ladder"] = [dict(data["ladder"][0], name="a", vocab_size=512), dict(data["ladder"][0], name="b", vocab_size=1024)]
    with pytest.raises(ConfigError, match=r"train.tokenizer = 'shared' needs one vocab_size for every proxy rung, "
                                          r"got \[512, 1024\]"):
        parse_config(data)
    data = _base()
    data["lr_scan"] = {"rungs": ["nope"], "learning_rates": [0.01, 0.02]}
    with pytest.raises(ConfigError, match=r"lr_scan.rungs names unknown rungs \['nope'\]"):
        parse_config(data)


def test_validate_refuses_golden_grpo_episodes_over_the_budget(tmp_path, capsys) -> None:
    """``validate`` builds the config's RL environments and refuses a policy budget or a context their golden
    episodes exceed, naming how many; the same config with room passes."""
    text = example_config_text("default")
    if "[train]" in text:
        pytest.skip("the preset has its own [train] table")
    base = text + '\n[train]\nstages = ["sft", "grpo"]\ngrpo_n_envs = 3\n'
    path = tmp_path / "rl.toml"
    path.write_text(base + "grpo_max_completion_length = 16\n")
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "of 3 golden GRPO episodes exceed train.grpo_max_completion_length = 16" in err
    path.write_text(base.replace("max_steps = ", "max_seq_len = 128\nmax_steps = ", 1))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "golden GRPO episodes (prompt, calls and observations) exceed max_seq_len = 128" in err
    path.write_text(base.replace("max_steps = ", "max_seq_len = 4096\nmax_steps = "))
    assert main(["validate", str(path)]) == 0


@pytest.mark.parametrize("preset", ["default", "micro", "demo", "proxy", "code"])
def test_every_recipe_a_design_can_ask_for_builds_from_what_validate_accepts(preset, tmp_path) -> None:
    """One declaration of each [synth] setting (issue 34): a job builds its recipe from the validated config at
    every axis's extremes, so a config that validate accepts is never refused inside a job."""
    from importlib import resources

    from pipeline.job import recipe_for
    from synth.models import Recipe
    from toolscale.config import SynthSpec

    assert issubclass(Recipe, SynthSpec) and set(SynthSpec.model_fields) <= set(Recipe.model_fields)
    path = tmp_path / "c.toml"
    path.write_text(resources.files("toolscale.presets").joinpath(f"{preset}.toml").read_text())
    cfg = load_config(path)
    for end in ("min", "max"):
        recipe = recipe_for(cfg, {a.name: getattr(a, end) for a in cfg.axes}, seed=1)
        assert recipe.seed == 1
    synth = {k: v for k, v in cfg.synth.model_dump().items()}
    if cfg.experiment.domain == "tools":
        assert Recipe.from_axes({}, **synth).max_chain_len == cfg.synth.max_chain_len


def test_a_synth_setting_a_recipe_refuses_is_refused_by_validate() -> None:
    data = _base()
    data["synth"] = {"max_chain_len": 10}  # a Recipe holds at most 8 calls per plan
    with pytest.raises(ConfigError, match="max_chain_len"):
        parse_config(data)


def test_config_hash_and_differences_name_what_changes_runs() -> None:
    from toolscale.config import config_differences, config_hash

    cfg = parse_config(_base())
    stored = cfg.model_dump(mode="json")
    other = _base()
    other.setdefault("executor", {}).update(kind="debug", max_parallel=7)  # where runs execute, not what they are
    assert config_differences(stored, parse_config(other)) == []
    assert config_hash(parse_config(other)) == config_hash(cfg) == config_hash(stored)
    changed = _base()
    changed.setdefault("synth", {})["error_rate"] = 0.43
    changed.setdefault("train", {})["weight_decay"] = 0.07
    assert config_differences(stored, parse_config(changed)) == ["synth.error_rate", "train.weight_decay"]
    assert config_hash(parse_config(changed)) != config_hash(cfg)


@pytest.mark.parametrize(("train", "warns"), [
    ({"stages": ["sft", "grpo"], "grpo_prompts_per_step": 8, "grpo_draw_cap": 8}, True),
    ({"stages": ["sft", "grpo"], "grpo_prompts_per_step": 2, "grpo_draw_cap": 8}, False),
    ({"stages": ["sft", "grpo"], "grpo_prompts_per_step": 8, "grpo_draw_cap": 8, "grpo_abf": False}, False),
    ({"stages": ["sft"], "grpo_prompts_per_step": 8, "grpo_draw_cap": 8}, False),
])
def test_abf_warning_when_the_draw_cap_leaves_no_room(train, warns) -> None:
    data = _base()
    data.setdefault("train", {}).update(train)
    warning = parse_config(data, source="x.toml").train.abf_warning
    assert (warning is not None) == warns
    if warns:
        assert "grpo_draw_cap = train.grpo_prompts_per_step = 8" in warning and "skipped" in warning


def test_kept_steps_are_even_or_halving_and_a_run_too_short_is_refused() -> None:
    from toolscale.config import kept_steps, min_kept_steps

    assert kept_steps(741, 5) == [148, 296, 445, 593, 741]
    assert kept_steps(741, 5, "log") == [46, 93, 185, 370, 741]  # each about half the next
    assert kept_steps(10, 0, "log") == [] and min_kept_steps(0, "log") == 0
    for k in range(1, 8):  # the fewest steps that give k distinct checkpoints, and one fewer does not
        for spacing in ("linear", "log"):
            n = min_kept_steps(k, spacing)
            assert len(kept_steps(n, k, spacing)) == k and kept_steps(n, k, spacing)[-1] == n
            with pytest.raises(ValueError, match=f"{k} {spacing}-spaced checkpoints need at least {n} steps; "
                                                  f"the run has {n - 1}"):
                kept_steps(n - 1, k, spacing)
    assert [min_kept_steps(k, "log") for k in (4, 5, 6)] == [6, 12, 24]
    with pytest.raises(ValueError, match="checkpoint spacing must be one of linear, log, got 'cubic'"):
        kept_steps(10, 2, "cubic")
