"""``toolscale preflight``: the bad inputs it must refuse (offline hub ids, templates without assistant masks,
storage over quota, a CPU build of torch on a GPU rung), and a node job that trains and evaluates one step."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolscale.cli import main

CONFIG = """\
[experiment]
name = "pf"
registry = "{root}/reg.duckdb"

[[axes]]
name = "task_count"
kind = "diversity"
unit = "tasks"
min = 16
max = 32
integer = true

[[ladder]]
name = "t"
{rung}
max_seq_len = 1024
max_steps = 2
batch_size = 4
learning_rate = 1e-3

[design]
kind = "full"
heldout_fraction = 0.0

[train]
threads = 1

[eval]
benchmarks = ["heldout-calls"]
checkpoints = 0

[executor]
kind = "debug"
folder = "{root}/runs"
{executor}
"""

PROXY = 'hidden_size = 32\nnum_layers = 1\nnum_heads = 2\nvocab_size = 512'


def _config(tmp_path: Path, rung: str = PROXY, executor: str = "") -> Path:
    path = tmp_path / "pf.toml"
    path.write_text(CONFIG.format(root=tmp_path, rung=rung, executor=executor))
    return path


def _stored(name: str) -> str:
    import trl.chat_template_utils as ctu

    return (Path(ctu.__file__).parent / "chat_templates" / name).read_text()


@pytest.fixture(scope="module")
def local_model(tmp_path_factory):
    """A 'pretrained' folder: a tiny model with a local tokenizer wearing the stock Qwen3 template."""
    from toolscale.config import ModelSize
    from train.chat import render
    from train.proxy import build_model
    from train.templates import SAMPLE_ROWS
    from train.tokenizer import train_tokenizer

    tok = train_tokenizer([render(r["messages"], r["tools"]) for r in SAMPLE_ROWS] * 20, 300)
    tok.chat_template = _stored("qwen3.jinja")
    folder = tmp_path_factory.mktemp("qwen3-like")
    build_model(ModelSize(name="b", hidden_size=32, num_layers=1, num_heads=2, vocab_size=512, max_seq_len=1024),
                vocab_size=len(tok)).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def test_a_hub_id_on_an_offline_cluster_is_refused_naming_it(tmp_path, capsys):
    cfg = _config(tmp_path, rung='pretrained = "Qwen/Qwen3-0.6B"\nparams = 600_000_000',
                  executor="offline = true")
    assert main(["preflight", "--config", str(cfg), "--login-only"]) == 2
    err = capsys.readouterr().err
    assert "'Qwen/Qwen3-0.6B' is not a local folder and compute nodes are offline" in err
    assert len([line for line in err.splitlines() if line.startswith("toolscale: error:")]) == 1


def test_a_stock_qwen3_template_passes_with_its_training_variant(tmp_path, local_model, capsys):
    cfg = _config(tmp_path, rung=f'pretrained = "{local_model}"\nparams = 50000', executor="offline = true")
    assert main(["preflight", "--config", str(cfg), "--login-only", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    template = next(c for c in report["checks"] if c["name"] == "chat template")
    assert template["status"] == "ok" and template["detail"].startswith("qwen3_training.jinja: ")
    assert int(template["detail"].split(": ")[1].split()[0]) > 0


def test_a_template_without_assistant_masks_is_refused_before_anything_is_submitted(tmp_path, local_model, capsys):
    import shutil

    from grid.registry import Registry

    bare = tmp_path / "bare"
    shutil.copytree(local_model, bare)
    tc = json.loads((bare / "tokenizer_config.json").read_text())
    tc.pop("chat_template", None)
    (bare / "tokenizer_config.json").write_text(json.dumps(tc))
    (bare / "chat_template.jinja").write_text("{% for m in messages %}{{ m['content'] }}{% endfor %}")
    cfg = _config(tmp_path, rung=f'pretrained = "{bare}"\nparams = 50000')
    assert main(["preflight", "--config", str(cfg), "--login-only"]) == 2
    assert "has no {% generation %} markers and TRL ships no training variant" in capsys.readouterr().err
    assert main(["grid", "design", str(cfg)]) == 0
    capsys.readouterr()
    assert main(["launch", "--config", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert "has no {% generation %} markers" in err and str(bare) in err
    with Registry(tmp_path / "reg.duckdb", read_only=True) as reg:
        assert {r.status for r in reg.runs("pf")} == {"pending"}  # nothing submitted
    assert not (tmp_path / "runs" / "launches").exists()


def test_a_design_over_the_storage_quota_is_refused_with_both_numbers(tmp_path, capsys):
    cfg = _config(tmp_path, executor="storage_quota_gb = 0.0001")
    assert main(["preflight", "--config", str(cfg), "--login-only"]) == 2
    err = capsys.readouterr().err
    assert "storage estimate" in err and "exceeds executor.storage_quota_gb = 0.0 GB" in err


def test_a_gpu_rung_on_a_cpu_build_of_torch_is_refused_on_the_node(tmp_path, capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    cfg = _config(tmp_path, rung=PROXY + "\ngpus = 1")
    assert main(["preflight", "--config", str(cfg), "--executor", "debug"]) == 2
    err = capsys.readouterr().err
    assert "preflight torch/CUDA (t): torch" in err and "the rung asks for 1 GPU(s)" in err


def test_a_node_job_trains_and_evaluates_one_step(tmp_path, capsys):
    """The debug executor runs the node job in this process: token seen, two training steps with the rung's
    layout and their checkpoints, then heldout-calls scored on two items. About 20-40 s."""
    cfg = _config(tmp_path)
    assert main(["preflight", "--config", str(cfg), "--executor", "debug", "--json"]) == 0
    checks = {(c["name"], c["where"]): c for c in json.loads(capsys.readouterr().out)["checks"]}
    assert checks[("shared filesystem", "node")]["status"] == "ok"
    assert checks[("torch/CUDA", "node")]["status"] == "skip"
    train = checks[("train step", "node")]
    assert train["status"] == "ok" and "checkpoints" in train["detail"] and train["seconds"] > 0
    ev = checks[("eval step", "node")]
    assert ev["status"] == "ok" and "bpb" in ev["detail"]
    assert checks[("lock files", "login")]["status"] == "ok" and checks[("storage", "login")]["status"] == "ok"


def test_a_missing_vllm_environment_and_a_bad_batch_layout_are_refused_naming_them(tmp_path, capsys):
    """Login checks only (no node job): eval.vllm without a bin/vllm, and a micro batch that does not divide
    the global batch, each named in its own line; exit 2."""
    cfg = tmp_path / "pf.toml"
    text = CONFIG.format(root=tmp_path, rung=PROXY + "\nmicro_batch_size = 3", executor="")
    cfg.write_text(text.replace('checkpoints = 0', f'checkpoints = 0\nbackend = "vllm-server"\n'
                                                   f'vllm = "{tmp_path}/no-such-env"'))
    assert main(["preflight", "--config", str(cfg), "--login-only", "--json"]) == 2
    captured = capsys.readouterr()
    checks = {c["name"]: c for c in json.loads(captured.out)["checks"]}
    assert checks["vllm"]["status"] == "fail" and f"{tmp_path}/no-such-env" in checks["vllm"]["detail"]
    layout = checks["batch layout"]
    assert layout["status"] == "fail" and layout["rung"] == "t"
    assert layout["detail"].startswith("micro_batch_size 3 must divide the per-process share 4")
    assert checks["storage"]["status"] == "ok"
    assert main(["preflight", "--config", str(cfg), "--login-only"]) == 2
    errors = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("toolscale: error: preflight")]
    assert len(errors) == 2 and errors[0].startswith("toolscale: error: preflight batch layout (t): ")
