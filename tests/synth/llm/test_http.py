"""synth/llm/http.py and the client's total limits: a deadline per attempt, a cap on decoded bytes, deep JSON.

Fault cases against the scripted endpoint (a real HTTP server over a local socket).
"""

from __future__ import annotations

import gzip
import json
import zlib

import pytest

from synth.errors import LLMEndpointError, LLMReplyError
from synth.llm.client import LLMClient
from synth.llm.http import MIN_REPLY_CAP, reply_cap
from synth.llm.scripted import ScriptedEndpoint, drip, raw, reply
from toolscale.config import LLMRoleSpec

MSGS = [{"role": "user", "content": "hi"}]


def client(url: str, **kw) -> LLMClient:
    return LLMClient({"policy": LLMRoleSpec(base_url=url, model="scripted", **kw)}, backoff_s=0.01,
                     max_backoff_s=0.05)


def test_a_dripping_server_is_cut_at_the_total_deadline():
    # It used to hold one request 20 s at timeout_s = 2: the limit applied to each read, not to the reply.
    body = reply("x" * 200)
    with ScriptedEndpoint([drip(body, 0.05)] * 2) as ep:
        with client(ep.url, timeout_s=1.0, max_tries=2) as c:
            with pytest.raises(LLMEndpointError, match="no whole reply within 1 s after 2 tries"):
                c.chat("policy", MSGS)
            assert c.usage()["policy"].retries == 1 and c.usage()["policy"].failures == 1
        size = len(json.dumps(body.body))
        assert ep.requests == 2 and ep.dripped < 2 * size  # neither reply was read to its end


def test_the_cap_follows_max_tokens_with_a_4_mib_floor():
    assert reply_cap(LLMRoleSpec(base_url="http://x/v1", model="m")) == MIN_REPLY_CAP == 4 << 20
    assert reply_cap(LLMRoleSpec(base_url="http://x/v1", model="m", max_tokens=1 << 17)) == 64 << 17


def test_a_huge_reply_is_refused_as_malformed():
    big = json.dumps(reply("x" * (5 << 20)).body).encode()
    with ScriptedEndpoint([raw(big)] * 2) as ep:
        with client(ep.url, max_tries=2) as c:
            with pytest.raises(LLMReplyError, match="declares .* bytes, more than 4,194,304") as info:
                c.chat("policy", MSGS)
    assert info.value.reason == "malformed_reply" and ep.requests == 2


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_a_compression_bomb_is_cut_while_it_inflates(encoding):
    # 16 MiB of one JSON string, compressed to about 16 KiB: it used to be inflated whole (1.25 GB RSS).
    inner = b'{"choices": [{"message": {"content": "' + b"a" * (16 << 20) + b'"}}]}'
    packed = gzip.compress(inner, compresslevel=9) if encoding == "gzip" else zlib.compress(inner, 9)
    assert len(packed) < 1 << 20
    with ScriptedEndpoint([raw(packed, headers=(("Content-Encoding", encoding),))]) as ep:
        with client(ep.url, max_tries=1) as c:
            with pytest.raises(LLMReplyError, match="decompresses past 4,194,304 bytes") as info:
                c.chat("policy", MSGS)
    assert info.value.reason == "malformed_reply"


def test_a_compressed_reply_within_the_cap_is_read():
    body = json.dumps(reply("fine").body).encode()
    with ScriptedEndpoint([raw(gzip.compress(body), headers=(("Content-Encoding", "gzip"),))]) as ep:
        with client(ep.url) as c:
            assert c.chat("policy", MSGS).content == "fine"


def test_json_nested_too_deep_is_a_malformed_reply_retried_and_counted():
    # It used to raise RecursionError out of LLMClient.chat (synth: a 70-line traceback, no manifest).
    deep = b'{"choices": [{"message": {"content": "x", "extra": ' + b"[" * 200_000 + b"]" * 200_000 + b"}}]}"
    with ScriptedEndpoint([raw(deep), raw(deep)]) as ep:
        with client(ep.url, max_tries=2) as c:
            with pytest.raises(LLMReplyError, match="nested too deeply after 2 tries") as info:
                c.chat("policy", MSGS)
            assert c.usage()["policy"].retries == 1 and c.usage()["policy"].failures == 1
    assert info.value.reason == "malformed_reply" and ep.requests == 2


def test_an_unknown_content_encoding_is_malformed():
    with ScriptedEndpoint([raw(b"xx", headers=(("Content-Encoding", "br"),))]) as ep:
        with client(ep.url, max_tries=1) as c:
            with pytest.raises(LLMReplyError, match="content encoding 'br'"):
                c.chat("policy", MSGS)
