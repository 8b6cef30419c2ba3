"""Issue 38's CPU-measurable targets, measured (no GPU, no downloads):

1. loss tokens per row of the stock Qwen3 chat template (TRL's stored copy on a local tokenizer), and of its
   training variant, which train_sft saves with the model;
2. a 2-process torch-distributed SFT run (gloo) against 1 process, same global batch: the largest relative
   difference between the two loss curves, and which ranks wrote run files;
3. bits per byte of the same tiny model scored through the vLLM protocol (``/v1/completions`` with token-id
   prompts and ``prompt_logprobs``, served by ``toolscale serve-model``) against the in-process transformers
   scorer;
4. the storage estimate of ``docs/cluster.toml``.

The preemption target (a dev-cluster job requeued mid-training) is measured by
``tests/slurm/test_cluster_preemption.py`` on the dev cluster; its figures are copied into
``docs/results/cluster.md`` from that test's run.

Usage::

    .venv/bin/python benchmarks/cluster_targets.py > benchmarks/latest_cluster.txt
"""

from __future__ import annotations

import copy
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
TINY = ROOT / "tests" / "train" / "fixtures" / "tiny"


def templates() -> dict:
    import trl.chat_template_utils as ctu

    from train.chat import render
    from train.data import read_rows, tokenize_rows
    from train.templates import prepare_tokenizer
    from train.tokenizer import train_tokenizer

    rows = read_rows(TINY)
    tok = train_tokenizer([render(r["messages"], r["tools"]) for r in rows], 400)
    tok.chat_template = (Path(ctu.__file__).parent / "chat_templates" / "qwen3.jinja").read_text()
    stock = tokenize_rows(rows, copy.deepcopy(tok), 4096)
    name = prepare_tokenizer(tok)
    trained = tokenize_rows(rows, tok, 4096)
    per_row = [sum(e["assistant_masks"]) for e in trained["examples"]]
    return {"rows": len(rows), "stock_loss_tokens": stock["loss_tokens"], "stock_rows_kept": len(stock["examples"]),
            "training_template": name, "training_loss_tokens_per_row_min": min(per_row),
            "training_loss_tokens_per_row_mean": sum(per_row) / len(per_row)}


CONFIG = """\
[experiment]
name = "dist"
[[axes]]
name = "task_count"
kind = "diversity"
unit = "tasks"
min = 1
max = 10
[[ladder]]
name = "t"
hidden_size = 32
num_layers = 1
num_heads = 2
vocab_size = 400
max_seq_len = 512
max_steps = 8
batch_size = 4
micro_batch_size = 1
learning_rate = 3e-3
[train]
threads = 1
padding_free = true
activation_checkpointing = true
chunked_loss = true
"""


def distributed(tmp: Path) -> dict:
    (tmp / "d.toml").write_text(CONFIG)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    cli = ["-m", "toolscale.cli", "train", "--config", str(tmp / "d.toml"), "--data", str(TINY), "--model-size", "t",
           "--json"]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.perf_counter()
    subprocess.run([sys.executable, *cli, "--out", str(tmp / "one")], check=True, env=env, capture_output=True)
    t1 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_addr",
                    "127.0.0.1", "--master_port", str(port), *cli, "--out", str(tmp / "two")], check=True, env=env,
                   capture_output=True)
    t2 = time.perf_counter()
    one, two = (json.loads((tmp / d / "train_stats.json").read_text()) for d in ("one", "two"))
    a, b = [p["loss"] for p in one["loss_curve"]], [p["loss"] for p in two["loss_curve"]]
    return {"steps": len(a), "loss_1proc": a, "loss_2proc": b,
            "max_rel_diff": max(abs(x - y) / abs(x) for x, y in zip(a, b, strict=True)),
            "tokens_equal": one["train"]["train_tokens"] == two["train"]["train_tokens"],
            "layout_2proc": two["parallel"], "wall_s_1proc": round(t1 - t0, 1), "wall_s_2proc": round(t2 - t1, 1)}


def bpb(tmp: Path) -> dict:
    import re

    from eval.backends import TransformersBackend
    from eval.benchmarks import get_benchmark, load_items
    from eval.prompts import reference_request
    from eval.runner import evaluate, select_items
    from eval.vllm_server import VLLMServerBackend
    from toolscale.config import ModelSize
    from train.sft import train_sft

    sys.path.insert(0, str(ROOT / "tests"))
    from conftest import _serve_rows  # the tiny served model's conversations

    data = tmp / "data"
    data.mkdir()
    (data / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _serve_rows() * 4))
    size = ModelSize(name="tiny-served", hidden_size=64, num_layers=1, num_heads=2, vocab_size=512, max_seq_len=4096,
                     max_steps=120, batch_size=4, learning_rate=1e-2)
    train_sft(data, size, tmp / "model", threads=1, save_steps=0, resume=False)
    items = select_items(load_items("heldout-calls"), 24, seed=0)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "toolscale.cli", "serve-model", str(tmp / "model"), "--port", "0",
                             "--model-name", "m"], stderr=subprocess.PIPE, text=True, env=env)
    url = re.search(r"at (http://127\.0\.0\.1:\d+/v1)", proc.stderr.readline()).group(1)
    try:
        local = TransformersBackend(str(tmp / "model"), threads=1)
        remote = VLLMServerBackend("m", endpoint=url, tokenizer_dir=str(tmp / "model"), concurrency=4)
        a = {m.metric: m.score for m in evaluate(str(tmp / "model"), "heldout-calls", items=items, backend=local)
             if m.metric in ("bpb", "loss")}
        scores = remote.score([reference_request(it) for it in items])
        b = {m.metric: m.score for m in evaluate(str(tmp / "model"), "heldout-calls", items=items, backend=remote)
             if m.metric in ("bpb", "loss")}
        lp = local.score([reference_request(it) for it in items])
        remote.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return {"items": len(items), "bpb_transformers": a["bpb"], "bpb_vllm_protocol": b["bpb"],
            "abs_diff_bpb": abs(a["bpb"] - b["bpb"]), "abs_diff_loss": abs(a["loss"] - b["loss"]),
            "max_abs_diff_item_logprob": max(abs(x.logprob - y.logprob) for x, y in zip(lp, scores, strict=True)),
            "benchmark_version": get_benchmark("heldout-calls").version}


def storage() -> dict:
    from grid.design import build_design
    from toolscale.config import load_config

    s = build_design(load_config(ROOT / "docs" / "cluster.toml")).summary
    return {"runs": s.runs, **s.storage.model_dump(mode="json")}


def main() -> None:
    import torch

    torch.set_num_threads(1)
    out = {"templates": templates(), "storage": storage()}
    with tempfile.TemporaryDirectory() as d:
        out["distributed"] = distributed(Path(d))
    with tempfile.TemporaryDirectory() as d:
        out["bpb"] = bpb(Path(d))
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
