"""The tools a config can draw from, and the refusal of tool_diversity levels above them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from synth.capacity import available_tools, bundled_tool_count, check_tool_levels
from synth.errors import RecipeError

FAKE = str(Path(__file__).with_name("fake_server.py"))


def test_bundled_count_excludes_heldout_servers():
    every = bundled_tool_count()
    assert every == 50 and bundled_tool_count(("travel", "weather", "library")) < every
    assert check_tool_levels(every) == every


def test_levels_above_the_count_are_refused_naming_it():
    with pytest.raises(RecipeError, match="max = 256 exceeds the 50 tools available \\(50 bundled training tools\\)"):
        check_tool_levels(256)


@pytest.mark.integration
def test_user_servers_raise_the_count():
    server = {"command": f"{sys.executable} {FAKE} tools 3", "emulate_writes": True}  # echo_*: not read-only
    assert available_tools((), [server]) == (50, 3)
    with pytest.raises(RecipeError, match="the 53 tools available \\(50 bundled training tools \\+ 3 of"):
        check_tool_levels(54, servers=[server])
