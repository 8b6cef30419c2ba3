"""``toolscale demo``: every step end to end on a micro preset (the default suite), its summary, and that a
second run adds no runs; the full real part (the demo preset: minutes of training on 2 cores) and the full
simulated part (the default 342-run design) are ``slow`` tests."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from grid.registry import Registry
from toolscale.cli import main
from toolscale.cli.demo import SIM_EXPERIMENT, write_demo_config


MICRO = Path(__file__).with_name("demo_micro.toml")
"""The demo preset at micro scale (same sections and keys, tiny sizes): the default suite's end-to-end demo."""


def _keys(doc: dict) -> set[str]:
    """``section.key`` of a config document; arrays of tables (axes, ladder) give the union of their entries' keys."""
    out = set()
    for section, body in doc.items():
        for entry in body if isinstance(body, list) else [body]:
            out |= {f"{section}.{k}" for k in entry} if isinstance(entry, dict) else {section}
    return out


def test_the_micro_preset_has_every_section_and_key_of_the_demo_preset():
    import tomllib

    from toolscale.cli.project import example_config_text

    demo, micro = tomllib.loads(example_config_text("demo")), tomllib.loads(MICRO.read_text(encoding="utf-8"))
    assert _keys(demo) <= _keys(micro), sorted(_keys(demo) - _keys(micro))  # a key the demo gained: add it here
    assert [a["name"] for a in micro["axes"]] == [a["name"] for a in demo["axes"]]
    assert len(micro["ladder"]) == len(demo["ladder"]) and micro["lr_scan"]["rule"] == demo["lr_scan"]["rule"]


@pytest.mark.integration
@pytest.mark.timeout(1800)  # about 10 min on the 2 shared cores at load 11; a few minutes idle
def test_demo_end_to_end_on_the_micro_preset(tmp_path, capsys):
    """Every step of the demo's real part (collect, lr-scan on validation, design, launch on the warm local
    executor with kept checkpoints, fit of the envelope, report, allocate, verify) on the micro preset: 18 design
    runs, 6 scan runs and 4 verification runs of 5-38 optimizer steps each. Over 10 s because it is the one test
    of the whole pipeline as a user runs it; the demo preset's scale is the slow test below."""
    out = tmp_path / "demo"
    assert main(["demo", "--part", "real", "--out", str(out), "--preset", str(MICRO), "--budget", "3000"]) == 0
    printed = capsys.readouterr().out
    summary = printed[printed.index("=== toolscale demo: summary ==="):]
    law = re.search(r"law \w+: held-out MAE [\d.]+, max error [\d.]+, 90% interval coverage [\d.]+, "
                    r"extrapolation factor ([\d.]+)x", summary)
    assert law and 3.5 <= float(law.group(1)) < 16.0, summary  # a demo-sized held-out rung ...
    assert "below the full protocol's 16x" in summary and "docs/results/" in summary  # ... and the summary says so
    assert re.search(r"allocation a-\w+ of 3,000 usd: .+; predicted bpb [\d.]+", summary), summary
    assert re.search(r"verification \(1 seed per plan at m-xs\): realised gain", summary), summary
    scan = json.loads((out / "runs" / "lr_scan.json").read_text())
    assert scan["validation"] == "valid-calls" and len(scan["runs"]) == 6  # rates chosen on validation bpb
    assert all(r["valid_bpb"] is not None for r in scan["runs"] if r["status"] == "done")
    with Registry(out / "toolscale.duckdb", read_only=True) as reg:
        runs = reg.runs("demo-micro")
    assert len(runs) == 18 and {r.status for r in runs} == {"done"}, [r.error for r in runs if r.error][:2]
    assert {r.metadata["tokenizer"] for r in runs} == {"shared"}  # one tokenizer per experiment
    assert {r.split for r in runs} == {"fit", "heldout"} and sum(r.split == "heldout" for r in runs) == 3
    for r in runs:  # two kept checkpoints each, scored on validation; the chosen one on the test benchmarks
        assert len(r.checkpoints) == 2 and r.metadata["checkpoints"]["validation"] == "valid-calls"
        assert "indist-calls/bpb" in r.checkpoints[r.metadata["checkpoints"]["chosen_step"]]
    report = out / "report" / "demo-micro__indist-calls.md"
    assert report.is_file() and (out / "verification.png").stat().st_size > 5000
    # a second run trains nothing: every run is done already
    assert main(["demo", "--part", "real", "--out", str(out), "--preset", str(MICRO), "--budget", "3000"]) == 0
    assert "submitted 0 runs" in capsys.readouterr().out


