"""Fixtures of the train/ tests: the hand-written trajectory rows and a tokenizer trained on them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
TINY_DATA = FIXTURES / "tiny"


@pytest.fixture(autouse=True)
def _one_thread():
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def rows() -> list[dict]:
    with open(TINY_DATA / "train.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.fixture(scope="session")
def tokenizer(rows):
    from train.chat import render
    from train.tokenizer import train_tokenizer

    return train_tokenizer([render(r["messages"], r["tools"]) for r in rows], 400)


@pytest.fixture(scope="session")
def tiny_data() -> Path:
    """The hand-written dataset folder (8 rows: single calls, two-step chains, parallel calls with a retry)."""
    return TINY_DATA


def _write_rows(folder: Path, rows: list) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "train.jsonl", "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    return folder


@pytest.fixture(scope="session")
def write_rows():
    """``write_rows(folder, rows) -> folder``: a dataset folder with ``train.jsonl``."""
    return _write_rows
