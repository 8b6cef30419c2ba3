"""synth/selection.py: which tools a recipe draws, by whole servers or stratified across them."""

from __future__ import annotations

import pytest

from synth.models import Recipe
from synth.selection import select_tools
from synth.servers.db import TRAIN_DOMAINS


def _counts(tools: int, spread: str, seed: int = 0) -> dict[str, int]:
    sel = select_tools(Recipe.from_axes({"tool_diversity": tools}, seed=seed, tool_spread=spread))
    return {k: len(v.docs) for k, v in sel.items()}


def test_whole_servers_first_puts_few_tools_on_few_servers():
    c = _counts(8, "servers")
    assert sum(c.values()) == 8 and len(c) <= 2  # the coverage problem the stratified draw fixes


@pytest.mark.parametrize("tools", [8, 13, 40])
def test_stratified_covers_every_training_server_at_every_level(tools):
    c = _counts(tools, "stratified")
    assert sum(c.values()) == tools and set(c) == set(TRAIN_DOMAINS)
    assert max(c.values()) - min(c.values()) <= 1  # as even as the servers' sizes allow


def test_a_larger_level_is_a_superset_and_the_default_keeps_old_dataset_ids():
    small = select_tools(Recipe.from_axes({"tool_diversity": 9}, seed=3, tool_spread="stratified"))
    big = select_tools(Recipe.from_axes({"tool_diversity": 20}, seed=3, tool_spread="stratified"))
    assert all(set(v.docs) <= set(big[k].docs) for k, v in small.items())
    assert "tool_spread" not in Recipe(tool_diversity=4).identity()  # older recipes hash as before
    assert Recipe(tool_diversity=4, tool_spread="stratified").identity()["tool_spread"] == "stratified"
