"""Fixtures of the probes tests: the hand-made trajectories in fixtures/handmade.jsonl."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture()
def handmade() -> list[dict]:
    """Five rows: copy (derivable), invented (call_2 non-derivable), normalised, broken, chat (no actions)."""
    return [json.loads(line) for line in (FIXTURES / "handmade.jsonl").read_text().splitlines()]
