"""The shared LLM client: endpoint concurrency kept busy, a cached rerun, dollars per accepted trajectory.

Targets (the LLM synthesis issue):

- against a scripted endpoint with 200 ms latency at ``concurrency = 32``: >= 90% of 32 requests in
  flight (time-weighted mean at the endpoint, over its busy window), and throughput within 10% of
  32 / 0.2 s = 160 requests/s;
- a rerun of a finished recipe against the response cache: 0 LLM requests and a byte-identical dataset
  (``train.jsonl`` and ``rejected.jsonl``);
- dollars per accepted trajectory, reported per role (``manifest.json`` key ``llm``);
- (issue 35) one request's wall time at ``timeout_s = 2`` against a server that drips its reply one byte a
  second: <= 2 s a try, plus the backoff between tries; and the peak memory of a reply that is a 300 MB gzip
  bomb: bounded by the 4 MiB reply cap, not by the bomb.

The concurrency figure is measured twice: the client's batch call (``chat_many``, the endpoint in its own
process, so the two do not share one interpreter), and a whole synthesis
with the policy and judge roles on 200 ms endpoints (synthesis issues one task's requests at a time, so
that second figure shows what a synthesis keeps in flight today).

    .venv/bin/python benchmarks/llm_client.py [--requests 1280] [--tasks 16] [--quick] [--json]

``--quick``: 640 requests and 8 synthesis tasks. Prices are illustrative (policy $0.50 / $2.00, judge
$0.15 / $0.60 per 1M tokens in / out); the scripted replies report 600 + 40 (policy) and 900 + 8 (judge)
tokens.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from synth.dataset import build_dataset
from synth.llm.client import LLMClient
from synth.llm.scripted import ScriptedEndpoint, reply
from synth.models import Recipe
from toolscale.config import LLMRoleSpec

LATENCY_S = 0.2
CONCURRENCY = 32


def concurrency_batch(n: int) -> dict[str, float]:
    """``chat_many`` of ``n`` distinct requests at concurrency 32 against a 200 ms endpoint in its own process."""
    import subprocess
    import sys

    import httpx

    proc = subprocess.Popen([sys.executable, "-m", "synth.llm.scripted", "--latency", str(LATENCY_S)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()
        spec = LLMRoleSpec(base_url=url, model="scripted", concurrency=CONCURRENCY)
        with LLMClient({"policy": spec}) as llm:
            llm.chat_many("policy", [{"messages": [{"role": "user", "content": f"warm-up {i}"}]}
                                     for i in range(CONCURRENCY)])
            httpx.post(url.removesuffix("/v1") + "/_stats")
            t = time.perf_counter()
            out = llm.chat_many("policy", [{"messages": [{"role": "user", "content": f"q{i}"}]} for i in range(n)])
            wall = time.perf_counter() - t
        stats = httpx.get(url.removesuffix("/v1") + "/_stats").json()
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    assert all(r.content == "ok" for r in out)
    return {"mean_in_flight": stats["mean_in_flight"], "max_in_flight": stats["max_in_flight"],
            "throughput": n / wall, "wall_s": wall}


def dripping(tries: int, timeout_s: float = 2.0) -> float:
    """Wall seconds of one ``chat`` that fails against a server sending one byte a second (issue 35)."""
    from synth.errors import LLMEndpointError
    from synth.llm.scripted import drip

    with ScriptedEndpoint([reply("warm-up")], then=drip(reply("x" * 100), 1.0)) as ep:
        spec = LLMRoleSpec(base_url=ep.url, model="scripted", timeout_s=timeout_s, max_tries=tries)
        with LLMClient({"policy": spec}) as llm:
            llm.chat("policy", [{"role": "user", "content": "warm-up"}])  # imports and connections: not the figure
            t = time.perf_counter()
            try:
                llm.chat("policy", [{"role": "user", "content": "q"}])
            except LLMEndpointError:
                pass
            return time.perf_counter() - t


_BOMB = r"""
import json, resource, time, zlib
from synth.errors import LLMReplyError
from synth.llm.client import LLMClient
from synth.llm.scripted import ScriptedEndpoint, raw
from toolscale.config import LLMRoleSpec
z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
head = b'{"choices": [{"message": {"content": "'
bomb = z.compress(head) + b"".join(z.compress(b"a" * (1 << 20)) for _ in range(300)) + z.compress(b'"}}]}') + z.flush()
with ScriptedEndpoint([raw(bomb, headers=(("Content-Encoding", "gzip"),))]) as ep:
    with LLMClient({"policy": LLMRoleSpec(base_url=ep.url, model="scripted", max_tries=1)}) as llm:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        try:
            llm.chat("policy", [{"role": "user", "content": "q"}])
            verdict = "accepted"
        except LLMReplyError as err:
            verdict = err.reason
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"bomb_kib": len(bomb) // 1024, "peak_growth_mib": (after - before) / 1024,
                  "peak_mib": after / 1024, "verdict": verdict}))
"""


def gzip_bomb() -> dict:
    """A 300 MB gzip bomb as a reply, in a fresh process: its size, the growth of peak RSS, the verdict."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _BOMB], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _roles(policy_url: str, judge_url: str) -> dict[str, dict]:
    common = {"model": "scripted", "concurrency": CONCURRENCY}
    return {"policy": {"base_url": policy_url, "price_in": 0.5, "price_out": 2.0, **common},
            "judge": {"base_url": judge_url, "price_in": 0.15, "price_out": 0.6, **common}}


