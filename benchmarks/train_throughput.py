"""Training throughput: TRL's SFTTrainer against a plain PyTorch loop, per CPU ladder size.

For each proxy rung of a preset's ladder (default ``micro``), on the same model init, the same
tokenized data and the very same batches, measures non-padding tokens per second of:

- ``plain``: a hand-written loop (forward with labels, backward, AdamW step, scheduler step);
- ``trl``: ``train.sft.make_trainer`` as ``train_sft`` runs it (plain causal-LM loss);
- ``trl-fused``: the same with TRL's default fused LM-head loss (for the record).

The overhead ratio ``plain / trl`` is measured in the same run (issue target: <= 1.3x).
The first ``warmup`` steps of every variant are excluded. All variants see the same batches in
the same order; each step's time is the minimum over the repeats (robust to other processes on
a shared machine), and the ratio is the median over steps of the per-step time ratio. Data: the hand-written rows of
``tests/train/fixtures/tiny`` repeated, or ``--data DIR`` (a synth dataset folder).

Usage::

    .venv/bin/python benchmarks/train_throughput.py [--quick] [--json] [--threads 2] [--data DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _ladder(preset: str):
    import tomllib

    from toolscale.config import parse_config

    text = (ROOT / "toolscale" / "presets" / f"{preset}.toml").read_text(encoding="utf-8")
    return [s for s in parse_config(tomllib.loads(text)).ladder if not s.pretrained]


def _timer_callback():
    from transformers import TrainerCallback

    class Timer(TrainerCallback):
        """Per-step wall time (optimizer step included) and non-padding tokens."""

        def __init__(self):
            self.times, self.tokens, self.t0, self.tok0 = [], [], 0.0, 0

        def on_step_begin(self, args, state, control, **kw):
            self.t0 = time.perf_counter()

        def on_step_end(self, args, state, control, **kw):
            self.times.append(time.perf_counter() - self.t0)
            self.tokens.append(state.num_input_tokens_seen - self.tok0)
            self.tok0 = state.num_input_tokens_seen

    return Timer


def _trl_steps(size, tokenizer, dataset, steps, plain_loss, out):
    """Per-step ``(times, tokens)`` of a TRL run, and the trainer."""
    from train.proxy import build_model
    from train.sft import make_trainer, quiet_progress, sft_config

    timer = _timer_callback()()
    with quiet_progress():
        trainer = make_trainer(build_model(size, seed=0), tokenizer, dataset,
                               sft_config(size, out, max_steps=steps, save_steps=0, logging_steps=steps),
                               plain_loss=plain_loss, callbacks=[timer])
        trainer.train()
    return timer.times, timer.tokens, trainer


def _plain_steps(size, batches):
    """Per-step times of a minimal loop over the same batches."""
    import torch

    from train.proxy import build_model

    model = build_model(size, seed=0).train()
    opt = torch.optim.AdamW(model.parameters(), lr=size.learning_rate, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
    times = []
    for batch in batches:
        t0 = time.perf_counter()
        loss = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                     labels=batch["labels"]).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        times.append(time.perf_counter() - t0)
    return times


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="fewer steps and repeats")
    p.add_argument("--json", action="store_true", help="print the records as JSON on the last line")
    p.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    p.add_argument("--preset", default="micro", help="preset whose ladder is measured (default micro)")
    p.add_argument("--data", help="synth dataset folder (default: the test fixture rows)")
    args = p.parse_args(argv)

    import tempfile

    import torch
    from datasets import Dataset

    from train.data import read_rows, render_corpus, tokenize_rows
    from train.tokenizer import train_tokenizer

    torch.set_num_threads(args.threads)
    rows = read_rows(args.data or ROOT / "tests" / "train" / "fixtures" / "tiny")
    rows = rows * max(1, 64 // len(rows))
    steps, warmup, repeats = (10, 2, 2) if args.quick else (30, 5, 3)
    records = []
    for size in _ladder(args.preset):
        tokenizer = train_tokenizer(render_corpus(rows), size.vocab_size)
        dataset = Dataset.from_list(tokenize_rows(rows, tokenizer, size.max_seq_len)["examples"])
        times: dict[str, list[list[float]]] = {"plain": [], "trl": [], "trl-fused": []}
        with tempfile.TemporaryDirectory(prefix="toolscale-bench-") as out:
            for _ in range(repeats):
                t, tokens, trainer = _trl_steps(size, tokenizer, dataset, steps, True, out)
                times["trl"].append(t)
                batches, loader = [], trainer.get_train_dataloader()
                while len(batches) < steps:
                    batches.extend(loader)
                times["plain"].append(_plain_steps(size, batches[:steps]))
                times["trl-fused"].append(_trl_steps(size, tokenizer, dataset, steps, False, out)[0])
        best = {k: [min(rep[i] for rep in v) for i in range(warmup, steps)] for k, v in times.items()}
        n_tokens = sum(tokens[warmup:steps])
        med = {k: n_tokens / sum(v) for k, v in best.items()}
        overhead = statistics.median(t / p for t, p in zip(best["trl"], best["plain"], strict=True))
        fused = statistics.median(f / t for f, t in zip(best["trl-fused"], best["trl"], strict=True))
        label = f"{size.name} ({size.approx_params / 1e6:.2f}M params, {args.threads} threads)"
        for variant in ("plain", "trl", "trl-fused"):
            records.append({"benchmark": "train_throughput", "figure": f"{label}: {variant} tokens/s",
                            "value": round(med[variant], 1), "unit": "tokens/s", "target": ""})
        records.append({"benchmark": "train_throughput", "figure": f"{size.name}: trl / plain step time",
                        "value": round(overhead, 3), "unit": "x", "target": "<= 1.3"})
        records.append({"benchmark": "train_throughput", "figure": f"{size.name}: trl-fused slowdown vs trl",
                        "value": round(fused, 3), "unit": "x", "target": ""})
    records.append({"benchmark": "train_throughput", "figure": "1-min load average at the end (contention)",
                    "value": round(os.getloadavg()[0], 2), "unit": "procs", "target": f"< {os.cpu_count()}"})
    for r in records:
        print(f"{r['figure']:<60} {r['value']:>10} {r['unit']}")
    if args.json:
        print(json.dumps(records))
    return 0


if __name__ == "__main__":
    sys.exit(main())
