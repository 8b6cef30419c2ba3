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
    assert "measured_groundedness" in text and "against injected labels" in text
    assert "always-grounded baseline" in text and "balanced accuracy" in text and "kappa" in text
    assert "cost share against --target-flops" in text
    assert not reg.exists()


def test_cost_share_is_a_number_without_a_config(setup, capsys):
    _, d, _ = setup
    assert main(["probe", str(d), "--no-registry", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["probe_cost_share"] == 0.0 and out["kind"] == "copy"
    assert out["cost"]["target"] == "rung tiny-l of the default preset" and out["cost"]["target_train_flops"] > 0


def test_unknown_probe_kind_lists_the_kinds(setup, capsys):
    cfg, d, _ = setup
    cfg.write_text(cfg.read_text().replace("[probe]\n", '[probe]\nkind = "magic"\n'))
    assert main(["probe", str(d), "--config", str(cfg), "--no-registry"]) == 2
    err = capsys.readouterr().err
    assert "magic" in err and "copy, lm, hf:MODEL_DIR" in err and len(err.strip().splitlines()) == 1


def test_annotation_round_trip_and_bad_files(setup, capsys, tmp_path):
    _, d, _ = setup
    ann = tmp_path / "ann" / "sample"
    assert main(["probe", str(d), "--no-registry", "--export-annotation", str(ann), "--n", "12"]) == 0
    assert "annotation sample" in capsys.readouterr().out
    items = [json.loads(x) for x in (tmp_path / "ann" / "sample.jsonl").read_text().splitlines()]
    header = (tmp_path / "ann" / "sample.csv").read_text().splitlines()[0]
    assert len(items) == 12 and header.startswith("id,trajectory,call_id,tool,argument") and header.endswith("label,note")
    assert all(x["label"] == "" and x["history"] and x["arguments"] for x in items)
    assert "injected" not in header
    scores = {f"{s['trajectory']}:{s['call_id']}": s for s in map(json.loads, (d / "probe_scores.jsonl").read_text().splitlines())}
    for x in items:  # a perfect annotator who agrees with the injected labels
        x["label"] = "not grounded" if scores[x["id"]]["injected"] else "grounded"
    items[0]["label"] = "Unsure"
    lab = tmp_path / "labels.jsonl"
    lab.write_text("".join(json.dumps(x) + "\n" for x in items))
    assert main(["probe", str(d), "--import-annotation", str(lab), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["n_labelled"] == 11 and rep["n_unsure"] == 1 and rep["injected_agreement"] == 1.0
    probe_agree = sum(scores[x["id"]]["grounded"] == (x["label"] == "grounded") for x in items[1:]) / 11
    assert rep["agreement"] == pytest.approx(probe_agree)
    assert rep["agreement_ci"]["low"] <= rep["agreement"] <= rep["agreement_ci"]["high"]
    assert json.loads((d / "manifest.json").read_text())["probe_human"]["n_labelled"] == 11
    before = (d / "manifest.json").read_text()
    for bad, needle in (({**items[1], "id": "99:call_9"}, "row 1: unknown id '99:call_9'"),
                        ({**items[1], "label": "maybe"}, "row 1: label 'maybe' must be grounded, not grounded or unsure")):
        lab.write_text(json.dumps(bad) + "\n")
        assert main(["probe", str(d), "--import-annotation", str(lab)]) == 2
        err = capsys.readouterr().err
        assert needle in err and len(err.strip().splitlines()) == 1
    assert (d / "manifest.json").read_text() == before


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


def test_a_missing_figure_and_interval_print_as_n_a_without_a_stray_space() -> None:
    from types import SimpleNamespace

    from toolscale.cli.probe import _ci, _f

    assert f"agreement {_f(None)}{_ci(None)}, kappa" == "agreement n/a, kappa"
    assert f"{_f(0.81234)}{_ci(SimpleNamespace(low=0.7, high=0.9))}," == "0.812 [0.700, 0.900],"
