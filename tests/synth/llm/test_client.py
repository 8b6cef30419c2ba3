"""The shared LLM client against a real HTTP endpoint with scripted faults: each fault ends as a retry, a
counted rejection (LLMReplyError with its reason) or a clean failure (LLMEndpointError naming the URL)."""

from __future__ import annotations

import socket
import time

import pytest

from synth.errors import LLMConfigError, LLMEndpointError, LLMReplyError
from synth.llm.client import LLMClient, parse_completion, retry_after_s
from synth.llm.scripted import ScriptedEndpoint, disconnect, hang, raw, reply, status, tool_call
from toolscale.config import LLMRoleSpec

MSGS = [{"role": "system", "content": "s", "tool_calls": None}, {"role": "user", "content": "q"}]


def spec(url: str, **kw) -> LLMRoleSpec:
    return LLMRoleSpec(base_url=url, model=kw.pop("model", "scripted"), **kw)


def client(url: str, role: str = "policy", cache=None, **kw) -> LLMClient:
    return LLMClient({role: spec(url, **kw)}, cache=cache, backoff_s=0.01, max_backoff_s=0.05)


def free_url() -> str:
    with socket.socket() as s:  # a local port nobody listens on: connection refused, no network
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


def test_standard_request_and_reply():
    tools = [{"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object"}}}]
    with ScriptedEndpoint([reply("hi", [tool_call("f", {"x": 1}, "c1")], prompt_tokens=7, completion_tokens=3)]) as ep:
        with client(ep.url, temperature=0.5, max_tokens=64) as c:
            r = c.chat("policy", MSGS, tools=tools)
    body = ep.bodies[0]
    assert set(body) == {"model", "messages", "temperature", "max_tokens", "tools"}
    assert body["messages"][0] == {"role": "system", "content": "s"}  # None-valued keys are not sent
    assert body["temperature"] == 0.5 and body["max_tokens"] == 64 and body["tools"] == tools
    assert (r.content, r.finish_reason, r.tokens_in, r.tokens_out, r.cached) == ("hi", "tool_calls", 7, 3, False)
    assert [(t.id, t.name, t.arguments) for t in r.tool_calls] == [("c1", "f", '{"x": 1}')]
    assert r.message()["tool_calls"][0]["function"] == {"name": "f", "arguments": '{"x": 1}'}


def test_429_honours_retry_after_and_5xx_are_retried():
    with ScriptedEndpoint([status(429, retry_after=0.3), status(500), status(503), reply("ok")]) as ep:
        with client(ep.url, max_tries=4) as c:
            t = time.perf_counter()
            r = c.chat("policy", MSGS)
            took = time.perf_counter() - t
            u = c.usage()["policy"]
    assert r.content == "ok" and ep.requests == 4
    assert took >= 0.3  # the Retry-After, not the 10 ms backoff
    assert (u.requests, u.retries, u.failures) == (1, 3, 0)


def test_retries_are_bounded_then_fail_naming_the_url():
    with ScriptedEndpoint([], then=status(503)) as ep:
        with client(ep.url, max_tries=3) as c:
            with pytest.raises(LLMEndpointError, match=rf"{ep.url}/chat/completions \(role policy\): HTTP 503 after 3"):
                c.chat("policy", MSGS)
            assert c.usage()["policy"].failures == 1
    assert ep.requests == 3


def test_timeouts_and_dropped_connections_are_retried_then_fail():
    with ScriptedEndpoint([hang(5), disconnect(), reply("late but fine")]) as ep:
        with client(ep.url, timeout_s=0.3, max_tries=3) as c:
            assert c.chat("policy", MSGS).content == "late but fine"
    with ScriptedEndpoint([], then=hang(5)) as ep:
        with client(ep.url, timeout_s=0.2, max_tries=2) as c:
            t = time.perf_counter()
            with pytest.raises(LLMEndpointError, match="no whole reply within 0.2 s after 2 tries"):
                c.chat("policy", MSGS)
            assert time.perf_counter() - t < 2.0


def test_malformed_replies_are_retried_then_rejected_with_a_reason():
    bad = [raw("{not json"), raw('{"choices": []}'), reply("x").__class__("reply", body={"choices": [
        {"message": {"content": "x", "tool_calls": [{"function": {"arguments": "{}"}}]}}]})]
    with ScriptedEndpoint([*bad, reply("ok")]) as ep:
        with client(ep.url, max_tries=4) as c:
            assert c.chat("policy", MSGS).content == "ok"
            assert c.usage()["policy"].retries == 3
    with ScriptedEndpoint([], then=raw("<html>")) as ep:
        with client(ep.url, max_tries=2) as c:
            with pytest.raises(LLMReplyError) as info:
                c.chat("policy", MSGS)
    assert info.value.reason == "malformed_reply" and ep.url in str(info.value)


def test_client_errors_are_not_retried():
    with ScriptedEndpoint([status(400, message="context too long")]) as ep:
        with client(ep.url) as c:
            with pytest.raises(LLMReplyError) as info:
                c.chat("policy", MSGS)
    assert info.value.reason == "http_400" and ep.requests == 1
    with ScriptedEndpoint([status(401)]) as ep:
        with client(ep.url) as c:
            with pytest.raises(LLMEndpointError, match="HTTP 401 .check the API key"):
                c.chat("policy", MSGS)
    assert ep.requests == 1


