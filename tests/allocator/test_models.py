"""allocator/models.py: the AllocationQuery contract (what allocate, verify, next and the MCP tools build at their
boundary) refuses a bad budget or extrapolation factor with the one-line message the CLI prints (exit 2)."""

from __future__ import annotations

import math
import tomllib

import pytest
from pydantic import ValidationError

from allocator.errors import AllocatorUsageError
from allocator.models import AllocationQuery
from toolscale.cli.project import example_config_text
from toolscale.config import parse_config
from toolscale.errors import UsageError

BASE = {"registry": "r.duckdb", "benchmark": "bench"}


@pytest.mark.parametrize(("fields", "message"), [
    ({"budget": 0}, "--budget must be a positive number, got 0"),
    ({"budget": 0.0}, "--budget must be a positive number, got 0.0"),
    ({"budget": -5000.0}, "--budget must be a positive number, got -5000.0"),
    ({"budget": math.nan}, "--budget must be a positive number, got nan"),
    ({"budget": math.inf}, "--budget must be a positive number, got inf"),
    ({"budget": "5000"}, "--budget must be a positive number, got 5000"),
    ({"budget": 5000.0, "extrapolate": 0.5},
     "--extrapolate must be a factor >= 1 (how far past the tested range), got 0.5"),
    ({"budget": 5000.0, "extrapolate": math.nan}, "--extrapolate must be a factor >= 1"),
    ({"budget": 5000.0, "unit": "eur"}, "--unit must be one of usd, gpu_hours, got 'eur'"),
    ({"budget": 0, "unit": "eur"}, "--unit must be one of usd, gpu_hours, got 'eur'"),  # the unit first, as before
    ({"budget": 5000.0, "draws": -1}, "draws: Input should be greater than or equal to 0 (got -1)"),
])
def test_a_bad_query_is_one_usage_error_naming_the_value(fields, message) -> None:
    with pytest.raises(AllocatorUsageError) as err:
        AllocationQuery.of(**BASE, **fields)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)
    assert isinstance(err.value, UsageError) and err.value.exit_code == 2
    with pytest.raises(ValidationError) as raw:
        AllocationQuery(**BASE, **fields)  # the model itself refuses it too
    assert raw.value.errors()[0]["loc"][0] in fields


def test_a_good_query_keeps_its_values_and_is_frozen() -> None:
    cfg = parse_config(tomllib.loads(example_config_text("micro")))
    q = AllocationQuery.of(**BASE, budget=5000, extrapolate=1, tokens="300B", config=cfg)
    assert (q.budget, q.extrapolate, q.tokens, q.unit, q.redraws, q.mix_forms) == (5000.0, 1.0, "300B", None, 30, True)
    assert q.config is cfg  # the caller's config object, not a copy
    assert AllocationQuery.of(**BASE, budget=1e-3, tokens=3e11).tokens == 3e11
    with pytest.raises(ValidationError):
        q.budget = 1.0  # type: ignore[misc]
    with pytest.raises(AllocatorUsageError, match="Extra inputs are not permitted"):
        AllocationQuery.of(**BASE, budget=5000.0, save=False)


def test_a_huge_budget_prints_as_one_short_figure() -> None:
    from allocator.models import Budget

    assert str(Budget(value=1e300)) == "1e+300 usd"
    assert str(Budget(value=50000)) == "50,000 usd"
