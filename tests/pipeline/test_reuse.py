"""pipeline/reuse.py: stage folders published once, atomically, and seeded into another workdir."""

from __future__ import annotations

from pipeline.reuse import publish, reuse, stage_key


def test_publish_then_reuse_copies_the_folders_and_keeps_the_first_copy(tmp_path):
    cache, a, b = tmp_path / "cache", tmp_path / "a", tmp_path / "b"
    cache.mkdir()
    (a / "model" / "checkpoints").mkdir(parents=True)
    (a / "model" / "weights.bin").write_text("w1")
    (a / "model" / "checkpoints" / "big").write_text("x")
    (a / "envs.jsonl").write_text("e1")
    key = stage_key("pre-", {"seed": 0})
    assert key == stage_key("pre-", {"seed": 0}) != stage_key("pre-", {"seed": 1})
    assert not reuse(cache, key, ["model", "envs.jsonl"], b)           # nothing published yet
    publish(cache, key, ["model", "envs.jsonl"], a)
    (a / "model" / "weights.bin").write_text("w2")
    publish(cache, key, ["model", "envs.jsonl"], a)                    # a second publisher keeps the first copy
    assert reuse(cache, key, ["model", "envs.jsonl"], b)
    assert (b / "model" / "weights.bin").read_text() == "w1" and (b / "envs.jsonl").read_text() == "e1"
    assert not (b / "model" / "checkpoints").exists()                  # checkpoints are not shared
    assert not reuse(cache, key, ["model"], b)                         # a workdir that has them is left alone
    assert not reuse(None, key, ["model"], tmp_path / "c") and [p.name for p in cache.iterdir()] == [key]
