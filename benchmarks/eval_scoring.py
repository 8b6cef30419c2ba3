"""Scoring cost of one run's eval (issue 36): encoding the items, cached or not, and forward passes by batch.

A run of the demo scores every item of ``indist-calls`` and ``heldout-servers`` (504 reference answers)
for ``bpb``. Per item that is (1) rendering the conversation through the chat template and tokenising it,
and (2) a forward pass. On the demo ladder's rungs (randomly initialised: the cost of a forward pass does
not depend on the weights) with one tokenizer, this measures:

* ``encode``: (1) for all items with no cache, and read back from the experiment's token cache
  (:mod:`eval.token_cache`, loaded from disk by a fresh backend);
* ``forward bN``: (2) for all items, sorted by length, ``N`` rows a pass, right-padded without an
  attention mask (what :meth:`eval.backends.TransformersBackend.score` does), and, for comparison,
  ``left bN``: left-padded with an attention mask and position ids (what it did before: the masked
  attention kernel);
* ``max |dlogprob|``: the largest difference of an item's log-likelihood from its one-row value (nats).

Each figure is CPU seconds of this process, the least over ``--repeats``: with torch on one thread (the demo
trains and scores on 1) that is the work done, robust to other processes sharing the cores; on an idle
machine wall time is about the same.

Usage::

    .venv/bin/python benchmarks/eval_scoring.py [--quick] [--json] [--tokenizer DIR] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

BENCHMARKS = ("indist-calls", "heldout-servers")
BATCHES = (1, 2, 4, 8, 16)


def _best(fn, repeats: int) -> tuple[float, Any]:
    """(least CPU seconds of this process over ``repeats`` calls of ``fn``, its last result). With torch on
    one thread a call's CPU time is its work, whatever else shares the cores; wall time is not."""
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.process_time()
        out = fn()
        best = min(best, time.process_time() - t0)
    return best, out


def _left_padded(backend, encoded: list, batch_size: int) -> list[float]:
    """The scorer before issue 36: left padding, attention mask and position ids (masked kernel)."""
    import torch

    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i][0]))
    out = [0.0] * len(encoded)
    pad = backend.tokenizer.pad_token_id
    for start in range(0, len(order), batch_size):
        batch = order[start:start + batch_size]
        width = max(len(encoded[i][0]) for i in batch)
        ids = torch.full((len(batch), width), pad, dtype=torch.long)
        attn = torch.zeros((len(batch), width), dtype=torch.long)
        tmask = torch.zeros((len(batch), width), dtype=torch.float32)
        for row, i in enumerate(batch):
            x, m, _ = encoded[i]
            ids[row, width - len(x):] = torch.tensor(x)
            attn[row, width - len(x):] = 1
            tmask[row, width - len(m):] = torch.tensor(m, dtype=torch.float32)
        positions = (attn.cumsum(-1) - 1).clamp(min=0)
        with torch.no_grad():
            logits = backend.model(input_ids=ids, attention_mask=attn, position_ids=positions).logits
        logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
        tok = logp.gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1) * tmask[:, 1:]
        for row, i in enumerate(batch):
            out[i] = float(tok[row].sum())
    return out


def _items() -> tuple[list, float]:
    from eval.benchmarks import load_items
    from eval.prompts import reference_request

    t0 = time.process_time()
    items = [it for name in BENCHMARKS for it in load_items(name)]
    return [reference_request(it) for it in items], time.process_time() - t0


def _tokenizer(path: str | None, requests: list):
    from train.chat import render
    from train.tokenizer import load_tokenizer, train_tokenizer

    if path:
        return load_tokenizer(path)
    return train_tokenizer([render(r.messages, r.tools) for r in requests], 512)


def _rung(size, tok, requests: list, folder: Path, repeats: int, batches) -> list[dict[str, Any]]:
    from eval.backends import TransformersBackend
    from train.proxy import build_model

    model = build_model(size, vocab_size=len(tok), seed=0)
    records = []
    plain = TransformersBackend("unused", model_obj=model, tokenizer_obj=tok)
    t_enc, encoded = _best(lambda: [plain._scored(r) for r in requests], repeats)
    cache_dir = folder / f"cache-{size.name}"
    filler = TransformersBackend("unused", model_obj=model, tokenizer_obj=tok, cache_dir=cache_dir)
    for r in requests:  # what the first run of an experiment leaves in its cache
        filler._scored(r)
    filler.save_cache()
    def cached() -> list:  # what a later run pays: reading the experiment's cache file, then the lookups
        backend = TransformersBackend("unused", model_obj=model, tokenizer_obj=tok, cache_dir=cache_dir)
        return [backend._scored(r) for r in requests]

    t_cached, _ = _best(cached, repeats)
    records += [{"rung": size.name, "figure": "encode, no cache", "seconds": round(t_enc, 3)},
                {"rung": size.name, "figure": "encode, from the token cache", "seconds": round(t_cached, 3)}]
    reference = None
    for b in batches:
        backend = TransformersBackend("unused", model_obj=model, tokenizer_obj=tok, score_batch_size=b,
                                      cache_dir=cache_dir)
        t, scores = _best(lambda: backend.score(requests), repeats)
        lps = [s.logprob for s in scores]
        reference = reference or lps
        diff = max(abs(a - c) for a, c in zip(lps, reference))
        records.append({"rung": size.name, "figure": f"forward b{b}", "seconds": round(t, 3),
                        "max_abs_dlogprob": round(diff, 5)})
    for b in (4, 8):
        t, lps = _best(lambda: _left_padded(plain, encoded, b), repeats)
        diff = max(abs(a - c) for a, c in zip(lps, reference))
        records.append({"rung": size.name, "figure": f"left b{b} (masked, before)", "seconds": round(t, 3),
                        "max_abs_dlogprob": round(diff, 5)})
    return records


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="the smallest and the largest rung, batches 1, 4 and 16")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--tokenizer", help="a saved tokenizer folder (default: one trained on the items)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (CPU time is the work only at 1)")
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args(argv)
    import tomllib

    import torch

    from toolscale.config import parse_config

    torch.set_num_threads(args.threads)
    requests, load_s = _items()
    tok = _tokenizer(args.tokenizer, requests)
    ladder = parse_config(tomllib.loads((ROOT / "toolscale/presets/demo.toml").read_text())).ladder
    rungs = [ladder[0], ladder[-1]] if args.quick else list(ladder)
    repeats = args.repeats
    records: list[dict[str, Any]] = [{"rung": "-", "figure": "load items", "seconds": round(load_s, 3)}]
    with tempfile.TemporaryDirectory() as tmp:
        for size in rungs:
            records += _rung(size, tok, requests, Path(tmp), repeats, (1, 4, 16) if args.quick else BATCHES)
            print(f"{size.name} done", file=sys.stderr)
    load = os.getloadavg()
    if args.json:
        print(json.dumps({"items": len(requests), "threads": args.threads, "load_average": load,
                          "records": records}, indent=1))
        return 0
    print(f"scoring {len(requests)} items of {', '.join(BENCHMARKS)} (min of {repeats}; {args.threads} thread(s); "
          f"load average {load[0]:.1f})")
    print(f"{'rung':<6} {'figure':<34} {'cpu s':>8} {'max |dlogprob|':>15}")
    for r in records:
        print(f"{r['rung']:<6} {r['figure']:<34} {r['seconds']:>8.3f} {r.get('max_abs_dlogprob', ''):>15}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