def synthesis_runs(tasks: int, root: Path) -> dict[str, object]:
    """A synthesis with LLM policy and judge on 200 ms endpoints, then its rerun against the cache."""
    policy = ScriptedEndpoint([], latency_s=LATENCY_S, then=reply("Done: I looked it up.", prompt_tokens=600,
                                                                  completion_tokens=40)).start()
    judge = ScriptedEndpoint([], latency_s=LATENCY_S, then=reply('{"score": 5}', prompt_tokens=900,
                                                                 completion_tokens=8)).start()
    try:
        recipe = Recipe(task_count=tasks, tool_diversity=40, seed=0, error_rate=0.0, judge_threshold=0.0,
                        llm=_roles(policy.url, judge.url))
        t = time.perf_counter()
        first = build_dataset(recipe, root / "a", llm_cache=root / "cache")
        first_s = time.perf_counter() - t
        in_flight = {"policy": policy.mean_in_flight, "judge": judge.mean_in_flight}
        sent = policy.requests + judge.requests
        t = time.perf_counter()
        again = build_dataset(recipe, root / "b", llm_cache=root / "cache")
        again_s = time.perf_counter() - t
        rerun_requests = policy.requests + judge.requests - sent
    finally:
        policy.stop()
        judge.stop()
    same = all((root / "a" / f).read_bytes() == (root / "b" / f).read_bytes() for f in ("train.jsonl", "rejected.jsonl"))
    return {"first": first, "again": again, "first_s": first_s, "again_s": again_s, "sent": sent,
            "rerun_requests": rerun_requests, "identical": same, "in_flight": in_flight}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=1280)
    ap.add_argument("--tasks", type=int, default=16)
    ap.add_argument("--quick", action="store_true", help="640 requests, 8 synthesis tasks")
    ap.add_argument("--json", action="store_true", help="also print the records as one JSON line (last)")
    args = ap.parse_args()
    if args.quick:
        args.requests, args.tasks = 640, 8

    drip1, drip3, bomb = dripping(1), dripping(3), gzip_bomb()
    c = concurrency_batch(args.requests)
    with tempfile.TemporaryDirectory() as d:
        s = synthesis_runs(args.tasks, Path(d))
    ideal = CONCURRENCY / LATENCY_S
    m = s["first"]
    records = [
        ("chat_many at concurrency 32: mean requests in flight", round(c["mean_in_flight"], 2), "requests",
         f">= {0.9 * CONCURRENCY:g} (90% of 32)"),
        ("chat_many at concurrency 32: most in flight", c["max_in_flight"], "requests", "32"),
        ("chat_many at concurrency 32: throughput", round(c["throughput"], 1), "requests/s",
         f">= {0.9 * ideal:g} (within 10% of {ideal:g})"),
        ("synthesis, policy endpoint: mean in flight", round(s["in_flight"]["policy"], 2), "requests",
         "(servers in parallel, each in order)"),
        ("synthesis, judge endpoint: mean in flight", round(s["in_flight"]["judge"], 2), "requests",
         "(servers in parallel, each in order)"),
        (f"synthesis of {args.tasks} tasks, first run", round(s["first_s"], 2), "s", ""),
        ("rerun against the cache: LLM requests", s["rerun_requests"], "requests", "0"),
        ("rerun against the cache: dataset byte-identical", int(s["identical"]), "bool", "1"),
        ("rerun against the cache: wall time", round(s["again_s"], 2), "s", ""),
    ]
    records += [
        ("one request, 1 byte/s server, timeout_s = 2, 1 try", round(drip1, 2), "s", "<= 2 (was unbounded)"),
        ("one request, 1 byte/s server, timeout_s = 2, 3 tries", round(drip3, 2), "s", "<= 6 + backoff"),
        (f"{bomb['bomb_kib']} KiB gzip bomb of 300 MB: peak RSS growth", round(bomb["peak_growth_mib"], 1), "MiB",
         "bounded by the 4 MiB cap (was 1.25 GB)"),
        ("300 MB gzip bomb: the process's peak RSS", round(bomb["peak_mib"], 1), "MiB", "(interpreter included)"),
        ("300 MB gzip bomb: verdict", bomb["verdict"], "", "malformed_reply"),
    ]
    for role, u in m.llm.items():
        records.append((f"dollars per accepted trajectory, {role}", u.dollars_per_accepted, "usd/trajectory",
                        "reported per role"))
    total = sum(u.dollars for u in m.llm.values())
    records.append(("dollars per accepted trajectory, all roles",
                    total / m.counts["accepted"] if m.counts["accepted"] else None, "usd/trajectory", ""))
    print(f"{'figure':<56} {'value':>12} {'unit':<16} target")
    for name, value, unit, target in records:
        shown = f"{value:.4g}" if isinstance(value, float) else str(value)
        print(f"{name:<56} {shown:>12} {unit:<16} {target}")
    print(f"({s['sent']} requests in the first run, {m.counts['accepted']} of {m.counts['tasks']} tasks kept; "
          f"rerun {s['again'].llm['judge'].cache_hits + s['again'].llm['policy'].cache_hits} cache hits)")
    if args.json:
        print(json.dumps([{"benchmark": "llm_client", "figure": n, "value": v, "unit": u, "target": t}
                          for n, v, u, t in records]))


if __name__ == "__main__":
    main()
