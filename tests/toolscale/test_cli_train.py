"""``toolscale train``: the command-line contract of issue 8 (one real, short SFT run)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolscale.cli import main

TINY_DATA = Path(__file__).parents[1] / "train" / "fixtures" / "tiny"


@pytest.fixture(autouse=True)
def _one_thread():
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_train_json(tmp_path, capsys):
    out = tmp_path / "model"
    code = main(["train", "--data", str(TINY_DATA), "--model-size", "tiny-s", "--out", str(out),
                 "--max-steps", "3", "--threads", "1", "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    report = json.loads(captured.out)  # nothing but the JSON on stdout
    assert report["model_size"] == "tiny-s" and report["steps"] == 3
    assert report["train_flops_6nd"] == 6 * report["params_nonembedding"] * report["train_tokens"]
    assert report["train_flops"] > report["train_flops_6nd"]  # attention and the unembedding counted
    assert (out / "config.json").is_file() and (out / "tokenizer.json").is_file()


def test_train_text_and_config(tmp_path, capsys):
    cfg = tmp_path / "c.toml"
    main(["init", str(cfg), "--preset", "micro"])
    capsys.readouterr()
    code = main(["train", "--config", str(cfg), "--data", str(TINY_DATA), "--model-size", "tiny-s",
                 "--out", str(tmp_path / "m"), "--max-steps", "2", "--threads", "1"])
    out = capsys.readouterr().out
    assert code == 0 and "trained tiny-s" in out and "for 2 steps" in out


@pytest.mark.parametrize("argv,message", [
    (["--model-size", "huge"], "unknown model size 'huge'; known: "),
    (["--model-size", "tiny-s", "--max-steps", "0"], "must be a positive integer, got 0"),
])
def test_bad_input_one_line_exit_2(tmp_path, capsys, argv, message):
    code = main(["train", "--data", str(TINY_DATA), "--out", str(tmp_path / "m"), *argv])
    err = capsys.readouterr().err
    assert code == 2 and message in err
    assert not (tmp_path / "m").exists()


def test_missing_data_folder(tmp_path, capsys):
    code = main(["train", "--data", str(tmp_path / "nope"), "--model-size", "tiny-s", "--out", str(tmp_path / "m")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "does not exist" in err and len(err.splitlines()) == 1


def test_missing_sft_arguments(tmp_path, capsys):
    code = main(["train", "--out", str(tmp_path / "m")])
    assert code == 2 and "needs --data DIR and --model-size NAME" in capsys.readouterr().err


def test_grpo_needs_envs_and_init(tmp_path, capsys):
    code = main(["train", "--objective", "grpo", "--out", str(tmp_path / "m"), "--envs", "x.jsonl"])
    assert code == 2 and "needs --envs FILE and --init MODEL_DIR" in capsys.readouterr().err


def test_grpo_from_an_sft_run(tmp_path, capsys):
    from synth.envs.build import build_envs
    from synth.envs.io import dump_envs

    sft = tmp_path / "sft"
    assert main(["train", "--data", str(TINY_DATA), "--model-size", "tiny-s", "--out", str(sft),
                 "--max-steps", "1", "--threads", "1"]) == 0
    envs = tmp_path / "envs.jsonl"
    dump_envs(build_envs(1, seed=0, distractors=None), envs)   # its prompt fits tiny-s's 1024 positions
    capsys.readouterr()
    from importlib import resources

    cfg = tmp_path / "c.toml"   # the config's grpo_* settings reach train_grpo
    cfg.write_text(resources.files("toolscale.presets").joinpath("micro.toml").read_text().replace(
        "[train]\n", "[train]\ngrpo_prompts_per_step = 1\ngrpo_draw_cap = 1\ngrpo_max_completion_length = 16\n", 1))
    code = main(["train", "--objective", "grpo", "--envs", str(envs), "--init", str(sft), "--out",
                 str(tmp_path / "rl"), "--max-steps", "1", "--num-generations", "2", "--threads", "1", "--json",
                 "--config", str(cfg)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    report = json.loads(captured.out)
    assert report["objective"] == "grpo" and report["steps"] == 1
    stats = json.loads((tmp_path / "rl" / "train_stats.json").read_text())
    assert (stats["num_generations"], stats["prompts_per_step"], stats["draw_cap"]) == (2, 1, 1)
    assert stats["max_completion_length"] == 16 and stats["steps"][0]["episodes"] == 2
