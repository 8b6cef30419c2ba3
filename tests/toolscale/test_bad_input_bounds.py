"""Bad input, round 2 (issue 35): registry paths, bounded sizes, names, environment variables, full disks.

Each case: one line on stderr and no traceback, exit 2 for a user mistake (1 for the environment), and what is
stored (the registry, the file named by mistake) left byte for byte as it was.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from toolscale.cli import main

REPO = Path(__file__).resolve().parents[2]
SMALL = REPO / "tests" / "fit" / "small.toml"
GOOD_CSV = "id,model,tokens,acc\na,1e6,1e9,0.50\nb,2e6,2e9,0.55\nc,4e6,4e9,0.61\nd,8e6,8e9,0.64\n"
MAP = ["--map", "model=model_size", "--map", "tokens=train_tokens", "--map", "acc=score", "--map", "id=run_id"]


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    """A registry with a simulated experiment ``sim``."""
    d = tmp_path_factory.mktemp("bounds-base")
    reg = d / "base.duckdb"
    assert main(["simulate", "--config", str(SMALL), "--registry", str(reg), "--experiment", "sim",
                 "--noise", "0.01"]) == 0
    return reg


@pytest.fixture
def reg(base, tmp_path) -> Path:
    (tmp_path / "good.csv").write_text(GOOD_CSV)
    copy = tmp_path / "reg.duckdb"
    shutil.copy(base, copy)
    return copy


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if x.strip()]
    assert "Traceback" not in err and len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("name,data", [("runs.csv", GOOD_CSV.encode()), ("runs.parquet", b"PAR1\0\0PAR1"),
                                       ("runs.json", b"[]")])
@pytest.mark.parametrize("command", ["import-runs", "simulate", "status"])
def test_an_existing_data_file_as_registry_is_exit_2_and_untouched(tmp_path, capsys, name, data, command):
    target = tmp_path / name
    target.write_bytes(data)
    (tmp_path / "good.csv").write_text(GOOD_CSV)
    argv = {"import-runs": ["import-runs", str(tmp_path / "good.csv"), "--experiment", "e", "--benchmark", "b", *MAP],
            "simulate": ["simulate", "--config", str(SMALL), "--experiment", "s"],
            "status": ["status"]}[command]
    rc = main([*argv, "--registry", str(target)])  # used to print "imported 4 rows", exit 0, and store nothing
    line = _line(capsys)
    assert rc == 2 and "not a registry" in line and str(target) in line
    assert target.read_bytes() == data and not Path(f"{target}.wal").exists()


def test_a_folder_as_registry_is_exit_2(tmp_path, capsys):
    assert main(["status", "--registry", str(tmp_path)]) == 2  # used to say "corrupt ... restore", exit 1
    assert "is a folder" in _line(capsys)


def test_a_garbage_schema_version_is_one_line(reg, capsys):
    con = duckdb.connect(str(reg))
    con.execute("UPDATE schema_meta SET value = 'abc' WHERE key = 'schema_version'")
    con.close()
    before = _digest(reg)
    assert main(["status", "--registry", str(reg)]) == 1
    assert "schema_version is 'abc'" in _line(capsys) and _digest(reg) == before


@pytest.mark.parametrize("value", ["abc", "-5", "nan"])
def test_a_bad_lock_timeout_is_exit_2(reg, capsys, monkeypatch, value):
    monkeypatch.setenv("TOOLSCALE_LOCK_TIMEOUT", value)
    before = _digest(reg)
    assert main(["status", "--registry", str(reg)]) == 2
    assert "TOOLSCALE_LOCK_TIMEOUT" in _line(capsys) and _digest(reg) == before


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_a_duplicate_header_is_refused(reg, tmp_path, capsys, suffix):
    path = tmp_path / f"dup{suffix}"
    if suffix == ".csv":
        path.write_text("id,model,tokens,acc,acc\na,1e6,1e9,0.5,0.9\nb,2e6,2e9,0.6,0.1\n")
    else:  # a Parquet schema can name a column twice too; DuckDB reads the second as acc_1
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_arrays([pa.array(v) for v in (["a", "b"], [1e6, 2e6], [1e9, 2e9], [0.5, 0.6],
                                                                   [0.9, 0.1])],
                                            names=["id", "model", "tokens", "acc", "acc"]), path)
    before = _digest(reg)
    assert main(["import-runs", str(path), "--experiment", "e", "--benchmark", "b", *MAP,
                 "--registry", str(reg)]) == 2
    line = _line(capsys)
    assert "column 'acc' is in the header twice (columns 4 and 5)" in line and _digest(reg) == before


@pytest.mark.parametrize("name", ["", "a\nb", "../../x", "x" * 5000, ".x", "a b"])
def test_experiment_names_are_checked(reg, tmp_path, capsys, name):
    before = _digest(reg)
    rc = main(["import-runs", str(tmp_path / "good.csv"), "--experiment", name, "--benchmark", "b", *MAP,
               "--registry", str(reg)])
    line = _line(capsys)
    assert rc == 2 and "experiment name" in line and "is not allowed" in line and len(line) < 300
    assert _digest(reg) == before


@pytest.mark.parametrize("levels", ["1e20", "1000000000", "65"])
def test_levels_are_bounded(tmp_path, capsys, levels):
    cfg = tmp_path / "c.toml"
    cfg.write_text(SMALL.read_text().replace("levels = 3", f"levels = {levels}", 1))
    rc = main(["grid", "design", str(cfg), "--dry-run"])  # 1e9 used to allocate 7.45 GiB
    line = _line(capsys)
    assert rc == 2 and "levels" in line


def test_a_design_with_too_many_candidates_is_refused(tmp_path, capsys):
    cfg = tmp_path / "c.toml"
    cfg.write_text(SMALL.read_text().replace("levels = 3", "levels = 64"))  # 64^3 = 262,144 candidates
    assert main(["grid", "design", str(cfg), "--dry-run"]) == 2
    assert "262,144 candidate points, more than 100,000" in _line(capsys)


def test_a_toml_nested_5000_deep_is_one_line(tmp_path, capsys):
    cfg = tmp_path / "deep.toml"
    cfg.write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    assert main(["grid", "design", str(cfg), "--dry-run"]) == 2  # used to be a RecursionError, 3,002 lines
    assert "nested too deeply" in _line(capsys)
    assert main(["validate", str(cfg)]) == 2  # validate lists each problem, then its summary line
    err = capsys.readouterr().err
    assert "Traceback" not in err and "nested too deeply" in err


@pytest.mark.parametrize("sweep", ["200:1e6:100000000", "200:inf:5", "200:1e6:1"])
def test_sweep_steps_are_bounded(reg, capsys, sweep):
    before = _digest(reg)
    rc = main(["allocate", "--registry", str(reg), "--experiment", "sim", "--benchmark", "simulated",
               "--budget", "1000", "--sweep", sweep])  # used to run without bound, a stored row per step
    assert rc == 2 and "--sweep" in _line(capsys) and _digest(reg) == before


def _limited(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """``toolscale ARGV`` with files capped at 2 KiB (RLIMIT_FSIZE): a write past it fails as on a full disk."""
    code = ("import resource, signal, sys\nsignal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
            "resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))\nfrom toolscale.cli import main\n"
            f"sys.exit(main({argv!r}))")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.parametrize("command", ["export", pytest.param("report", marks=pytest.mark.slow)])  # report: a fit, 30 s
def test_a_full_disk_names_the_file_and_leaves_no_partial_one(reg, tmp_path, command):
    """A fresh interpreter importing pandas and DuckDB under a file-size limit: about 10 s on two busy cores."""
    out = tmp_path / "out"
    out.mkdir()
    argv = {"export": ["export", "--registry", str(reg), "--out", str(out / "runs.csv")],
            "report": ["report", "--registry", str(reg), "--experiment", "sim", "--benchmark", "simulated",
                       "--out", str(out), "--bootstrap", "0", "--no-interaction"]}[command]
    res = _limited(argv, tmp_path)
    lines = [x for x in res.stderr.splitlines() if x.strip()]
    assert res.returncode == 1 and "Traceback" not in res.stderr and len(lines) == 1, res.stderr
    assert "File too large: " + str(out) in lines[0]  # names the file it could not write
    left = [p for p in out.rglob("*") if p.is_file()]
    assert all(p.stat().st_size > 0 for p in left) and not any(p.name.endswith(".tmp") for p in left)
    if command == "export":
        assert left == []
