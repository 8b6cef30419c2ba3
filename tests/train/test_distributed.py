"""Torch-distributed SFT on CPUs: 2 processes with gloo train the same run as 1 process, and one process writes.

The layout code (global batch, accumulation, padding-free batches, activation checkpointing, TRL's chunked
loss) is the one GPU rungs use; FSDP itself needs devices (accelerate has no CPU FSDP), so its settings are
checked as data here.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from toolscale.config import ModelSize, TrainSpec
from toolscale.errors import UsageError
from train.distributed import accumulation, dist_env, parallel_settings

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "tests" / "train" / "fixtures" / "tiny"

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
max_steps = 4
batch_size = 4
micro_batch_size = 1
learning_rate = 3e-3
[train]
threads = 1
padding_free = true
activation_checkpointing = true
chunked_loss = true
"""

# Records every file a rank opens for writing under the run folder (Python-level opens: run.json, the
# tokenizer, train_stats.json, config.json), one line per open, in WRITES_LOG.<rank>.
SITECUSTOMIZE = """\
import os, sys
_root, _log = os.environ.get("WRITES_ROOT"), os.environ.get("WRITES_LOG")
if _root and _log:
    def _hook(event, args):
        if event == "open" and args and isinstance(args[0], (str, bytes, os.PathLike)):
            path, mode = os.fsdecode(args[0]), args[1]
            flags = args[2] if len(args) > 2 else 0
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT))
            if writing and os.path.abspath(path).startswith(_root):
                with open(_log + "." + os.environ.get("RANK", "0"), "a") as f:
                    f.write(os.path.relpath(os.path.abspath(path), _root) + "\\n")
    sys.addaudithook(_hook)
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _train(tmp: Path, out: Path, nproc: int) -> dict:
    """``toolscale train`` on the tiny rows in ``nproc`` processes (torchrun for more than one)."""
    cfg = tmp / "dist.toml"
    cfg.write_text(CONFIG)
    hook = tmp / "hook"
    hook.mkdir(exist_ok=True)
    (hook / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(hook), str(ROOT)]), "OMP_NUM_THREADS": "1",
           "WRITES_ROOT": str(out), "WRITES_LOG": str(tmp / f"writes-{nproc}")}
    cli = ["-m", "toolscale.cli", "train", "--config", str(cfg), "--data", str(TINY), "--model-size", "t",
           "--out", str(out), "--json"]
    if nproc > 1:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(nproc),
               "--master_addr", "127.0.0.1", "--master_port", str(_free_port()), *cli]
    else:
        cmd = [sys.executable, *cli]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, cwd=tmp)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads((out / "train_stats.json").read_text())


def test_accumulation_splits_the_global_batch():
    assert accumulation(32, 4, 2) == (2, 4)
    assert accumulation(32, 1, None) == (32, 1)
    assert accumulation(8, 2, None) == (4, 1)
    with pytest.raises(UsageError, match="not divisible by the 3 training processes"):
        accumulation(32, 3, None)
    with pytest.raises(UsageError, match="micro_batch_size 3 must divide"):
        accumulation(32, 4, 3)


def test_parallel_settings_gpu_and_cpu():
    size = ModelSize(name="q", pretrained="/m", params=4_000_000_000, batch_size=32, micro_batch_size=2,
                     max_seq_len=4096)
    gpu = parallel_settings(size, TrainSpec(), gpu=True, world_size=4)
    assert gpu["per_device_train_batch_size"] == 2 and gpu["gradient_accumulation_steps"] == 4
    assert gpu["fsdp"] is True and gpu["fsdp_config"]["reshard_after_forward"] is True
    assert gpu["fsdp_config"]["activation_checkpointing"] is True and gpu["activation_checkpointing"] is False
    assert gpu["padding_free"] is True and gpu["max_length"] is None and gpu["ddp_backend"] == "nccl"
    ddp = parallel_settings(size, TrainSpec(parallel="ddp"), gpu=True, world_size=4)
    assert "fsdp" not in ddp and ddp["activation_checkpointing"] is True
    cpu = parallel_settings(size, TrainSpec(), gpu=False, world_size=2)
    assert cpu["ddp_backend"] == "gloo" and "fsdp" not in cpu and "padding_free" not in cpu
    assert cpu["per_device_train_batch_size"] == 2 and cpu["gradient_accumulation_steps"] == 8
    assert dist_env().world_size == 1  # the test process itself is not distributed


def test_two_gloo_processes_train_the_same_run_with_one_writer(tmp_path):
    """Two torch-distributed CPU processes (gloo) against one, same global batch of 4: the loss curve and the
    tokens seen agree, and only rank 0 writes the run's files. About 60-90 s on 2 busy cores: each process
    imports torch, transformers and TRL; this is the code path every multi-GPU rung takes."""
    from toolscale.config import load_config
    from train.sft import read_stats, train_sft

    (tmp_path / "one.toml").write_text(CONFIG)
    cfg = load_config(tmp_path / "one.toml")
    train_sft(TINY, cfg.model_size("t"), tmp_path / "one", train=cfg.train, threads=1)  # in this process
    one = read_stats(tmp_path / "one")
    two = _train(tmp_path, tmp_path / "two", 2)
    assert two["parallel"]["world_size"] == 2 and one["parallel"]["world_size"] == 1
    assert two["parallel"]["micro_batch_size"] == 1 and two["parallel"]["gradient_accumulation_steps"] == 2
    assert one["parallel"]["gradient_accumulation_steps"] == 4
    assert two["parallel"]["padding_free"] and two["parallel"]["activation_checkpointing"]
    assert two["parallel"]["chunked_loss"]
    assert two["train"]["train_tokens"] == one["train"]["train_tokens"] > 0
    a = [p["loss"] for p in one["loss_curve"]]
    b = [p["loss"] for p in two["loss_curve"]]
    assert len(a) == len(b) == 4
    assert b == pytest.approx(a, rel=1e-4)
    assert a[-1] < a[0]
    rank0 = [p.removesuffix(".tmp") for p in (tmp_path / "writes-2.0").read_text().split()]  # atomic writes
    assert {"run.json", "train_stats.json", "config.json"} <= set(rank0)
    rank1 = tmp_path / "writes-2.1"
    others = [p for p in (rank1.read_text().split() if rank1.exists() else []) if not p.startswith("checkpoints")]
    assert others == []
