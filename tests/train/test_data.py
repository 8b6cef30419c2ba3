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


def _tags(tokenizer):
    return [tokenizer.encode(t, add_special_tokens=False)[0] for t in ("<tool_call>", "</tool_call>")]


def _weighted(row, weights):
    return {**row, "meta": {"loss_weights": weights}}


def test_weight_zero_masks_exactly_that_call(rows, tokenizer):
    row = rows[7]  # parallel call_1 + call_2, then call_3
    base = tokenize_rows([row], tokenizer, 10_000)["examples"][0]
    got = tokenize_rows([_weighted(row, {"call_2": 0.0})], tokenizer, 10_000)["examples"][0]
    ids, before, after = base["input_ids"], base["assistant_masks"], got["assistant_masks"]
    dropped = [i for i, (a, b) in enumerate(zip(before, after)) if a and not b]
    open_id, close_id = _tags(tokenizer)
    opens = [i for i, t in enumerate(ids) if t == open_id and before[i]]  # the system prompt shows the tags too
    closes = [i for i, t in enumerate(ids) if t == close_id and before[i]]
    assert dropped == list(range(opens[1], closes[1] + 1))  # the second call's tags and JSON, nothing else
    assert not any(b and not a for a, b in zip(before, after))
    kept_all = tokenize_rows([_weighted(row, {"call_2": 1.0})], tokenizer, 10_000)["examples"][0]
    assert kept_all["assistant_masks"] == before


def test_fractional_weight_keeps_that_share_of_calls(rows, tokenizer):
    many = [_weighted(rows[0], {"call_1": 0.3})] * 400
    full = sum(tokenize_rows([rows[0]], tokenizer, 10_000)["examples"][0]["assistant_masks"])
    none = sum(tokenize_rows([_weighted(rows[0], {"call_1": 0.0})], tokenizer, 10_000)["examples"][0]
               ["assistant_masks"])
    got = tokenize_rows(many, tokenizer, 10_000)
    kept = [(sum(e["assistant_masks"]) - none) / (full - none) for e in got["examples"]]
    assert set(kept) == {0.0, 1.0} and 0.24 <= sum(kept) / len(kept) <= 0.36
    again = tokenize_rows(many, tokenizer, 10_000)
    assert [e["assistant_masks"] for e in again["examples"]] == [e["assistant_masks"] for e in got["examples"]]
    other_seed = tokenize_rows(many, tokenizer, 10_000, seed=1)
    assert [e["assistant_masks"] for e in other_seed["examples"]] != [e["assistant_masks"] for e in got["examples"]]


def test_weights_that_do_not_match_the_turns_are_refused(rows, tokenizer):
    row = {**rows[0], "messages": [dict(m) for m in rows[0]["messages"]], "meta": '{"loss_weights": {"call_1": 0}}'}
    row["messages"][2]["content"] = "text that mentions <tool_call> by name"  # an extra tag inside the turn
    with pytest.raises(TrainDataError, match=r"row 1: cannot apply meta.loss_weights: .*1 tool calls but 2"):
        tokenize_rows([row], tokenizer, 10_000)
