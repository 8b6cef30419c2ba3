"""toolscale/cli/envs.py: ``toolscale envs build`` and ``toolscale envs check`` through ``main``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from toolscale.cli import main

pytestmark = pytest.mark.integration

FIX = Path(__file__).parent / "fixtures"


def test_build_then_check(tmp_path: Path, capsys):
    assert main(["envs", "build", "--out", str(tmp_path), "--n", "3", "--seed", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["written"] == 3 and Path(out["path"]) == tmp_path / "envs.jsonl"
    assert main(["envs", "check", str(tmp_path / "envs.jsonl"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["rows"] == 3 and report["passed"] == 3 and report["rejected_rows"] == []
    assert report["isolation"] == ["namespaces"]


def test_check_foreign_file_reports_rejected_rows(tmp_path: Path, capsys):
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text((FIX / "astra_baggage_fixed.jsonl").read_text()
                     + (FIX / "astra_duplicate_name.jsonl").read_text()
                     + (FIX / "astra_random_txn.jsonl").read_text())
    assert main(["envs", "check", str(mixed), "--cpu-s", "2", "--wall-s", "5"]) == 1
    out = capsys.readouterr().out
    assert "REJECTED row 2 (astra-baggage-duplicate-name)" in out
    assert "REJECTED row 3 (astra-baggage-random-txn)" in out
    assert "row 1" not in out.replace("rows", "")
    assert "1 of 3 rows pass, 2 rejected" in out


def test_check_all_pass_exits_zero(tmp_path: Path, capsys):
    shutil.copy(FIX / "astra_baggage_fixed.jsonl", tmp_path / "a.jsonl")
    assert main(["envs", "check", str(tmp_path / "a.jsonl")]) == 0
    assert "1 of 1 rows pass" in capsys.readouterr().out


def test_bad_input_is_one_line(tmp_path: Path, capsys):
    assert main(["envs", "check", str(tmp_path / "missing.jsonl")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no such file" in err[0]
    assert main(["envs", "build", "--out", str(tmp_path), "--n", "1", "--domains", "atlantis"]) == 2
    assert "unknown domain(s) ['atlantis']" in capsys.readouterr().err
    assert main(["envs", "build", "--out", str(tmp_path), "--distractors", "extreme=3"]) == 2


def test_empty_file_is_a_usage_error(tmp_path: Path, capsys):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    assert main(["envs", "check", str(empty)]) == 2
    assert "has no rows" in capsys.readouterr().err


def test_check_fails_closed_when_the_jail_cannot_be_set_up(tmp_path: Path, capsys, monkeypatch):
    from synth.envs import jail

    shutil.copy(FIX / "astra_baggage_fixed.jsonl", tmp_path / "a.jsonl")
    monkeypatch.setattr(jail, "_bwrap", lambda: "/bin/false")  # a "bubblewrap" that cannot set anything up
    jail.jail_problem.cache_clear()
    try:
        assert main(["envs", "check", str(tmp_path / "a.jsonl")]) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "cannot isolate generated tool code" in err[0]
        assert "--insecure-in-process" in err[0]
        assert main(["envs", "check", str(tmp_path / "a.jsonl"), "--insecure-in-process", "--json"]) == 0
        captured = capsys.readouterr()
        assert "WARNING: --insecure-in-process" in captured.err
        assert json.loads(captured.out)["isolation"] == ["insecure"]
    finally:
        monkeypatch.undo()
        jail.jail_problem.cache_clear()
