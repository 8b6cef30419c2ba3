"""``toolscale serve-model``: OpenAI chat completions over a tiny TRL-trained model, hermes tool-call parsing."""

from __future__ import annotations

import json

import pytest

from eval.serve import ChatCompletionRequest, ModelServer, build_app, hermes_tool_calls

TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Current weather of a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
ASK = [{"role": "user", "content": "What is the weather in Oslo?"}]


def test_hermes_parsing_like_vllm():
    one = '<tool_call>{"name": "f", "arguments": {"x": 1}}</tool_call>'
    content, calls = hermes_tool_calls("I will look.\n" + one + "\n" + one.replace("f", "g"), "p")
    assert content == "I will look."
    assert [(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls] == \
        [("call_p_0", "f", {"x": 1}), ("call_p_1", "g", {"x": 1})]
    assert all(c["type"] == "function" and isinstance(c["function"]["arguments"], str) for c in calls)
    for bad in ('<tool_call>{"name": "f", "arguments": {"x": 1}', '<tool_call>{"arguments": {}}</tool_call>',
                '<tool_call>not json</tool_call>', one + '<tool_call>{"name": 3}</tool_call>'):
        assert hermes_tool_calls(bad, "p") == (bad, []), bad  # a block that does not parse: all of it is content
    assert hermes_tool_calls("", "p") == (None, []) and hermes_tool_calls("plain", "p") == ("plain", [])


@pytest.fixture(scope="module")
def app_client(tiny_model_dir):
    from fastapi.testclient import TestClient

    server = ModelServer(tiny_model_dir, model_name="m")
    with TestClient(build_app(server)) as client:
        yield server, client


def test_chat_completion_shape_and_token_counts(app_client):
    server, client = app_client
    assert client.get("/v1/models").json()["data"][0]["id"] == "m"
    body = client.post("/v1/chat/completions", json={"model": "m", "messages": ASK, "tools": TOOLS,
                                                     "max_tokens": 40, "top_p": 1.0}).json()
    choice = body["choices"][0]
    assert choice["message"]["role"] == "assistant" and choice["finish_reason"] in ("stop", "length", "tool_calls")
    assert body["usage"]["prompt_tokens"] == len(server.prompt_ids(ChatCompletionRequest(model="m", messages=ASK,
                                                                                          tools=TOOLS)))
    assert 1 <= body["usage"]["completion_tokens"] <= 40
    if choice["finish_reason"] == "tool_calls":
        assert all(isinstance(c["function"]["arguments"], str) for c in choice["message"]["tool_calls"])
    else:
        assert "tool_calls" not in choice["message"]


def test_tools_reach_the_chat_template(app_client):
    server, _ = app_client
    bare = server.prompt_ids(ChatCompletionRequest(model="m", messages=ASK))
    with_tools = server.prompt_ids(ChatCompletionRequest(model="m", messages=ASK, tools=TOOLS))
    text = server.backend.tokenizer.decode(with_tools)
    assert len(with_tools) > len(bare) and "get_weather" in text and "<tools>" in text


def test_greedy_is_deterministic_and_max_tokens_cuts_with_length(app_client):
    _, client = app_client
    req = {"model": "m", "messages": [{"role": "user", "content": "Tell me a long story"}], "max_tokens": 3}
    a, b = (client.post("/v1/chat/completions", json=req).json() for _ in range(2))
    assert a["choices"] == b["choices"] and a["usage"]["completion_tokens"] <= 3
    if a["usage"]["completion_tokens"] == 3:
        assert a["choices"][0]["finish_reason"] == "length"


def test_bad_requests_get_openai_errors(app_client):
    _, client = app_client
    r = client.post("/v1/chat/completions", json={"model": "other", "messages": ASK})
    assert r.status_code == 404 and "'other' does not exist" in r.json()["error"]["message"]
    assert client.post("/v1/chat/completions", json={"model": "m", "messages": ASK, "stream": True}).status_code == 400
    r = client.post("/v1/chat/completions", json={"model": "m", "messages": []})
    assert r.status_code == 400 and "messages" in r.json()["error"]["message"]
    long = [{"role": "user", "content": "word " * 6000}]
    r = client.post("/v1/chat/completions", json={"model": "m", "messages": long})
    assert r.status_code == 400 and "context" in r.json()["error"]["message"]


@pytest.mark.integration
def test_served_model_through_the_llm_client(served_model, tmp_path):
    """The real subprocess on 127.0.0.1, driven by the shared client; its generations parse or are flagged."""
    from synth.llm.client import LLMClient
    from synth.llm.toolcalls import check_tool_calls
    from toolscale.config import LLMRoleSpec

    assert served_model.url.startswith("http://127.0.0.1:")
    spec = LLMRoleSpec(base_url=served_model.url, model=served_model.model, max_tokens=48, timeout_s=60)
    with LLMClient({"policy": spec}, cache=tmp_path) as llm:
        llm.check()
        replies = [llm.chat("policy", [{"role": "user", "content": f"What is the weather in {c}?"}], tools=TOOLS)
                   for c in ("Oslo", "Lima", "Paris")]
        usage = llm.usage()["policy"]
    assert usage.requests == 3 and usage.tokens_in > 0 and usage.tokens_out > 0
    called = [r for r in replies if r.tool_calls]
    assert called, "the trained model should call get_weather for at least one question"
    for r in replies:
        problems = check_tool_calls(r, TOOLS)
        assert all(p.reason in {"unknown_tool", "malformed_arguments", "truncated_tool_call", "schema_violation"}
                   for p in problems)
        if r.tool_calls and not problems:
            assert all(json.loads(c.arguments)["city"] for c in r.tool_calls)


def test_cli_bad_input_exit_2(tmp_path, capsys):
    from toolscale.cli import main

    assert main(["serve-model", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert "is not a folder" in err and err.count("\n") == 1
    assert main(["serve-model", str(tmp_path), "--port", "70000"]) == 2
    assert "--port must be 0..65535, got 70000" in capsys.readouterr().err


@pytest.mark.parametrize("messages,needle", [
    ([{"content": "no role"}], "messages[0].role: Field required"),
    ([{"role": "wizard", "content": "x"}], "messages[0].role"),
    (["just a string"], "messages.0"),
    ([{"role": "assistant", "content": None, "tool_calls": [{"function": {}}]}], "messages[0].tool_calls.0"),
    ([{"role": "user", "content": 5}], "messages[0].content"),
])
def test_a_malformed_message_is_a_400_not_a_500(app_client, messages, needle):
    # A message without a role used to be an HTTP 500, which clients retry.
    _, client = app_client
    r = client.post("/v1/chat/completions", json={"model": "m", "messages": messages})
    assert r.status_code == 400 and needle in r.json()["error"]["message"]


def test_a_malformed_tool_schema_is_a_400(app_client):
    _, client = app_client
    r = client.post("/v1/chat/completions", json={"model": "m", "messages": ASK, "tools": [{"type": "function"}]})
    assert r.status_code == 400 and "tools[0]" in r.json()["error"]["message"]
