"""Which checkpoint a resumed run picks up."""

from __future__ import annotations

from train.checkpoint import checkpoint_dir, clear_checkpoints, last_checkpoint


def _checkpoint(root, step, complete=True):
    folder = checkpoint_dir(root) / f"checkpoint-{step}"
    folder.mkdir(parents=True)
    (folder / "model.safetensors").write_bytes(b"x")
    if complete:
        (folder / "trainer_state.json").write_text("{}")
    return folder


def test_highest_complete_checkpoint(tmp_path):
    assert last_checkpoint(tmp_path) is None
    _checkpoint(tmp_path, 5)
    best = _checkpoint(tmp_path, 10)
    _checkpoint(tmp_path, 15, complete=False)  # cut short by preemption
    (checkpoint_dir(tmp_path) / "checkpoint-x").mkdir()
    assert last_checkpoint(tmp_path) == best  # numeric order, not text order (10 > 5)


def test_clear_only_touches_checkpoints(tmp_path):
    _checkpoint(tmp_path, 1)
    (tmp_path / "config.json").write_text("{}")
    clear_checkpoints(tmp_path)
    assert last_checkpoint(tmp_path) is None and (tmp_path / "config.json").is_file()
