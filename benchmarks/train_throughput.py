"""Training throughput: TRL's SFTTrainer against a plain PyTorch loop, per CPU ladder size.

For each proxy rung of a preset's ladder (default ``micro``), on the same model init, the same
tokenized data and the very same batches, measures non-padding tokens per second of:

- ``plain``: a hand-written loop (forward with labels, backward, AdamW step, scheduler step);
- ``trl``: ``train.sft.make_trainer`` as ``train_sft`` runs it (plain causal-LM loss);
- ``trl-fused``: the same with TRL's default fused LM-head loss (for the record).

The overhead ratio ``plain / trl`` is measured in the same run (issue target: <= 1.3x).
The first ``warmup`` steps of every variant are excluded. Data: the hand-written rows of
``tests/train/fixtures/tiny`` repeated, or ``--data DIR`` (a synth dataset folder).

Usage::

    .venv/bin/python benchmarks/train_throughput.py [--quick] [--json] [--threads 2] [--data DIR]
"""

from __future__ import annotations

import argparse
import json
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
        def __init__(self, warmup: int):
            self.warmup, self.t0, self.tok0, self.t1, self.tok1 = warmup, None, 0, None, 0

        def on_step_end(self, args, state, control, **kw):
            if state.global_step == self.warmup:
                self.t0, self.tok0 = time.perf_counter(), state.num_input_tokens_seen
            self.t1, self.tok1 = time.perf_counter(), state.num_input_tokens_seen

        def rate(self) -> float:
            return (self.tok1 - self.tok0) / (self.t1 - self.t0)

    return Timer


def _trl_rate(size, tokenizer, dataset, steps, warmup, plain_loss, out):
    from train.models import build_model
    from train.sft import make_trainer, quiet_progress, sft_config

    timer = _timer_callback()(warmup)
    with quiet_progress():
        trainer = make_trainer(build_model(size, seed=0), tokenizer, dataset,
                               sft_config(size, out, max_steps=steps, save_steps=0, logging_steps=steps),
                               plain_loss=plain_loss, callbacks=[timer])
        trainer.train()
    return timer.rate(), trainer


def _plain_rate(size, trainer, steps, warmup):
    """The same batches as the TRL run, through a minimal loop."""
    import torch

    from train.models import build_model

    model = build_model(size, seed=0).train()
    opt = torch.optim.AdamW(model.parameters(), lr=size.learning_rate, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
    batches, loader = [], trainer.get_train_dataloader()
    while len(batches) < steps:
        batches.extend(loader)
    t0 = tok0 = None
    tokens = 0
    for step, batch in enumerate(batches[:steps], start=1):
        loss = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                     labels=batch["labels"]).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        tokens += int(batch["attention_mask"].sum())
        if step == warmup:
            t0, tok0 = time.perf_counter(), tokens
    return (tokens - tok0) / (time.perf_counter() - t0)


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
    steps, warmup, repeats = (12, 2, 1) if args.quick else (30, 5, 2)
    records = []
    for size in _ladder(args.preset):
        tokenizer = train_tokenizer(render_corpus(rows), size.vocab_size)
        dataset = Dataset.from_list(tokenize_rows(rows, tokenizer, size.max_seq_len)["examples"])
        rates: dict[str, list[float]] = {"plain": [], "trl": [], "trl-fused": []}
        with tempfile.TemporaryDirectory(prefix="toolscale-bench-") as out:
            for _ in range(repeats):
                rate, trainer = _trl_rate(size, tokenizer, dataset, steps, warmup, True, out)
                rates["trl"].append(rate)
                rates["plain"].append(_plain_rate(size, trainer, steps, warmup))
                rates["trl-fused"].append(_trl_rate(size, tokenizer, dataset, steps, warmup, False, out)[0])
        med = {k: statistics.median(v) for k, v in rates.items()}
        label = f"{size.name} ({size.approx_params / 1e6:.2f}M params, {args.threads} threads)"
        for variant in ("plain", "trl", "trl-fused"):
            records.append({"benchmark": "train_throughput", "figure": f"{label}: {variant} tokens/s",
                            "value": round(med[variant], 1), "unit": "tokens/s", "target": ""})
        records.append({"benchmark": "train_throughput", "figure": f"{size.name}: plain / trl overhead",
                        "value": round(med["plain"] / med["trl"], 3), "unit": "x", "target": "<= 1.3"})
        records.append({"benchmark": "train_throughput", "figure": f"{size.name}: trl-fused slowdown vs trl",
                        "value": round(med["trl"] / med["trl-fused"], 3), "unit": "x", "target": ""})
    for r in records:
        print(f"{r['figure']:<60} {r['value']:>10} {r['unit']}")
    if args.json:
        print(json.dumps(records))
    return 0


if __name__ == "__main__":
    sys.exit(main())