@pytest.mark.slow
def test_simulated_part_end_to_end_then_rerun_adds_nothing(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--part", "simulated", "--out", str(out), "--budget", "1000"]) == 0
    printed = capsys.readouterr().out
    summary = printed[printed.index("=== toolscale demo: summary ==="):]
    assert f"registry: {(out / 'toolscale.duckdb').resolve()}" in summary
    assert "simulated (SIMULATED data): report" in summary
    alloc = re.search(r"allocation (a-\w+) of 4,000 usd: (.+); predicted score ([\d.]+) \(90% ([\d.]+)-([\d.]+)\); "
                      r"diversity-only baseline ([\d.]+)", summary)
    assert alloc, summary
    pred, lo, hi = (float(alloc.group(i)) for i in (3, 4, 5))
    assert lo <= pred <= hi
    report = out / "report-simulated" / f"{SIM_EXPERIMENT}__heldout-calls.md"
    assert report.exists() and "[SIMULATED]" in report.read_text()
    assert (out / "report-simulated" / f"{SIM_EXPERIMENT}__heldout-calls_plots" / "heldout.png").stat().st_size > 5000
    with Registry(out / "toolscale.duckdb", read_only=True) as reg:
        n_runs = len(reg.runs(SIM_EXPERIMENT))
        assert reg.allocations(SIM_EXPERIMENT)[0]["allocation_id"] == alloc.group(1)
    assert 250 <= n_runs <= 350  # the default preset: 3 fitted sizes x 110 points + 12 held out
    # the demo's fill step again: the same runs, none added
    cfg = out / "default.toml"
    assert main(["simulate", "--config", str(cfg), "--experiment", SIM_EXPERIMENT, "--benchmark", "heldout-calls"]) == 0
    with Registry(out / "toolscale.duckdb", read_only=True) as reg:
        assert len(reg.runs(SIM_EXPERIMENT)) == n_runs


def test_demo_config_points_into_the_out_folder(tmp_path):
    path = write_demo_config(tmp_path, "micro", "demo-micro", max_parallel=3)
    text = path.read_text()
    assert f'registry = "{(tmp_path / "toolscale.duckdb").resolve()}"' in text
    assert f'folder = "{(tmp_path / "runs").resolve()}"' in text
    assert 'name = "demo-micro"' in text and "max_parallel = 3" in text
    assert main(["validate", str(path)]) == 0


@pytest.mark.slow
@pytest.mark.integration
def test_real_part_end_to_end(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--part", "real", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    summary = printed[printed.index("=== toolscale demo: summary ==="):]
    assert re.search(r"law \w+: held-out MAE [\d.]+, max error [\d.]+, 90% interval coverage [\d.]+, "
                     r"extrapolation factor [3-9]\.\dx", summary), summary  # the demo's rung, ~4x
    assert "below the full protocol's 16x" in summary
    assert re.search(r"allocation a-\w+ of 5,000 usd: .+; predicted bpb [\d.]+", summary), summary
    assert re.search(r"small-to-large decision accuracy [\d.]+ over \d+ recipe pairs", summary), summary
    with Registry(out / "toolscale.duckdb", read_only=True) as reg:
        runs = reg.runs("demo-micro")
    assert len(runs) == 18 and {r.status for r in runs} == {"done"}, [r.error for r in runs if r.error][:2]
    assert {r.metadata["tokenizer"] for r in runs} == {"shared"}  # one tokenizer per experiment
    assert all(r.metadata["probe"]["measured_groundedness"] is not None for r in runs)  # the probe scored
    plots = out / "report" / "demo-micro__indist-calls_plots"
    assert {p.name for p in plots.iterdir()} >= {"axes.png", "heldout.png", "residuals.png", "hypotheses.png"}
    # the probe's measured groundedness as the quality axis, on the stored config (issue 18, item 6); a named
    # effective-data form, since --law auto may choose the form on N and D alone (a near-tie on 12 runs)
    capsys.readouterr()
    assert main(["fit", "--registry", str(out / "toolscale.duckdb"), "--experiment", "demo-micro", "--benchmark",
                 "indist-calls", "--metric", "bpb", "--law", "chinchilla", "--holdout", "split", "--bootstrap", "0",
                 "--axes", "tool_diversity,task_count,measured_groundedness", "--json"]) == 0
    measured = json.loads(capsys.readouterr().out)
    assert any(k.endswith("measured_groundedness") for k in measured["params"]), measured["params"]
    # a second run trains nothing: every run is done already
    assert main(["demo", "--part", "real", "--out", str(out)]) == 0
    assert "submitted 0 runs" in capsys.readouterr().out


def test_verification_line_puts_the_realised_gain_beside_the_predicted_one():
    from toolscale.cli.demo import _verification_line

    v = {"arms": [{"seeds": [0]}], "model_size": "tiny-xs", "realised_gain": -0.0012, "predicted_gain": 0.004,
         "predicted_gain_interval": [0.001, 0.007], "inside_interval": False, "decision": {"verdict": "recommend"}}
    line = _verification_line(v)
    assert line == ("verification (1 seed per plan at tiny-xs): realised gain -0.0012 over diversity-only, predicted "
                    "+0.004 [+0.001, +0.007]: outside the predicted interval; allocate said: recommend")
