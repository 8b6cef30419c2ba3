"""Chat templates that train: the stock Qwen3 template (TRL's stored copy) gives no loss tokens, its training
variant does, and a pretrained rung trains with it and saves it beside the model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolscale.config import ModelSize
from train.chat import CHAT_TEMPLATE
from train.templates import (TemplateError, check_loss_tokens, has_generation_block, prepare_tokenizer,
                             template_name, training_template)


def _stored(name: str) -> str:
    import trl.chat_template_utils as ctu

    return (Path(ctu.__file__).parent / "chat_templates" / name).read_text(encoding="utf-8")


@pytest.fixture
def qwen3_tokenizer(tokenizer):
    """The tiny local tokenizer wearing the stock Qwen3 chat template (as `Qwen/Qwen3-0.6B` ships it)."""
    import copy

    tok = copy.deepcopy(tokenizer)
    tok.chat_template = _stored("qwen3.jinja")
    return tok


def test_generation_block_is_parsed_not_searched():
    stock = _stored("qwen3.jinja")
    assert "generation" in stock  # add_generation_prompt: the old substring test passed here
    assert not has_generation_block(stock)
    assert has_generation_block(_stored("qwen3_training.jinja"))
    assert has_generation_block(CHAT_TEMPLATE)
    assert has_generation_block("{%- generation -%}{{ x }}{%- endgeneration -%}")
    assert has_generation_block("{% generation %}{{ x }}{% endgeneration %}")
    assert not has_generation_block("{# {% generation %} #}{{ 'generation' }}{{ generation }}")
    assert not has_generation_block(None) and not has_generation_block("")
    assert has_generation_block({"default": CHAT_TEMPLATE, "tool_use": "x"})
    with pytest.raises(TemplateError, match="does not parse"):
        has_generation_block("{{ 'unclosed }}")


def test_stock_qwen3_has_no_loss_tokens_and_its_training_variant_has(qwen3_tokenizer, rows):
    with pytest.raises(TemplateError, match=r"'Qwen/Qwen3-0\.6B' \(qwen3\.jinja\) gives zero loss tokens on 8 rows"):
        check_loss_tokens(qwen3_tokenizer, rows, source="'Qwen/Qwen3-0.6B'")
    assert training_template(qwen3_tokenizer) == _stored("qwen3_training.jinja")
    assert prepare_tokenizer(qwen3_tokenizer) == "qwen3_training.jinja"
    n = check_loss_tokens(qwen3_tokenizer, rows)
    assert n > 0
    from train.data import tokenize_rows

    data = tokenize_rows(rows, qwen3_tokenizer, 4096)
    assert data["n_dropped"] == 0 and all(sum(e["assistant_masks"]) > 0 for e in data["examples"])
    learned = qwen3_tokenizer.decode([t for t, m in zip(data["examples"][0]["input_ids"],
                                                        data["examples"][0]["assistant_masks"]) if m])
    assert "<tool_call>" in learned and "get_weather" in learned and "What is the weather" not in learned


def test_a_template_without_markers_or_training_variant_is_refused(tokenizer):
    import copy

    tok = copy.deepcopy(tokenizer)
    tok.chat_template = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    with pytest.raises(TemplateError, match=r"of 'my/model' \(sha256:[0-9a-f]{12}\) has no \{% generation %\}"):
        training_template(tok, source="'my/model'")
    tok.chat_template = None
    with pytest.raises(TemplateError, match="has no chat template"):
        training_template(tok)
    assert template_name(CHAT_TEMPLATE).startswith("sha256:")


def test_pretrained_rung_trains_with_the_training_template_and_saves_it(qwen3_tokenizer, tiny_data, tmp_path):
    """A local 'pretrained' folder with the stock Qwen3 template: SFT keeps every row, and the saved model
    folder carries the training template (what eval and vLLM then render)."""
    from train.proxy import build_model
    from train.sft import read_stats, train_sft
    from train.tokenizer import load_tokenizer

    base = tmp_path / "base"
    model = build_model(ModelSize(name="b", hidden_size=32, num_layers=1, num_heads=2, vocab_size=512,
                                  max_seq_len=1024), vocab_size=len(qwen3_tokenizer))
    model.save_pretrained(base)
    qwen3_tokenizer.save_pretrained(base)
    assert not has_generation_block(load_tokenizer(base).chat_template)
    size = ModelSize(name="p", pretrained=str(base), max_steps=2, batch_size=4, learning_rate=1e-3, max_seq_len=1024)
    stats = train_sft(tiny_data, size, tmp_path / "run", save_steps=0)
    saved = read_stats(tmp_path / "run")
    assert stats.steps == 2 and saved["data"]["n_dropped"] == 0 and saved["data"]["loss_tokens"] > 0
    assert saved["chat_template"] == "qwen3_training.jinja"
    assert load_tokenizer(tmp_path / "run").chat_template == _stored("qwen3_training.jinja")
    assert json.loads((tmp_path / "run" / "config.json").read_text())["model_type"] == "llama"
