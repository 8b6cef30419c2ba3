"""Accounting: loss curves from Trainer logs, saved wall time (6 N D itself: tests/toolscale/test_config.py)."""

from __future__ import annotations

import json

from train.accounting import ACCOUNTING_FILE, loss_curve, read_accounting


def test_loss_curve_keeps_training_logs_only():
    history = [{"loss": 7.0, "step": 1, "num_input_tokens_seen": 100}, {"eval_loss": 3.0, "step": 1},
               {"loss": 6.5, "step": 2}, {"train_runtime": 1.0, "step": 2}]
    assert loss_curve(history) == [{"step": 1, "loss": 7.0, "tokens": 100}, {"step": 2, "loss": 6.5}]


def test_read_accounting(tmp_path):
    assert read_accounting(None) == {} and read_accounting(tmp_path) == {}
    (tmp_path / ACCOUNTING_FILE).write_text(json.dumps({"wall_s": 3.5, "step": 4}))
    assert read_accounting(tmp_path)["wall_s"] == 3.5
