"""Reading, validating and tokenizing trajectory rows (pinned interface 1)."""

from __future__ import annotations

import pytest

from train.data import dataset_id, read_rows, tokenize_rows
from train.errors import TrainDataError


def test_reads_fixture_rows(tiny_data):
    rows = read_rows(tiny_data)
    assert len(rows) == 8 and all("meta" in r for r in rows)
    assert read_rows(tiny_data / "train.jsonl") == rows


@pytest.mark.parametrize("row,problem", [
    ({"messages": []}, "non-empty list"),
    ({"messages": [{"role": "robot", "content": "x"}]}, "role must be one of"),
    ({"messages": [{"role": "user", "content": "x"}]}, "no assistant message"),
    ({"messages": [{"role": "assistant", "content": 3}]}, "content must be a string"),
    ({"messages": [{"role": "assistant", "content": "x"}], "tools": "{oops"}, "tools"),
    ({"messages": [{"role": "assistant", "content": "", "tool_calls": [{"function": {}}]}]}, "function.name"),
])
def test_bad_rows_named_with_line(tmp_path, rows, write_rows, row, problem):
    write_rows(tmp_path, [rows[0], row])
    with pytest.raises(TrainDataError, match=rf"train.jsonl:2: .*{problem}"):
        read_rows(tmp_path)


def test_missing_folder_and_file(tmp_path):
    with pytest.raises(TrainDataError, match="does not exist"):
        read_rows(tmp_path / "nope")
    with pytest.raises(TrainDataError, match="has no train.jsonl"):
        read_rows(tmp_path)
    (tmp_path / "train.jsonl").write_text("\n")
    with pytest.raises(TrainDataError, match="holds no rows"):
        read_rows(tmp_path)


def test_tokenize_masks_and_truncation(rows, tokenizer):
    full = tokenize_rows(rows, tokenizer, 10_000)
    assert full["n_rows"] == 8 and full["n_truncated"] == 0 and full["n_dropped"] == 0
    assert full["tokens"] == sum(len(e["input_ids"]) for e in full["examples"])
    assert 0 < full["loss_tokens"] < full["tokens"]
    longest = max(len(e["input_ids"]) for e in full["examples"])
    cut = tokenize_rows(rows, tokenizer, longest - 1)
    assert cut["n_truncated"] >= 1
    assert all(len(e["input_ids"]) <= longest - 1 for e in cut["examples"])
    tiny = tokenize_rows(rows, tokenizer, 8)  # the system turn alone is longer: no assistant token left
    assert tiny["n_dropped"] == 8 and tiny["examples"] == []


def test_dataset_id_is_content_hash(tmp_path, rows, write_rows):
    write_rows(tmp_path, rows)
    a = dataset_id(tmp_path)
    assert a == dataset_id(tmp_path / "train.jsonl") and a.startswith("sha256:")
    write_rows(tmp_path, rows[:-1])
    assert dataset_id(tmp_path) != a
