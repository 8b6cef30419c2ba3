"""`toolscale probe DIR`: the command-line contract (--json fields, registry row, one-line errors)."""

from __future__ import annotations

import json

import pytest
import torch

from grid.registry import Registry
from probes.toydata import make_dataset, write_dataset
from toolscale.cli import main
from toolscale.cli.probe import target_flops_from_config
from toolscale.config import load_config

SMALL_PROBE = """
[probe]
hidden_size = 32
num_layers = 1
num_heads = 2
vocab_size = 320
max_seq_len = 128
batch_size = 4
train_steps = 3
sample_size = 8
"""


@pytest.fixture()
def setup(tmp_path):
    torch.set_num_threads(1)
    from toolscale.cli.project import example_config_text

    text = example_config_text("micro")
    head, _, rest = text.partition("[probe]")
    rest = rest[rest.index("\n[", 1):]  # drop the preset's [probe] body
    cfg = tmp_path / "exp.toml"
    cfg.write_text(head + SMALL_PROBE + rest)
    d = tmp_path / "d-1"
    write_dataset(make_dataset(10, defect_rate=0.5, seed=3, id_digits=2), str(d),
                  {"dataset_id": "d-1", "experiment": "toolscale-micro", "recipe": {"repair_rate": 0.5}, "seed": 3})
    return cfg, d, tmp_path / "reg.duckdb"


def test_probe_json_and_registry(setup, capsys):
    cfg, d, reg = setup
    assert main(["probe", str(d), "--config", str(cfg), "--registry", str(reg), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"measured_groundedness", "coverage", "agreement", "probe_cost_share"} <= set(out)
    target = target_flops_from_config(load_config(cfg), None)
    assert out["cost"]["target_train_flops"] == pytest.approx(target)
    assert out["probe_cost_share"] == pytest.approx(out["cost"]["total_flops"] / target)
    with Registry(reg, read_only=True) as r:
        row = r.dataset("d-1")
    assert row.experiment == "toolscale-micro" and row.recipe == {"repair_rate": 0.5}
    assert row.manifest["probe"]["n_actions"] == out["n_actions"] == len(row.manifest["probe_actions"])
    assert json.loads((d / "manifest.json").read_text())["probe"]["coverage"] == out["coverage"]


def test_probe_table(setup, capsys):
    cfg, d, reg = setup
    assert main(["probe", str(d), "--config", str(cfg), "--no-registry", "--target-flops", "1e12"]) == 0
    text = capsys.readouterr().out
    assert "measured_groundedness" in text and "calibrated against injected labels" in text
    assert not reg.exists()


@pytest.mark.parametrize("argv, needle, code", [
    (["probe", "/no/such/dir"], "does not exist", 2),
    (["probe", "{d}", "--model-size", "tiny-l"], "--model-size needs --config", 2),
    (["probe", "{d}", "--config", "{cfg}", "--model-size", "huge"], "unknown model size 'huge'", 2),
    (["probe", "{d}", "--target-flops", "-3"], "", 2),
])
def test_probe_errors(setup, capsys, argv, needle, code):
    cfg, d, _ = setup
    argv = [a.format(d=d, cfg=cfg) for a in argv]
    assert main(argv) == code
    err = capsys.readouterr().err
    assert needle in err and (not needle or len(err.strip().splitlines()) == 1)


def test_probe_keeps_the_experiment_synth_stored(setup, capsys):
    cfg, d, reg = setup
    m = json.loads((d / "manifest.json").read_text())
    del m["experiment"]
    (d / "manifest.json").write_text(json.dumps(m))
    with Registry(reg) as r:
        r.save_dataset("d-1", experiment="from-synth", recipe={"seed": 3}, seed=3, path=str(d), manifest=m)
    assert main(["probe", str(d), "--config", str(cfg), "--registry", str(reg)]) == 0
    with Registry(reg, read_only=True) as r:
        row = r.dataset("d-1")
    assert row.experiment == "from-synth" and row.seed == 3 and "probe" in row.manifest
