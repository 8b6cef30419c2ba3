"""``toolscale collect`` and ``toolscale synth`` through ``main([...])``."""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

import pytest

from synth.models import Manifest
from synth.recipe_io import parse_recipe
from toolscale.cli import main

FAKE = str(Path(__file__).parents[1] / "synth" / "fake_server.py")


def test_example_recipe_is_valid(capsys):
    assert main(["synth", "--example-recipe"]) == 0
    recipe = parse_recipe(tomllib.loads(capsys.readouterr().out))
    assert recipe.task_count == 128 and recipe.backend == "emulator"


def test_synth_writes_dataset_and_manifest(tmp_path, capsys):
    r = tmp_path / "r.toml"
    r.write_text("[recipe]\ntask_count = 24\ntool_diversity = 8\nseed = 2\n")
    reg = tmp_path / "reg.duckdb"
    assert main(["synth", "--recipe", str(r), "--out", str(tmp_path / "d"), "--set", "repair_rate=0.5",
                 "--registry", str(reg), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    m = Manifest.model_validate(out)
    assert m.recipe.repair_rate == 0.5 and m.counts["tasks"] == 24
    assert (tmp_path / "d" / "train.jsonl").read_text().count("\n") == m.counts["accepted"]
    from grid.registry import Registry
    with Registry(reg, read_only=True) as rg:
        assert rg.dataset(m.dataset_id).manifest["counts"]["tasks"] == 24


@pytest.mark.parametrize("extra,match", [
    (["--set", "task_cont=3"], "did you mean 'task_count'"),
    (["--set", "tool_diversity=999"], "exceeds"),
    (["--set", "coverage_quota=0.9"], "coverage_quota"),
    (["--set", "narrative_min_coherence=6"], "narrative_min_coherence"),
])
def test_synth_bad_knobs_one_line_exit_2(tmp_path, capsys, extra, match):
    r = tmp_path / "r.toml"
    r.write_text("task_count = 8\n")
    assert main(["synth", "--recipe", str(r), "--out", str(tmp_path / "d"), *extra]) == 2
    err = capsys.readouterr().err
    assert match in err and err.count("\n") == 1
    assert not (tmp_path / "d").exists()


def test_synth_needs_recipe_and_out(capsys):
    assert main(["synth"]) == 2
    assert "--recipe" in capsys.readouterr().err
    assert main(["synth", "--recipe", "/nonexistent.toml", "--out", "/tmp/x"]) == 2
    assert "not found" in capsys.readouterr().err


def test_collect_astra_file_json(tmp_path, capsys):
    tool = {"name": "t1", "description": "d", "parameters": {"type": "object", "properties": {}}}
    row = {"base_info": {"group_info": {"server_name": "Doc"}},
           "tool_list": [tool, {**tool, "name": "t2"}, {**tool, "name": "t3"}, {**tool, "name": "t4", "description": ""}]}
    f = tmp_path / "mcp_servers.jsonl"
    f.write_text(json.dumps(row) + "\n")
    assert main(["collect", "--astra", str(f), "--registry", str(tmp_path / "r.duckdb"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["servers"] == [{"server": "Doc", "source": "mcp_servers.jsonl:1", "tools": ["t1", "t2", "t3"]}]
    assert out["quarantined"][0]["tool"] == "t4" and out["counts"]["quarantined"] == 1


def test_synth_with_collected_document_only_tools(tmp_path, capsys):
    params = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    tools = [{"name": "find_venue", "description": "Find a venue in a city; returns venue_id.", "parameters": params},
             {"name": "get_venue", "description": "Get a venue.", "parameters": {
                 "type": "object", "properties": {"venue_id": {"type": "string"}}, "required": ["venue_id"]}},
             {"name": "book_venue", "description": "Book a venue.", "parameters": {
                 "type": "object", "properties": {"venue_id": {"type": "string"}, "guests": {"type": "integer"}},
                 "required": ["venue_id", "guests"]}}]
    f = tmp_path / "m.jsonl"
    f.write_text(json.dumps({"base_info": {"group_info": {"name": "venues"}}, "tool_list": tools}) + "\n")
    reg = str(tmp_path / "r.duckdb")
    assert main(["collect", "--astra", str(f), "--registry", reg]) == 0
    r = tmp_path / "r.toml"
    r.write_text('task_count = 24\ntool_diversity = 3\ndomains = ["travel"]\n')
    capsys.readouterr()
    # the 7 travel tools plus 3 emulated ones; tool_diversity 3 may land on either server, so ask for all 10
    assert main(["synth", "--recipe", str(r), "--out", str(tmp_path / "d"), "--set", "tool_diversity=10",
                 "--with-collected", "--registry", reg, "--json"]) == 0
    m = Manifest.model_validate(json.loads(capsys.readouterr().out))
    assert "venues" in m.servers and any(t.startswith("venues.") for t in m.tools)


@pytest.mark.integration
def test_collect_stdio_server_json(tmp_path, capsys):
    cmd = f"{sys.executable} {FAKE} tools 3"
    assert main(["collect", "--server", cmd, "--registry", str(tmp_path / "r.duckdb"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["servers"][0]["tools"] == ["echo_0", "echo_1", "echo_2"] and out["quarantined"] == []


@pytest.mark.integration
def test_synth_with_a_server_that_exits_at_once_exit_2_nothing_written(tmp_path, capsys):
    r = tmp_path / "r.toml"
    r.write_text("task_count = 4\n")
    bad = f"{sys.executable} -c \"import sys; sys.stderr.write('no such repository\\n'); sys.exit(1)\""
    assert main(["synth", "--recipe", str(r), "--out", str(tmp_path / "d"), "--server", bad]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "quarantined" in err and "no such repository" in err
    assert not (tmp_path / "d").exists()


def test_validate_refuses_more_tools_than_available(tmp_path, capsys):
    src = (Path(__file__).parents[2] / "docs" / "cluster.toml").read_text()
    cfg = tmp_path / "c.toml"
    cfg.write_text(src.replace("max = 48", "max = 256", 1))
    for argv in (["validate", str(cfg)], ["grid", "design", str(cfg), "--dry-run"]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "tool_diversity max = 256 exceeds the 50 tools available" in err


# ---- LLM roles: bad input is one line and exit 2; an endpoint that is down is one line naming the URL -------

LLM_OK = '[llm.judge]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n'


@pytest.mark.parametrize("table,match", [
    ('[llm.jugde]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n', "unknown LLM role 'jugde' (did you mean 'judge'?)"),
    (LLM_OK + "concurrency = 0\n", "llm.judge.concurrency: Input should be greater than or equal to 1 (got 0)"),
    (LLM_OK + 'price_in = "cheap"\n', "llm.judge.price_in: Input should be a valid number (got 'cheap')"),
    (LLM_OK + 'price_out = "1.5"\n', "llm.judge.price_out: Input should be a valid number (got '1.5')"),
    (LLM_OK + 'api_key_env = "TS_NO_SUCH_KEY_VAR"\n', "environment variable 'TS_NO_SUCH_KEY_VAR' is not set"),
    ('[llm.judge]\nbase_url = "localhost:8000"\nmodel = "m"\n', "llm.judge.base_url"),
])
def test_synth_bad_llm_role_one_line_exit_2(tmp_path, capsys, monkeypatch, table, match):
    monkeypatch.delenv("TS_NO_SUCH_KEY_VAR", raising=False)
    r = tmp_path / "r.toml"
    r.write_text("[recipe]\ntask_count = 8\n" + table)
    assert main(["synth", "--recipe", str(r), "--out", str(tmp_path / "d"), "--llm-cache", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert match in err and err.count("\n") == 1
    assert not (tmp_path / "d").exists()


def test_synth_unknown_model_exit_2(tmp_path, capsys):
    from synth.llm.scripted import ScriptedEndpoint

    with ScriptedEndpoint(models=("qwen",)) as ep:
        r = tmp_path / "r.toml"
        r.write_text(f'task_count = 8\n[llm.judge]\nbase_url = "{ep.url}"\nmodel = "gpt-9"\n')
        assert main(["synth", "--recipe", str(r), "--out", str(tmp_path / "d"), "--llm-cache", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert "unknown model 'gpt-9'" in err and "serves: qwen" in err and err.count("\n") == 1
    assert ep.requests == 0 and not (tmp_path / "d").exists()


def test_synth_endpoint_down_fails_in_seconds_naming_the_url(tmp_path, capsys):
    import socket
    import time

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    r = tmp_path / "r.toml"
    r.write_text(f'task_count = 8\n[llm.judge]\nbase_url = "{url}"\nmodel = "m"\n')
    t = time.perf_counter()
    assert main(["synth", "--recipe", str(r), "--out", str(tmp_path / "d"), "--llm-cache", str(tmp_path / "c")]) == 1
    assert time.perf_counter() - t < 5
    err = capsys.readouterr().err
    assert url in err and "unreachable" in err and err.count("\n") == 1
    assert not (tmp_path / "d").exists()


def test_synth_json_reports_dollars_per_accepted_trajectory(tmp_path, capsys):
    from synth.llm.scripted import ScriptedEndpoint, reply

    scores = json.dumps({"score": 5})
    with ScriptedEndpoint(lambda n, b: reply(scores, prompt_tokens=1000, completion_tokens=50)) as ep:
        r = tmp_path / "r.toml"
        r.write_text(f'task_count = 8\ntool_diversity = 6\n[llm.judge]\nbase_url = "{ep.url}"\nmodel = "scripted"\n'
                     "price_in = 3\nprice_out = 15.0\n")
        assert main(["synth", "--recipe", str(r), "--out", str(tmp_path / "d"), "--llm-cache", str(tmp_path / "c"),
                     "--registry", str(tmp_path / "reg.duckdb"), "--json"]) == 0
    m = Manifest.model_validate(json.loads(capsys.readouterr().out))
    u = m.llm["judge"]
    from grid.registry import Registry
    with Registry(tmp_path / "reg.duckdb", read_only=True) as reg:  # the registry holds the same accounting
        assert reg.dataset(m.dataset_id).manifest["llm"] == json.loads(m.model_dump_json())["llm"]
    assert u.requests == ep.requests > 0 and m.counts["accepted"] > 0
    assert u.dollars_per_accepted == pytest.approx(u.requests * (1000 * 3 + 50 * 15) / 1e6 / m.counts["accepted"])
