"""Recipe files."""

from __future__ import annotations

import tomllib

import pytest

from synth.errors import RecipeError
from synth.recipe_io import EXAMPLE_RECIPE, load_recipe, parse_recipe


def test_flat_and_table_forms_agree():
    flat = parse_recipe(tomllib.loads("task_count = 10\nseed = 3\n"))
    table = parse_recipe(tomllib.loads("[recipe]\ntask_count = 10\nseed = 3\n"))
    assert flat == table and flat.seed == 3


def test_example_recipe_documents_every_axis():
    for knob in ("tool_diversity", "task_count", "db_diversity", "repair_rate", "coverage_quota", "support_depth"):
        assert knob in EXAMPLE_RECIPE


@pytest.mark.parametrize("text,match", [
    ("[recipe]\ntask_count = 1\n[other]\nx = 1\n", "outside the \\[recipe\\] table"),
    ("seed = 'x'\n", "seed must be an integer"),
    ("coverage_quota = 0.5\n", "coverage_quota"),
    ("backend = 'cloud'\n", "backend"),
])
def test_bad_recipes(tmp_path, text, match):
    f = tmp_path / "r.toml"
    f.write_text(text)
    with pytest.raises(RecipeError, match=match):
        load_recipe(f)


def test_unreadable_files(tmp_path):
    with pytest.raises(RecipeError, match="not found"):
        load_recipe(tmp_path / "none.toml")
    (tmp_path / "bad.toml").write_text("task_count = = 3")
    with pytest.raises(RecipeError, match="not valid TOML"):
        load_recipe(tmp_path / "bad.toml")
