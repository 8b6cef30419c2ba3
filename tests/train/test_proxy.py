"""Proxy models: exact parameter counts, seeded init, save and reload from a folder offline."""

from __future__ import annotations

import pytest
import torch

from toolscale.config import ModelSize
from toolscale.errors import UsageError
from train.errors import TrainError
from train.proxy import build_model, count_params, load_model


@pytest.mark.parametrize("arch", ["llama", "qwen3"])
@pytest.mark.parametrize("h,layers,heads,ffn", [(32, 1, 2, None), (48, 2, 4, 100), (64, 3, 2, None)])
def test_param_count_matches_config_formula(arch, h, layers, heads, ffn):
    size = ModelSize(name="t", architecture=arch, hidden_size=h, num_layers=layers, num_heads=heads,
                     intermediate_size=ffn, vocab_size=300)
    n, n_nonemb = count_params(build_model(size))
    assert n == size.approx_params
    assert n_nonemb == size.approx_params_nonembedding


def test_vocab_override_changes_embeddings_only():
    size = ModelSize(name="t", hidden_size=32, num_layers=1, num_heads=2, vocab_size=512)
    n, n_nonemb = count_params(build_model(size, 300))
    assert n_nonemb == size.approx_params_nonembedding
    assert n == size.approx_params - 2 * (512 - 300) * 32


def test_seeded_initialisation():
    size = ModelSize(name="t", hidden_size=32, num_layers=1, num_heads=2, vocab_size=300)
    a, b, c = build_model(size, seed=1), build_model(size, seed=1), build_model(size, seed=2)
    wa, wb, wc = (m.get_input_embeddings().weight for m in (a, b, c))
    assert torch.equal(wa, wb) and not torch.equal(wa, wc)


@pytest.mark.parametrize("arch", ["llama", "qwen3"])
def test_save_and_reload_same_outputs(arch, tmp_path):
    size = ModelSize(name="t", architecture=arch, hidden_size=32, num_layers=1, num_heads=2, vocab_size=300)
    model = build_model(size).eval()
    model.save_pretrained(tmp_path)
    loaded = load_model(tmp_path).eval()
    ids = torch.tensor([[1, 5, 9, 42, 7, 2]])
    with torch.no_grad():
        assert torch.allclose(model(ids).logits, loaded(ids).logits, atol=0, rtol=0)
    assert type(loaded) is type(model)


def test_bad_sizes():
    with pytest.raises(ValueError, match="divisible"):  # refused by the config, before any model is built
        build_model(ModelSize(name="t", hidden_size=30, num_layers=1, num_heads=4, vocab_size=300))
    with pytest.raises(ValueError, match=r"head width hidden_size / num_heads = 25 must be even \(rotary"):
        ModelSize(name="t", hidden_size=50, num_layers=1, num_heads=2, vocab_size=300)
    with pytest.raises(UsageError, match="pretrained"):
        build_model(ModelSize(name="t", pretrained="Qwen/Qwen3-0.6B"))


def test_load_missing_folder(tmp_path):
    with pytest.raises(TrainError, match="does not exist"):
        load_model(tmp_path / "missing")
