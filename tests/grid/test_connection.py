"""The registry's connection core: the shared ``_where``, and each store opening the file alone."""

from __future__ import annotations

import pytest

from grid.artifact_store import ArtifactStore
from grid.connection import Connection
from grid.fit_store import FitStore
from grid.models import RunSpec, run_id_for
from grid.registry import Registry
from grid.run_store import RunStore
from grid.schema import SCHEMA_VERSION


def test_where_skips_none_and_uses_in_for_sequences() -> None:
    sql, args = Connection._where(experiment="e1", status=["done", "failed"], split=None, seed=3)
    assert sql == " WHERE experiment = ? AND status IN (?, ?) AND seed = ?"
    assert args == ["e1", "done", "failed", 3]


def test_where_without_filters_is_empty_and_empty_sequence_matches_nothing() -> None:
    assert Connection._where(experiment=None) == ("", [])
    assert Connection._where(run_id=[]) == (" WHERE FALSE", [])


@pytest.mark.parametrize("store", [RunStore, ArtifactStore, FitStore])
def test_each_store_opens_the_file_alone_with_the_full_schema(tmp_path, store) -> None:
    with store(tmp_path / "r.duckdb") as s:
        assert s.schema_version() == SCHEMA_VERSION
    with Registry(tmp_path / "r.duckdb", read_only=True) as reg:
        assert reg.schema_version() == SCHEMA_VERSION


def test_run_store_and_registry_see_the_same_rows(tmp_path) -> None:
    recipe = {"tool_diversity": 4.0}
    spec = RunSpec(run_id=run_id_for("e1", "v1", recipe, "m", 0), experiment="e1", design_version="v1",
                   recipe=recipe, model_size="m", model_params=1e5, train_tokens=1e6, train_flops=6e11, seed=0)
    with RunStore(tmp_path / "r.duckdb") as runs:
        runs.ensure_experiment("e1", axes=["tool_diversity"])
        assert runs.add_runs([spec], code="c0") == 1
    with Registry(tmp_path / "r.duckdb") as reg:
        assert [r.run_id for r in reg.runs("e1", run_ids=[spec.run_id])] == [spec.run_id]
        assert reg.runs("e1", run_ids=[]) == []
        assert reg.runs("e1", status=["done", "failed"]) == []
        assert [r.status for r in reg.runs("e1", status="pending")] == ["pending"]
