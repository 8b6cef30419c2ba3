"""Wall-clock checkpoints and stop requests in SFT: a save every ``checkpoint_every_s`` without step saves; a stop
request saves at that step, raises, and the resumed run ends where an uninterrupted one does."""

from __future__ import annotations

import pytest

from toolscale.config import ModelSize
from train.checkpoint import last_checkpoint
from train.interrupt import Interrupted
from train.sft import read_stats, train_sft

SIZE = ModelSize(name="t", hidden_size=32, num_layers=1, num_heads=2, vocab_size=400, max_steps=6, batch_size=4,
                 learning_rate=3e-3, max_seq_len=512)


def test_wall_clock_checkpoints_without_step_saves(tiny_data, tmp_path):
    train_sft(tiny_data, SIZE, tmp_path, save_steps=0, checkpoint_every_s=1e-6)
    assert last_checkpoint(tmp_path).name == "checkpoint-6"  # saved on time at every step; the limit keeps one
    train_sft(tiny_data, SIZE, tmp_path / "none", save_steps=0)
    assert last_checkpoint(tmp_path / "none") is None


def test_a_stop_request_saves_at_that_step_and_the_run_resumes(tiny_data, tmp_path):
    whole = train_sft(tiny_data, SIZE, tmp_path / "whole", seed=2, save_steps=0)
    seen = {"step": 0}
    with pytest.raises(Interrupted, match="SIGTERM received; checkpoint saved at step 3 of 6"):
        train_sft(tiny_data, SIZE, tmp_path / "cut", seed=2, save_steps=0, on_step=lambda s, n, l: seen.update(step=s),
                  should_stop=lambda: "SIGTERM received" if seen["step"] >= 3 else None)
    assert last_checkpoint(tmp_path / "cut").name == "checkpoint-3" and read_stats(tmp_path / "cut") is None
    resumed = train_sft(tiny_data, SIZE, tmp_path / "cut", seed=2, save_steps=0, keep_checkpoints=False)
    assert resumed.train_tokens == whole.train_tokens and resumed.steps == 6
    a, b = (read_stats(tmp_path / d)["loss_curve"] for d in ("whole", "cut"))
    assert [p["loss"] for p in b] == pytest.approx([p["loss"] for p in a], rel=1e-5)
    assert last_checkpoint(tmp_path / "cut") is None  # deleted after success
