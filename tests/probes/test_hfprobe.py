"""probes/hfprobe.py: any saved causal LM as the probe (``hf:MODEL_DIR``)."""

from __future__ import annotations

import json

import pytest
import torch

from probes.hfprobe import model_dir
from probes.measure import SCORES_FILE, probe_dataset
from probes.toydata import make_dataset, write_dataset
from toolscale.config import ModelSize, ProbeSpec
from toolscale.errors import UsageError


@pytest.fixture(scope="module")
def saved_model(tmp_path_factory):
    """A tiny randomly initialised causal LM and its tokenizer, saved the way users save theirs."""
    from train.proxy import build_model
    from train.tokenizer import train_tokenizer

    torch.set_num_threads(1)
    rows = make_dataset(20, seed=1, id_digits=2)
    tok = train_tokenizer([json.dumps(r) for r in rows], 300)
    model = build_model(ModelSize(name="p", hidden_size=32, num_layers=1, num_heads=2, vocab_size=max(len(tok), 256),
                                  max_seq_len=256), len(tok), seed=0)
    d = tmp_path_factory.mktemp("saved")
    model.save_pretrained(d)
    tok.save_pretrained(d)
    return d


def test_saved_model_scores_every_action_and_counts_forward_flops(saved_model, tmp_path):
    d = tmp_path / "data"
    write_dataset(make_dataset(8, defect_rate=0.5, seed=3, id_digits=2), str(d))
    s = probe_dataset(d, spec=ProbeSpec(kind=f"hf:{saved_model}", max_seq_len=256, batch_size=4),
                      target_train_flops=1e12)
    assert s.kind == f"hf:{saved_model}" and s.n_scored == s.n_actions
    assert s.cost.params > 0 and s.cost.train_flops == 0 and s.cost.score_flops == 2 * s.cost.params * s.cost.score_tokens
    lines = [json.loads(x) for x in (d / SCORES_FILE).read_text().splitlines()]
    assert all(x["groundedness"] is not None for x in lines if x["status"] == "ok")


def test_a_folder_without_a_model_is_named(tmp_path):
    (tmp_path / "empty").mkdir()
    for path, needle in ((tmp_path / "empty", "holds no saved model"), (tmp_path / "nope", "is not a directory")):
        with pytest.raises(UsageError, match=needle) as err:
            model_dir(f"hf:{path}")
        assert str(path) in str(err.value)
    with pytest.raises(Exception, match="unknown probe kind 'hf:'"):
        ProbeSpec(kind="hf:")
