"""``toolscale eval``: score a trained model (or the ``gold`` reference answers) on a benchmark."""

from __future__ import annotations

import argparse
import sys

from toolscale.cli._common import Formatter, seed_int, emit_json, positive_int, print_table

__all__ = ["register"]

EPILOG = """\
examples:
  toolscale eval --model gold --benchmark bfcl --json          # the scorer's own check: 1.0
  toolscale eval --model runs/r1/model --benchmark heldout-calls --limit 50
  toolscale eval --model Qwen/Qwen3-0.6B --benchmark bfcl --backend openai --endpoint http://localhost:8000/v1
  toolscale eval --list"""


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``eval`` to the CLI."""
    p = sub.add_parser("eval", help="score a model folder (or 'gold') on a benchmark: score, stderr, items",
                       formatter_class=Formatter, epilog=EPILOG)
    p.add_argument("--model", metavar="MODEL_DIR",
                   help="model folder (save_pretrained), 'gold' for the reference answers, or a served model name "
                        "with --backend openai")
    p.add_argument("--benchmark", metavar="NAME", help="benchmark name (see --list)")
    p.add_argument("--limit", type=positive_int, metavar="N", help="score N items (stratified, seeded); default all")
    p.add_argument("--seed", type=seed_int, default=0, help="seed of the item selection (default 0)")
    p.add_argument("--backend", choices=["transformers", "openai", "vllm"], default="transformers",
                   help="generation backend (default transformers, on the CPU)")
    p.add_argument("--endpoint", metavar="URL", help="OpenAI-compatible base URL for --backend openai")
    p.add_argument("--batch-size", type=positive_int, default=8, help="requests per forward pass (default 8)")
    p.add_argument("--max-new-tokens", type=positive_int, metavar="N",
                   help="cap on generated tokens per completion (default 256; 128 per turn in episodes)")
    p.add_argument("--threads", type=positive_int, default=1,
                   help="torch CPU threads (default 1: more only helps on an otherwise idle machine)")
    p.add_argument("--device", default="cpu", help="torch device of the transformers backend (default cpu)")
    p.add_argument("--list", action="store_true", help="list the registered benchmarks and exit")
    p.add_argument("--json", action="store_true",
                   help="print benchmark, version, score, stderr, n_items and all metrics as JSON")
    p.set_defaults(func=_eval)


def _eval(args: argparse.Namespace) -> int:
    from eval.benchmarks import get_benchmark, list_benchmarks
    from toolscale.errors import UsageError

    if args.list:
        infos = list_benchmarks()
        if args.json:
            emit_json([i.model_dump(exclude={"loader"}) for i in infos])
        else:
            print_table([{"name": i.name, "version": i.version, "higher_is_better": i.higher_is_better,
                          "description": i.description} for i in infos], title="benchmarks")
        return 0
    if not args.model or not args.benchmark:
        raise UsageError("eval needs --model MODEL_DIR (or 'gold') and --benchmark NAME; see --list")
    info = get_benchmark(args.benchmark)
    from eval.runner import evaluate

    metrics = evaluate(args.model, info.name, limit=args.limit, seed=args.seed, backend=args.backend,
                       endpoint=args.endpoint, batch_size=args.batch_size, max_new_tokens=args.max_new_tokens,
                       threads=args.threads, device=args.device)
    head = next(m for m in metrics if m.metric == "score")
    if args.json:
        emit_json({"benchmark": info.name, "version": info.version, "model": args.model, "score": head.score,
                   "stderr": head.stderr, "n_items": head.n_items, "higher_is_better": head.higher_is_better,
                   "metrics": {m.metric: {"score": m.score, "stderr": m.stderr, "n_items": m.n_items,
                                          "higher_is_better": m.higher_is_better} for m in metrics}})
        return 0
    print(f"{info.name} (version {info.version}): score {head.score:.4f} ± {head.stderr or 0:.4f} "
          f"on {head.n_items} items ({args.model})", file=sys.stdout)
    print_table([{"metric": m.metric, "value": m.score, "stderr": m.stderr, "n_items": m.n_items,
                  "higher_is_better": m.higher_is_better} for m in metrics])
    return 0
