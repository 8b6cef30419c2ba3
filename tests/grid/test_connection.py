"""The registry's connection core: the shared ``_where``, and each store opening the file alone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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


# ---- damaged files and unwritable places: one RegistryError line, never a DuckDB traceback -------------------
@pytest.fixture(scope="module")
def _base(tmp_path_factory) -> str:
    """A registry with a few hundred rows over several tables (runs, metrics, fits), built once."""
    from grid.models import MetricResult

    path = tmp_path_factory.mktemp("filled") / "base.duckdb"

    runs = []
    for i in range(300):
        recipe = {"tool_diversity": float(i)}
        runs.append(RunSpec(run_id=run_id_for("e", "v1", recipe, "s", 0), experiment="e", design_version="v1",
                            recipe=recipe, model_size="s", model_params=1e5, train_tokens=1e6, train_flops=6e11))
    with Registry(path) as reg:
        reg.import_runs("e", ["tool_diversity"], runs, [[MetricResult(benchmark="b", score=i / 300)]
                                                         for i in range(300)])
        reg.save_fit(experiment="e", benchmark="b", metric="score", law="l", converged=True, n_points=300,
                     data_hash="h", payload={"x": list(range(2000))})
    return str(path)


@pytest.fixture
def filled(_base, tmp_path):
    """A fresh copy of the filled registry: ``filled(path) -> path``."""
    import shutil

    def copy(path) -> str:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        shutil.copy(_base, path)
        return str(path)

    return copy


def test_check_reads_every_table_of_a_good_registry(tmp_path, filled) -> None:
    from grid.connection import check_registry

    report = check_registry(filled(tmp_path / "r.duckdb"))
    assert report.ok and report.schema_version == SCHEMA_VERSION
    rows = {t.table: t.rows for t in report.tables}
    assert rows["runs"] == 300 and rows["metrics"] == 300 and rows["fits"] == 1


def test_a_zeroed_block_that_status_would_not_read_is_found_by_check(tmp_path, filled) -> None:
    """Zero 4 KiB inside each 256 KiB block in turn: every block in use is reported, by table or at open."""
    import shutil

    from grid.connection import check_registry

    good = filled(tmp_path / "good.duckdb")
    size = os.path.getsize(good)
    found = []
    for start in range(12288, size, 262144):  # DuckDB: a 12 KiB header, then 256 KiB blocks
        bad = tmp_path / f"z{start}.duckdb"
        shutil.copy(good, bad)
        with open(bad, "r+b") as fh:
            fh.seek(start + 8192)
            fh.write(b"\0" * 4096)
        report = check_registry(bad)
        if not report.ok:
            found.append(report.error or ", ".join(t.table for t in report.tables if not t.ok))
    assert found, "no damaged block was detected"
    assert any("runs" in f or "metrics" in f or "fits" in f or "corrupt" in f for f in found)


@pytest.mark.parametrize("keep", [0.1, 0.5, 0.9])
def test_truncated_registry_is_named_corrupt_with_the_way_back(tmp_path, keep, filled) -> None:
    from grid.connection import check_registry
    from grid.errors import RegistryCorruptError

    path = filled(tmp_path / "r.duckdb")
    with open(path, "r+b") as fh:
        fh.truncate(int(os.path.getsize(path) * keep))
    assert not check_registry(path).ok
    with pytest.raises(RegistryCorruptError, match="corrupt or truncated.*backup.*registry check"):
        with Registry(path, read_only=True) as reg:
            reg.runs("e")
            reg.fits("e")


def _bwrap_as_root() -> bool:
    import shutil

    return os.geteuid() == 0 and shutil.which("bwrap") is not None


@pytest.mark.integration
@pytest.mark.skipif(not _bwrap_as_root(), reason="needs root and bubblewrap to make a read-only folder")
def test_writable_file_in_a_read_only_folder_is_one_line(tmp_path, filled) -> None:
    """The registry file is writable but its folder is not, so DuckDB cannot create ``.wal``."""
    path = filled(tmp_path / "ro" / "r.duckdb")
    folder = os.path.dirname(path)
    code = ("from grid.registry import Registry\nfrom grid.models import MetricResult\n"
            f"with Registry({path!r}) as reg:\n    reg.add_metrics(reg.runs('e')[0].run_id, "
            "[MetricResult(benchmark='c', score=0.1)])\n")
    proc = subprocess.run(["bwrap", "--dev-bind", "/", "/", "--ro-bind", folder, folder, "--bind", path, path,
                           sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert proc.returncode == 1
    assert "RegistryWriteError" in proc.stderr and "is not writable" in proc.stderr and ".wal" in proc.stderr


@pytest.mark.integration
@pytest.mark.skipif(not _bwrap_as_root(), reason="needs root and bubblewrap for a tiny tmpfs")
def test_disk_full_is_one_line_and_commits_nothing(tmp_path, filled) -> None:
    path = filled(tmp_path / "r.duckdb")
    size = os.path.getsize(path)
    full = str(tmp_path / "full")
    code = (f"import shutil\nshutil.copy({path!r}, {full!r} + '/r.duckdb')\n"
            "from grid.registry import Registry\nfrom grid.models import MetricResult\n"
            f"with Registry({full!r} + '/r.duckdb') as reg:\n"
            "    for r in reg.runs('e'):\n"
            "        reg.add_metrics(r.run_id, [MetricResult(benchmark='c' * 2000, score=0.1)])\n")
    os.makedirs(full)
    proc = subprocess.run(["bwrap", "--dev-bind", "/", "/", "--size", str(size + 64 * 1024), "--tmpfs", full,
                           sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert proc.returncode == 1
    assert "RegistryWriteError: disk full while writing registry" in proc.stderr


# --- issue 35: only DuckDB files, garbage versions and timeouts, read commands on older schemas ---

def _v1(path: Path) -> str:
    import duckdb

    from grid.schema import MIGRATIONS

    con = duckdb.connect(str(path))
    for sql in MIGRATIONS[0]:
        con.execute(sql)
    con.execute("INSERT INTO schema_meta VALUES ('schema_version', '1')")
    con.execute("INSERT INTO runs (run_id, experiment, design_version, recipe, model_size, created_at, "
                "schema_version) VALUES ('old-run', 'e0', 'v0', '{}', 'm', now(), 1)")
    con.close()
    return str(path)


@pytest.mark.parametrize("name,data", [("runs.csv", b"model,tokens,acc\n1e6,1e9,0.5\n"),
                                       ("runs.json", b'{"a": 1}\n'), ("runs.parquet", b"PAR1" + b"\0" * 64 + b"PAR1"),
                                       ("empty.duckdb", b""), ("short.duckdb", b"DUCK")])
@pytest.mark.parametrize("read_only", [False, True])
def test_only_a_duckdb_file_is_opened(tmp_path, name, data, read_only) -> None:
    from grid.errors import RegistryPathError

    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(RegistryPathError, match=f"--registry {path} is .*not a registry") as err:
        Registry(path, read_only=read_only)
    assert err.value.exit_code == 2
    assert path.read_bytes() == data and not Path(f"{path}.wal").exists()


def test_a_folder_or_fifo_is_not_a_registry(tmp_path) -> None:
    from grid.errors import RegistryPathError

    with pytest.raises(RegistryPathError, match="is a folder") as err:
        Registry(tmp_path)
    assert err.value.exit_code == 2
    fifo = tmp_path / "x.duckdb"
    os.mkfifo(fifo)
    with pytest.raises(RegistryPathError, match="not a regular file"):
        Registry(fifo, read_only=True)  # would block forever if opened


def test_a_garbage_schema_version_is_one_corrupt_line(tmp_path) -> None:
    import duckdb

    from grid.errors import RegistryCorruptError

    path = tmp_path / "r.duckdb"
    Registry(path).close()
    con = duckdb.connect(str(path))
    con.execute("UPDATE schema_meta SET value = 'abc' WHERE key = 'schema_version'")
    con.close()
    for read_only in (False, True):
        with pytest.raises(RegistryCorruptError, match="schema_version is 'abc'.*registry check"):
            Registry(path, read_only=read_only)


@pytest.mark.parametrize("value", ["abc", "nan", "-1", "inf", "1e9"])
def test_a_bad_lock_timeout_is_a_usage_error(tmp_path, monkeypatch, value) -> None:
    from toolscale.errors import UsageError

    monkeypatch.setenv("TOOLSCALE_LOCK_TIMEOUT", value)
    with pytest.raises(UsageError, match=f"TOOLSCALE_LOCK_TIMEOUT must be .*got '{value}'"):
        Registry(tmp_path / "r.duckdb")
    assert not (tmp_path / "r.duckdb").exists()


def test_read_commands_migrate_an_older_registry(tmp_path) -> None:
    path = _v1(tmp_path / "old.duckdb")
    with Registry(path, read_only=True) as reg:  # used to fail: Referenced column "split" not found
        assert reg.read_only and reg.schema_version() == SCHEMA_VERSION
        assert [(r.run_id, r.split) for r in reg.runs()] == [("old-run", "fit")]


def test_an_older_registry_that_cannot_be_written_is_refused_naming_the_migration(tmp_path, monkeypatch) -> None:
    from grid.errors import RegistryWriteError

    path = _v1(tmp_path / "old.duckdb")
    os.chmod(tmp_path, 0o555)
    os.chmod(path, 0o444)
    try:
        if os.access(path, os.W_OK):  # root: file modes stop nothing, so the write fails as a read-only mount would
            def refuse(self):
                raise RegistryWriteError(f"cannot write registry {self.path}: read-only file system")
            monkeypatch.setattr(Connection, "migrate", refuse)
        with pytest.raises(RegistryWriteError, match="schema version 1, older.*toolscale registry migrate"):
            Registry(path, read_only=True)
    finally:
        os.chmod(tmp_path, 0o755)


def test_registry_migrate_reports_the_versions(tmp_path, capsys) -> None:
    from toolscale.cli import main

    path = _v1(tmp_path / "old.duckdb")
    assert main(["registry", "migrate", "--registry", path, "--json"]) == 0
    import json

    assert json.loads(capsys.readouterr().out) == {"path": path, "schema_version_before": 1,
                                                   "schema_version": SCHEMA_VERSION}
    assert main(["registry", "migrate", "--registry", path]) == 0
    assert "already at schema version" in capsys.readouterr().out


def test_registry_check_reads_an_older_registry_without_changing_it(tmp_path) -> None:
    import hashlib

    from grid.connection import check_registry

    path = _v1(tmp_path / "old.duckdb")
    before = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    report = check_registry(path)
    assert report.ok and report.schema_version == 1
    assert hashlib.sha256(Path(path).read_bytes()).hexdigest() == before
