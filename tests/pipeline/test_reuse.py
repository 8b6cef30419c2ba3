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


def test_producing_lets_one_arm_produce_while_the_other_waits_then_reuses(tmp_path, capsys):
    """Two arms at once (threads here, jobs on a cluster): the second enters only after the first published."""
    import threading
    import time

    from pipeline.reuse import producing

    cache, key = tmp_path / "cache", stage_key("pre-", {"seed": 0})
    cache.mkdir()
    events, first_in = [], threading.Event()

    def arm(name: str, workdir) -> None:
        with producing(cache, key):
            events.append((name, "in", reuse(cache, key, ["model"], workdir)))
            first_in.set()
            if not (workdir / "model").exists():
                (workdir / "model").mkdir(parents=True)
                (workdir / "model" / "weights.bin").write_text(name)
                time.sleep(0.5)  # training
                publish(cache, key, ["model"], workdir)
            events.append((name, "out", None))

    a = threading.Thread(target=arm, args=("a", tmp_path / "a"))
    a.start()
    first_in.wait(5)
    b = threading.Thread(target=arm, args=("b", tmp_path / "b"))
    b.start()
    a.join(10)
    b.join(10)
    assert events == [("a", "in", False), ("a", "out", None), ("b", "in", True), ("b", "out", None)]
    assert (tmp_path / "b" / "model" / "weights.bin").read_text() == "a"  # b reused a's stages, trained nothing
    assert "waiting for the shared stages " + key in capsys.readouterr().err
    assert not (cache / f"{key}.lock").exists()  # released


def test_producing_takes_no_lock_without_a_cache_or_a_key(tmp_path):
    from pipeline.reuse import producing

    with producing(None, "pre-x"):
        pass
    with producing(tmp_path, None):
        assert list(tmp_path.iterdir()) == []
    with producing(tmp_path, "pre-x"):
        assert (tmp_path / "pre-x.lock").is_file()
    assert not (tmp_path / "pre-x.lock").exists()