def test_chat_many_keeps_order_limits_concurrency_and_returns_reply_errors_in_place():
    def script(n, body):
        q = body["messages"][-1]["content"]
        return raw("nope") if q == "bad" else reply(f"a:{q}")

    with ScriptedEndpoint(script, latency_s=0.05) as ep:
        with client(ep.url, concurrency=3, max_tries=1) as c:
            reqs = [{"messages": [{"role": "user", "content": "bad" if i == 4 else str(i)}]} for i in range(12)]
            out = c.chat_many("policy", reqs)
    assert [o.content for i, o in enumerate(out) if i != 4] == [f"a:{i}" for i in range(12) if i != 4]
    assert isinstance(out[4], LLMReplyError) and out[4].reason == "malformed_reply"
    assert ep.max_in_flight == 3


def test_response_cache_rerun_sends_nothing(tmp_path):
    with ScriptedEndpoint(lambda n, b: reply(f"r{n}", prompt_tokens=1000, completion_tokens=500)) as ep:
        with client(ep.url, cache=tmp_path, price_in=2.0, price_out=10.0) as c:
            a = c.chat("policy", MSGS)
            b = c.chat("policy", MSGS)               # same request: from the cache
            s = c.chat("policy", MSGS, salt="k=1")  # salted: a different entry
            u = c.usage(accepted=2)["policy"]
        with client(ep.url, cache=tmp_path, price_in=2.0, price_out=10.0) as c2:  # a rerun
            again = c2.chat("policy", MSGS)
            u2 = c2.usage()["policy"]
    assert ep.requests == 2 and (a.content, b.content, s.content, again.content) == ("r0", "r0", "r1", "r0")
    assert b.cached and again.cached and not a.cached and a.key == again.key
    per = 1000 * 2.0 / 1e6 + 500 * 10.0 / 1e6
    assert (u.requests, u.cache_hits, u.tokens_in, u.tokens_out) == (2, 1, 3000, 1500)
    assert u.dollars == pytest.approx(3 * per) and u.dollars_spent == pytest.approx(2 * per)
    assert u.dollars_per_accepted == pytest.approx(3 * per / 2)
    assert (u2.requests, u2.cache_hits, u2.dollars_spent) == (0, 1, 0.0) and u2.dollars == pytest.approx(per)


def test_failures_are_not_cached(tmp_path):
    with ScriptedEndpoint([raw("x"), reply("good")]) as ep:
        with client(ep.url, cache=tmp_path, max_tries=1) as c:
            with pytest.raises(LLMReplyError):
                c.chat("policy", MSGS)
            assert c.chat("policy", MSGS).content == "good"
    assert ep.requests == 2


def test_api_key_from_the_named_variable_only():
    with ScriptedEndpoint([reply("ok")]) as ep:
        roles = {"judge": spec(ep.url, api_key_env="TS_TEST_KEY")}
        with pytest.raises(LLMConfigError, match="environment variable 'TS_TEST_KEY' is not set"):
            LLMClient(roles, env={})
        with LLMClient(roles, env={"TS_TEST_KEY": "sk-123"}) as c:
            c.chat("judge", MSGS)
    assert ep.headers[0]["authorization"] == "Bearer sk-123"


def test_unknown_role_and_unconfigured_role():
    with pytest.raises(LLMConfigError, match="unknown LLM role 'critic'"):
        LLMClient({"critic": spec("http://127.0.0.1:1/v1")})
    c = LLMClient({"judge": spec("http://127.0.0.1:1/v1")})
    assert c.has("judge") and not c.has("policy")
    with pytest.raises(LLMConfigError, match="'policy' is not configured .configured: judge"):
        c.chat("policy", MSGS)


def test_check_names_an_unknown_model_and_a_down_endpoint_in_seconds():
    with ScriptedEndpoint(models=("qwen", "llama")) as ep:
        with client(ep.url, model="gpt-x") as c:
            with pytest.raises(LLMConfigError, match="llm.policy.model: unknown model 'gpt-x' .* serves: qwen, llama"):
                c.check()
        with client(ep.url, model="qwen") as c:
            c.check()
    url = free_url()
    with client(url) as c:
        t = time.perf_counter()
        with pytest.raises(LLMEndpointError, match=f"{url}/models .role policy. is not usable: unreachable"):
            c.check()
        assert time.perf_counter() - t < 5


def test_retry_after_parsing_and_parse_completion_normalises():
    assert retry_after_s("2") == 2.0 and retry_after_s("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0
    assert retry_after_s("Wed, 21 Oct 2015 07:28:10 GMT", now=1445412480.0) == pytest.approx(10.0)
    r = parse_completion({"choices": [{"message": {"content": None, "tool_calls": [
        {"function": {"name": "f", "arguments": {"a": 1}}}]}}]}, "policy", "m", "abcdef0123456789", cached=False)
    assert r.tool_calls[0].arguments == '{"a": 1}' and r.tool_calls[0].id == "call_abcdef012345_0"
    assert (r.content, r.tokens_in, r.finish_reason) == ("", 0, None)
    with pytest.raises(ValueError, match="no choices"):
        parse_completion({"error": "x"}, "policy", "m", "k", cached=False)


def test_chat_many_stops_the_batch_when_the_endpoint_is_down():
    with ScriptedEndpoint(lambda n, b: status(401) if n == 0 else hang(0.3)) as ep:
        with client(ep.url, concurrency=4, timeout_s=0.2, max_tries=4) as c:
            with pytest.raises(LLMEndpointError, match="HTTP 401"):
                c.chat_many("policy", [{"messages": [{"role": "user", "content": str(i)}]} for i in range(4)])
            time.sleep(1.0)
            # the batch's other first tries may still reach the server after the 401 (they were sent at once),
            # but none is retried: max_tries = 4 would make up to 13 requests if the hung ones kept going
            assert ep.requests <= 4
            assert c.chat_many("policy", []) == []
