"""One config per experiment (issue 34): launch refuses a config whose run settings differ from the stored one."""

from __future__ import annotations

from toolscale.cli import main
from toolscale.cli.project import example_config_text


def test_launch_refuses_a_config_that_differs_from_the_designed_one_naming_the_keys(tmp_path, capsys,
                                                                                    monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # the preset's registry and run folder are relative
    text = example_config_text("micro")
    (tmp_path / "a.toml").write_text(text)
    assert main(["grid", "design", "a.toml"]) == 0
    capsys.readouterr()
    changed = text.replace("error_rate = 0.2 ", "error_rate = 0.41 ").replace("[train]\n", "[train]\nweight_decay = 0.03\n")
    (tmp_path / "b.toml").write_text(changed)
    assert main(["launch", "--config", "b.toml", "--dry-run"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "b.toml" in err[0] and "in synth.error_rate, train.weight_decay;" in err[0]
    moved = text.replace('folder = "./runs"', 'folder = "./elsewhere"').replace("max_parallel = 2", "max_parallel = 1")
    (tmp_path / "c.toml").write_text(moved)  # where runs execute may change
    assert main(["launch", "--config", "c.toml", "--dry-run"]) == 0
