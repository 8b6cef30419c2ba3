"""Eval speed: generation and scoring tokens per second on the CPU ladder, and the scorer's item rate.

For each rung of the micro preset's ladder (randomly initialised, tokenizer trained on the held-out
items' reference conversations), greedy generation of heldout-calls prompts with the transformers
backend at batch sizes 1 and 8 (``max_new_tokens`` 64; random models rarely stop early), and scoring
of the reference answers (one forward pass per batch). Also the gold pseudo-model's pass over all
of BFCL (parse + AST match only), items per second.

Usage: ``.venv/bin/python benchmarks/eval_generation.py [--quick] [--json] [--threads N]``.
The last stdout line with ``--json`` is a JSON list of figure records (see ``_table.py``).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import median_time  # noqa: E402 (this folder is on sys.path when run as a script)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smallest rung only, fewer prompts")
    ap.add_argument("--json", action="store_true", help="print figure records as JSON (last line)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    args = ap.parse_args(argv)

    import torch

    from eval.backends import TransformersBackend
    from eval.heldout import build_heldout_calls
    from eval.prompts import item_request, reference_request
    from eval.runner import evaluate
    from toolscale.config import load_config
    from train.chat import render
    from train.proxy import build_model
    from train.tokenizer import train_tokenizer

    torch.set_num_threads(args.threads)
    cfg = load_config(Path(__file__).resolve().parents[1] / "toolscale" / "presets" / "micro.toml")
    ladder = cfg.ladder[:1] if args.quick else cfg.ladder
    items = build_heldout_calls()
    refs = [reference_request(it) for it in items]
    tok = train_tokenizer([render(r.messages, r.tools) for r in refs], vocab_size=ladder[0].vocab_size)
    n_prompts = 8 if args.quick else 16
    prompts = [item_request(it) for it in items[:n_prompts]]
    records = []
    for size in ladder:
        model = build_model(size, vocab_size=len(tok), seed=0)
        with tempfile.TemporaryDirectory() as d:
            model.save_pretrained(d)
            tok.save_pretrained(d)
            for bs in (1, 8):
                backend = TransformersBackend(d, batch_size=bs)
                backend.generate(prompts[:bs], max_new_tokens=4)  # warm-up
                backend.generated_tokens = 0
                took = median_time(lambda: backend.generate(prompts, max_new_tokens=64), 1 if args.quick else 3)
                per_run = backend.generated_tokens / (1 if args.quick else 3)
                records.append({"benchmark": "eval_generation", "figure": f"{size.name} generate tok/s (batch {bs})",
                                "value": per_run / took, "unit": "tokens/s", "target": "report"})
            backend = TransformersBackend(d, batch_size=8)
            n_tok = sum(s.n_tokens for s in backend.score(refs[:n_prompts]))
            took = median_time(lambda: backend.score(refs[:n_prompts]), 1 if args.quick else 3)
            records.append({"benchmark": "eval_generation", "figure": f"{size.name} score: reference tok/s (batch 8)",
                            "value": n_tok / took, "unit": "tokens/s", "target": "report"})
    try:
        t0 = time.perf_counter()
        n = evaluate("gold", "bfcl")[0].n_items
        records.append({"benchmark": "eval_generation", "figure": "gold on all of BFCL (parse + AST match)",
                        "value": n / (time.perf_counter() - t0), "unit": "items/s", "target": "report"})
    except Exception as err:  # noqa: BLE001 - the BFCL wheel may be missing; the other figures still count
        print(f"bfcl skipped: {err}", file=sys.stderr)
    for r in records:
        print(f"{r['figure']:<44} {r['value']:>10.1f} {r['unit']}")
    if args.json:
        print(json.dumps(records))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
