"""pipeline/lr_scan.py: a scan over real datasets and the shared tokenizer, a diverging run failed with its
log tail, the choice among the rest, the stored result that grid design reads."""

from __future__ import annotations

import copy
import math
import tomllib
from importlib import resources

import pytest

from pipeline.lr_scan import read_scan, run_lr_scan, scan_path, scan_steps
from toolscale.config import parse_config


def _config(tmp_path, **lr_scan):
    text = resources.files("toolscale.presets").joinpath("proxy.toml").read_text(encoding="utf-8")
    data = tomllib.loads(text)
    data["executor"]["folder"] = str(tmp_path / "runs")
    data["axes"][1]["min"], data["axes"][1]["max"] = 16, 32  # small datasets: this tests the plumbing
    data["train"]["max_epochs"] = None
    data["lr_scan"].update(lr_scan)
    return parse_config(copy.deepcopy(data))


def test_diverging_run_is_failed_with_its_tail_and_the_rest_choose(tmp_path):
    cfg = _config(tmp_path, learning_rates=[0.001, 0.01, 0.1], rungs=["p-xs", "p-m"])
    calls = []

    def trainer(cfg_json, rung, lr, data_dir, tok_dir, out_dir):
        calls.append((rung, lr, data_dir, tok_dir))
        base = {"rung": rung, "width": cfg.model_size(rung).hidden_size, "learning_rate": lr,
                "steps": scan_steps(cfg, cfg.model_size(rung))}
        if lr == 0.1:
            return {**base, "status": "failed",
                    "error": "training loss diverged (nan) at step 4 of 25; last logged losses: step 3: 9.1"}
        # validation bits per byte pick the rate; the training loss (the opposite order) never does
        bpb = abs(math.log10(lr) + (2 if rung == "p-xs" else 3))
        return {**base, "status": "done", "loss": 9.0 - bpb, "valid_bpb": bpb, "valid_step": 3}

    result = run_lr_scan(cfg, {"tool_diversity": 12, "task_count": 16, "db_diversity": 4, "repair_rate": 0.5},
                         trainer=trainer)
    assert len(calls) == 6 and len({c[2] for c in calls}) == 1  # one dataset for every scan run
    assert calls[0][3] is not None and (tmp_path / "runs" / "datasets").is_dir()  # the shared tokenizer
    assert result.best == {"p-xs": 0.01, "p-m": 0.001} and result.validation == "valid-calls"
    failed = [r for r in result.runs if r.status == "failed"]
    assert len(failed) == 2 and all("diverged (nan) at step 4" in r.error for r in failed)
    w = {r: cfg.model_size(r).hidden_size for r in ("p-xs", "p-m", "p-l")}
    assert math.log(10) / math.log(w["p-m"] / w["p-xs"]) > result.exponent == 2.0  # clipped to [0, 2]
    # the line through the two best rates, clipped, is centred on their mean: lr(h) = e^(mean) (h / h_gm)^-2
    centre = math.exp((math.log(0.01) + math.log(0.001)) / 2)
    gm = math.sqrt(w["p-xs"] * w["p-m"])
    assert result.learning_rates["p-l"] == pytest.approx(centre * (w["p-l"] / gm) ** -2.0)
    assert read_scan(cfg) == result and scan_path(cfg).is_file()


@pytest.mark.slow
def test_a_real_scan_trains_and_a_huge_rate_fails(tmp_path):
    cfg = _config(tmp_path, learning_rates=[0.01, 1e6], rungs=["p-xs"], tokens_per_param=6.0)
    result = run_lr_scan(cfg, {"tool_diversity": 12, "task_count": 16, "db_diversity": 4, "repair_rate": 0.5})
    by_lr = {r.learning_rate: r for r in result.runs}
    assert by_lr[0.01].status == "done" and by_lr[0.01].loss > 0 and 0 < by_lr[0.01].valid_bpb < 10
    assert by_lr[0.01].valid_step in range(1, by_lr[0.01].steps + 1)
    assert result.best == {"p-xs": 0.01}
