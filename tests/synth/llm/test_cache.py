"""The content-addressed response cache: stable keys, atomic files, safe when processes share it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from synth.llm.cache import ResponseCache, default_cache_dir, request_key

ROOT = Path(__file__).resolve().parents[3]


def test_key_is_canonical_and_separates_url_and_salt():
    a = request_key("http://h/v1/", {"model": "m", "messages": [{"role": "user", "content": "é"}]})
    b = request_key("http://h/v1", {"messages": [{"content": "é", "role": "user"}], "model": "m"})
    assert a == b and len(a) == 64
    assert request_key("http://other/v1", {"model": "m"}) != request_key("http://h/v1", {"model": "m"})
    assert request_key("http://h/v1", {"model": "m"}, salt="1") != request_key("http://h/v1", {"model": "m"})


def test_put_get_and_unreadable_entries_are_misses(tmp_path):
    c = ResponseCache(tmp_path / "c")
    assert c.get("ab" * 32) is None and len(c) == 0
    c.put("ab" * 32, {"choices": [1]})
    assert c.get("ab" * 32) == {"choices": [1]} and len(c) == 1
    c.path("cd" * 32).parent.mkdir(parents=True)
    c.path("cd" * 32).write_text('{"trunc', encoding="utf-8")
    assert c.get("cd" * 32) is None
    assert not list((tmp_path / "c").rglob("*.tmp"))  # no temporary files left


def test_default_dir_honours_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("TOOLSCALE_LLM_CACHE", str(tmp_path / "x"))
    assert default_cache_dir() == tmp_path / "x"
    monkeypatch.delenv("TOOLSCALE_LLM_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_cache_dir() == tmp_path / "toolscale" / "llm"


def test_processes_writing_and_reading_the_same_keys_never_see_a_partial_entry(tmp_path):
    """Four processes write the same 50 keys (large bodies) while reading them back: every read is whole."""
    code = textwrap.dedent(f"""
        import sys
        from synth.llm.cache import ResponseCache
        c = ResponseCache({str(tmp_path)!r})
        me = int(sys.argv[1])
        bad = 0
        for rep in range(3):
            for k in range(50):
                key = f"{{k:064x}}"
                c.put(key, {{"k": k, "pad": "x" * 20000, "by": me}})
                got = c.get(key)
                bad += got is None or got["k"] != k or len(got["pad"]) != 20000
        print(bad)
    """)
    procs = [subprocess.Popen([sys.executable, "-c", code, str(i)], stdout=subprocess.PIPE, text=True,
                              env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}) for i in range(4)]
    outs = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert [p.returncode for p in procs] == [0] * 4 and outs == ["0"] * 4
    c = ResponseCache(tmp_path)
    assert len(c) == 50 and all(json.loads(c.path(f"{k:064x}").read_text())["k"] == k for k in range(50))
    assert not list(tmp_path.rglob("*.tmp"))
