"""synth/envs/io.py: round trip, strict loading with row numbers, tolerant iteration."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from synth.envs.errors import EnvFormatError
from synth.envs.io import dump_envs, iter_rows, load_envs, sample_to_row

FIX = Path(__file__).parent / "fixtures"

ROW_KEYS = {"schema", "env_id", "domain", "seed", "prompt", "structure", "hop_budget", "main_question",
            "main_answer", "nodes", "tools", "tool_sources", "distractors", "targets", "max_turns", "meta"}


def test_round_trip_keeps_every_field(tmp_path: Path):
    samples = load_envs(FIX / "astra_baggage_fixed.jsonl")
    path = dump_envs(samples, tmp_path / "out" / "envs.jsonl")
    again = load_envs(path)
    assert again == samples
    row = json.loads(path.read_text().splitlines()[0])
    assert set(row) == ROW_KEYS and row["schema"] == "toolscale-env/1"
    assert sample_to_row(samples[0]) == row


def test_duplicate_names_load_unmerged():
    (s,) = load_envs(FIX / "astra_duplicate_name.jsonl")
    assert s.tool_names().count("payment_processor") == 2


def test_strict_load_names_the_bad_row(tmp_path: Path):
    good = (FIX / "astra_baggage_fixed.jsonl").read_text()
    path = tmp_path / "mixed.jsonl"
    path.write_text(good + json.dumps({"env_id": "x", "prompt": 3}) + "\n")
    with pytest.raises(EnvFormatError, match=r"row 2: not a toolscale-env/1 row: field"):
        load_envs(path)
    rows = list(iter_rows(path))
    assert rows[0][1] is not None and rows[1][1] is None and "row 2" in rows[1][2]


def test_missing_file_is_a_usage_error(tmp_path: Path):
    with pytest.raises(EnvFormatError, match="no such file"):
        load_envs(tmp_path / "nope.jsonl")


def test_unknown_schema_version_is_rejected():
    from synth.envs.io import parse_row

    row = json.loads((FIX / "astra_baggage_fixed.jsonl").read_text())
    with pytest.raises(EnvFormatError, match="unsupported schema 'toolscale-env/9'"):
        parse_row({**row, "schema": "toolscale-env/9"}, 4)
