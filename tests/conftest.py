"""Shared test fixtures: a fixed random seed and small torch thread counts (CI has 2 cores)."""

from __future__ import annotations

import os
import random

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(autouse=True)
def _seeded() -> None:
    random.seed(0)
    np.random.seed(0)
