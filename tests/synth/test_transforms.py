"""synth/transforms.py: transformed values, and transform_rate in a synthesised dataset."""

from __future__ import annotations

import json
import random

import pytest

from synth.dataset import dataset_id, synthesize
from synth.models import Recipe
from synth.provenance import value_in
from synth.transforms import KINDS, applicable, display, transformed_arguments


@pytest.mark.parametrize(("value", "kind", "shown"), [
    ("OR-5658", "case", "or-5658"), ("south", "case", "SOUTH"), ("OR-5658", "whitespace", "OR 5658"),
    ("Ana Berg", "whitespace", "AnaBerg"), (250, "unit", "0.25k"), (12.5, "currency", "1250 cents"),
    ("EM-6085", "id_lookup", "number 6085 in the EM register")])
def test_display_fixed_forms(value, kind, shown):
    assert display(value, kind, random.Random(0)) == shown


def test_display_arithmetic_and_dates_recover_the_value():
    rng = random.Random(1)
    for v in (2, 7, 42, 999):
        a, b = display(v, "sum", rng).split(" + ")
        assert int(a) + int(b) == v and int(a) > 0 and int(b) > 0
        a, b = display(v, "difference", rng).split(" - ")
        assert int(a) - int(b) == v
    shown = {display("2026-03-05", "date", rng) for _ in range(20)}
    assert shown == {"March 5, 2026", "05/03/2026"}


def test_applicable_and_refusal():
    assert applicable(True) == [] and applicable(None) == [] and applicable("") == []
    assert applicable(1) == ["unit", "currency"]
    assert set(applicable("OR-5658")) == {"case", "whitespace", "id_lookup"}
    assert applicable("2026-01-02") == ["date"]
    assert set(applicable("1234")) == set()  # digits only: no kind changes it
    with pytest.raises(ValueError, match="date"):
        display("OR-1", "date", random.Random(0))
    for v in ("OR-5658", "Ana Berg", "x_y", 17, 3.25, "2026-12-31"):
        for k in applicable(v):
            assert k in KINDS and display(v, k, random.Random(0)) != str(v)


def test_transformed_arguments_needs_every_missing_argument_shown():
    shown = {json.dumps("OR-1"): "case"}
    assert transformed_arguments(("order_id",), {"order_id": "OR-1"}, shown) == {"order_id": "case"}
    assert transformed_arguments(("order_id", "qty"), {"order_id": "OR-1", "qty": 3}, shown) is None


def test_transform_rate_zero_keeps_the_dataset_and_its_id():
    base = Recipe(task_count=12, seed=3)
    assert dataset_id(base) == dataset_id(Recipe(task_count=12, seed=3, transform_rate=0.0))
    assert dataset_id(base) != dataset_id(Recipe(task_count=12, seed=3, transform_rate=0.5))
    rows = synthesize(base).rows
    assert all("transformed_calls" not in json.loads(json.loads(r)["meta"]) for r in rows)


def test_transformed_actions_are_derivable_but_not_by_exact_match():
    rows = [json.loads(r) for r in synthesize(Recipe(task_count=60, seed=2, transform_rate=0.9)).rows]
    n_transformed = 0
    for row in rows:
        meta = json.loads(row["meta"])
        history = ""
        for m in row["messages"]:
            if m["role"] in ("user", "tool"):
                history += m["content"] + "\n"
            for call in m.get("tool_calls") or []:
                t = meta.get("transformed_calls", {}).get(call["id"])
                if t is None:
                    continue
                n_transformed += 1
                assert call["id"] not in meta["nonderivable_calls"]
                args = json.loads(call["function"]["arguments"])
                for param, kind in t.items():
                    assert kind in KINDS
                    assert not value_in(args[param], history), (param, args[param])
    assert n_transformed >= 10
