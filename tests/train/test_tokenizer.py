"""The locally trained byte-level BPE tokenizer: special tokens, determinism, save/load round trip."""

from __future__ import annotations

import json

import pytest

from toolscale.errors import UsageError
from train.chat import CHAT_TEMPLATE, normalize_messages, parse_tools, render
from train.tokenizer import load_tokenizer, min_vocab_size, train_tokenizer

TEXT = 'Hello   world 2025-03-01 北京\n\n\tx  {"city": "Paris"} <tool_call>{"name": "f"}</tool_call> done'


def test_special_and_tool_tokens(tokenizer):
    assert len(tokenizer) <= 400
    assert (tokenizer.pad_token, tokenizer.eos_token) == ("<|endoftext|>", "<|im_end|>")
    assert tokenizer.pad_token_id != tokenizer.eos_token_id
    for tag in ("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"):
        assert len(tokenizer(tag, add_special_tokens=False)["input_ids"]) == 1
    ids = tokenizer(TEXT, add_special_tokens=False)["input_ids"]
    assert tokenizer.decode(ids, skip_special_tokens=True) == TEXT  # tool tags survive skip_special_tokens
    assert tokenizer.chat_template == CHAT_TEMPLATE


def test_training_is_deterministic(rows):
    texts = [render(r["messages"], r["tools"]) for r in rows]
    a, b = train_tokenizer(texts, 350), train_tokenizer(texts, 350)
    assert a.get_vocab() == b.get_vocab()
    assert a(TEXT)["input_ids"] == b(TEXT)["input_ids"]


@pytest.mark.parametrize("model_type", ["llama", "qwen3", "qwen2"])
def test_ids_survive_save_and_reload(tokenizer, rows, tmp_path, model_type):
    row = rows[4]
    conv = dict(conversation=normalize_messages(row["messages"]), tools=parse_tools(row["tools"]))
    before = tokenizer.apply_chat_template(**conv, tokenize=True, return_dict=True)["input_ids"]
    tokenizer.save_pretrained(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": model_type}))
    loaded = load_tokenizer(tmp_path)
    assert loaded(TEXT)["input_ids"] == tokenizer(TEXT)["input_ids"]
    assert loaded.apply_chat_template(**conv, tokenize=True, return_dict=True)["input_ids"] == before
    assert (loaded.eos_token_id, loaded.pad_token_id) == (tokenizer.eos_token_id, tokenizer.pad_token_id)


def test_autotokenizer_trap_is_real(tmp_path):
    """Why load_tokenizer exists: AutoTokenizer picks Qwen2Tokenizer for a Qwen2 config and splits differently."""
    from transformers import AutoTokenizer

    tokenizer = train_tokenizer(["order 123456 shipped on 2025-03-01 to Paris\n"] * 50, 400)
    tokenizer.save_pretrained(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "qwen2"}))
    auto = AutoTokenizer.from_pretrained(tmp_path)
    assert type(auto).__name__ == "Qwen2Tokenizer"
    assert auto(TEXT)["input_ids"] != tokenizer(TEXT)["input_ids"]
    assert load_tokenizer(tmp_path)(TEXT)["input_ids"] == tokenizer(TEXT)["input_ids"]


@pytest.mark.parametrize("bad", [100, min_vocab_size() - 1, "1024"])
def test_vocab_size_too_small(bad):
    with pytest.raises(UsageError, match="vocab_size"):
        train_tokenizer(["abc"], bad)


def test_empty_corpus():
    with pytest.raises(UsageError, match="non-empty text"):
        train_tokenizer(["", ""], 512)


def test_load_missing_folder(tmp_path):
    from train.errors import TrainError

    with pytest.raises(TrainError, match="nope"):
        load_tokenizer(tmp_path / "nope")
