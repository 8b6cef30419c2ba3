"""The byte level of one chat-completions reply: a size cap that holds for compressed replies too.

The client streams every reply and decompresses it here, ``max_length`` at a time, so a 300 MB reply or a
300 KB gzip bomb that inflates to 300 MB costs at most :func:`reply_cap` bytes before it is refused.
"""

from __future__ import annotations

import zlib
from typing import Any

from toolscale.config import LLMRoleSpec

__all__ = ["MIN_REPLY_CAP", "BYTES_PER_TOKEN", "ReplyTooLarge", "TransportFailure", "read_capped", "reply_cap"]

MIN_REPLY_CAP = 4 << 20
"""Decoded bytes a reply may always have (4 MiB)."""
BYTES_PER_TOKEN = 64
"""Decoded reply bytes allowed per ``max_tokens`` past :data:`MIN_REPLY_CAP` (JSON escapes included)."""


def reply_cap(spec: LLMRoleSpec) -> int:
    """Most decoded (decompressed) bytes one reply may have: ``max(4 MiB, 64 * max_tokens)``."""
    return max(MIN_REPLY_CAP, BYTES_PER_TOKEN * spec.max_tokens)


class ReplyTooLarge(ValueError):
    """A reply past :func:`reply_cap` (counted as a malformed reply)."""


class TransportFailure(Exception):
    """The connection failed (refused, reset, closed mid-reply): retried like a timeout."""


async def read_capped(resp: Any, cap: int) -> bytes:
    """The body of a streamed httpx response, decompressed here (gzip, deflate or none) and cut at ``cap`` bytes.

    Raises
    ------
    ReplyTooLarge
        When the declared length, the raw bytes or the decoded bytes pass ``cap``.
    ValueError
        For a content encoding other than gzip or deflate, or a body that does not decompress.
    """
    declared = resp.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > cap:
        raise ReplyTooLarge(f"the reply declares {int(declared):,} bytes, more than {cap:,}")
    enc = resp.headers.get("content-encoding", "identity").strip().lower()
    if enc in ("", "identity"):
        dec = None
    elif enc in ("gzip", "x-gzip"):
        dec = zlib.decompressobj(16 + zlib.MAX_WBITS)
    elif enc == "deflate":
        dec = zlib.decompressobj()
    else:
        raise ValueError(f"the reply's content encoding {enc!r} is not gzip or deflate")
    out = bytearray()
    raw_total = 0
    try:
        async for raw in resp.aiter_raw():
            raw_total += len(raw)
            if raw_total > cap:
                raise ReplyTooLarge(f"the reply passed {cap:,} bytes")
            data = raw
            while data:
                if dec is None:
                    out += data
                    break
                out += dec.decompress(data, cap + 1 - len(out))
                if len(out) > cap:
                    raise ReplyTooLarge(f"the reply decompresses past {cap:,} bytes")
                data = dec.unconsumed_tail
            if len(out) > cap:
                raise ReplyTooLarge(f"the reply passed {cap:,} bytes")
        if dec is not None:
            out += dec.flush(cap + 1 - len(out))
            if len(out) > cap:
                raise ReplyTooLarge(f"the reply decompresses past {cap:,} bytes")
    except zlib.error as err:
        raise ValueError(f"the reply does not decompress ({err})") from None
    return bytes(out)
