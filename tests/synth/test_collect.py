"""Collection: schema normalisation, quarantine rules, ASTRA import, registry storage."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from synth.models import Quarantined
from synth.collect import collect_stdio, import_astra, normalize_schema, screen_server, store_report
from synth.errors import ToolDocError, UsageError

FAKE = str(Path(__file__).with_name("fake_server.py"))


def _tool(name, desc="does things", params=None):
    return {"name": name, "description": desc,
            "parameters": params if params is not None else {"type": "object", "properties": {"x": {"type": "string"}},
                                                              "required": ["x"]}}


def test_normalize_pydantic_style_schema():
    raw = {"title": "fArguments", "type": "object", "required": ["a"],
           "properties": {"a": {"title": "A", "type": "string", "description": "d"},
                          "b": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None, "title": "B"}}}
    assert normalize_schema(raw) == {"type": "object", "required": ["a"],
                                     "properties": {"a": {"type": "string", "description": "d"},
                                                    "b": {"type": "integer"}}}


@pytest.mark.parametrize("bad,match", [
    ('{"type": "object", "properties": ', "not valid JSON"),
    ({"type": "array"}, "type 'object'"),
    ({"type": "object", "properties": []}, "'properties' must be a mapping"),
    ({"type": "object", "properties": {}, "required": ["q"]}, "required \\['q'\\] not among"),
])
def test_bad_schemas_raise_one_line(bad, match):
    with pytest.raises(ToolDocError, match=match) as err:
        normalize_schema(bad, "t")
    assert "\n" not in str(err.value)


def test_quarantine_rules():
    kept, q = screen_server("s", "src", [_tool("a"), _tool("b"), _tool("c"), _tool("d", desc=" "), _tool("e"),
                                          _tool("e"), _tool("f", params="{bad json")])
    assert [t.name for t in kept.tools] == ["a", "b", "c"]
    reasons = {x.tool: x.reason for x in q}
    assert "empty description" in reasons["d"] and "duplicate" in reasons["e"] and "not valid JSON" in reasons["f"]
    kept, q = screen_server("tiny", "src", [_tool("a"), _tool("b")])
    assert kept is None and q[-1].tool is None and "fewer than 3" in q[-1].reason
    kept, q = screen_server("tiny", "src", [_tool("a"), _tool("b")], min_tools=2)  # [synth] min_tools
    assert kept is not None and len(kept.tools) == 2
    with pytest.raises(UsageError, match="min_tools must be at least 1, got 0"):
        screen_server("tiny", "src", [_tool("a")], min_tools=0)
    kept, q = screen_server("bare", "src", [{"name": "a", "description": "d"}, {"name": "b", "description": "d"}])
    assert kept is None and q == [Quarantined(server="bare", tool=None, reason="no tool has an input schema")]


def test_astra_import(tmp_path):
    rows = [{"base_info": {"group_info": {"server_name": "Baggage Desk"}},
             "tool_list": [_tool("reservation_finder"), _tool("baggage_fee_calculator"), _tool("payment_processor"),
                           _tool("payment_processor")]},
            {"base_info": {"group_info": {"server_title": "Weather"}}, "tool_list": [_tool("a"), _tool("b"), _tool("c")]}]
    f = tmp_path / "mcp_servers.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in rows) + "\n{not json\n")
    rep = import_astra(f)
    assert [s.server for s in rep.servers] == ["Weather"]  # Baggage Desk: 2 usable tools after the duplicate
    reasons = [q.reason for q in rep.quarantined]
    assert any("duplicate" in r for r in reasons) and any("malformed JSON at line 3" in r for r in reasons)
    with pytest.raises(UsageError, match="not found"):
        import_astra(tmp_path / "missing.jsonl")


@pytest.mark.integration
def test_collect_stdio_quarantines_and_stores(tmp_path):
    from grid.registry import Registry

    rep = collect_stdio([[sys.executable, FAKE, "tools", "5", "--empty-description"],
                         [sys.executable, FAKE, "tools", "2"],
                         "/nonexistent/server --flag"], timeout_s=20)
    # servers the user names are never held to min_tools: the 2-tool server is kept
    assert [s.server for s in rep.servers] == ["fake-tools", "fake-tools#1"] and len(rep.servers[0].tools) == 4
    reasons = [(q.tool, q.reason) for q in rep.quarantined]
    assert any(t == "echo_0" and "empty description" in r for t, r in reasons)
    assert any(t is None and "failed to start" in r for t, r in reasons)
    with Registry(tmp_path / "r.duckdb") as reg:
        store_report(rep, reg)
        assert len(reg.tool_docs("fake-tools")) == 4
        assert len(reg.quarantine()) == len(rep.quarantined)


def test_an_mcp_tools_output_schema_and_annotations_reach_its_tool_doc():
    """The user's server's ``outputSchema`` gives the tool's output fields (array items read like a result's
    fields), so the tool graph gets edges; ``readOnlyHint``/``destructiveHint`` give its effect."""
    import mcp.types as T

    from synth.collect import output_schema_fields, raw_tool
    from synth.observe import effect

    schema = {"type": "object", "properties": {
        "branches": {"type": "array", "items": {"type": "object", "properties": {"branch_name": {}, "sha": {}}}},
        "current": {"type": "string"}}}
    assert output_schema_fields(schema) == ["branch_name", "sha", "current"]
    assert output_schema_fields({"type": "object"}) == [] and output_schema_fields(None) == []
    args = {"type": "object", "properties": {"repo_path": {"type": "string"}}, "required": ["repo_path"]}
    tools = [T.Tool(name="git_branch", description="List branches", inputSchema=args, outputSchema=schema,
                    annotations=T.ToolAnnotations(readOnlyHint=True)),
             T.Tool(name="git_tidy", description="Tidy the repository", inputSchema=args,
                    annotations=T.ToolAnnotations(readOnlyHint=False, destructiveHint=True)),
             T.Tool(name="git_note", description="Add a note", inputSchema=args)]
    kept, quarantined = screen_server("git", "stdio", [raw_tool(t) for t in tools], min_tools=1)
    assert quarantined == [] and kept is not None
    docs = {d.name: d for d in kept.tools}
    assert docs["git_branch"].output_fields == ["branch_name", "sha", "current"]
    assert [effect(docs[n]) for n in ("git_branch", "git_tidy", "git_note")] == ["read", "destructive", "write"]
    assert docs["git_note"].read_only is None and docs["git_note"].output_fields == []
