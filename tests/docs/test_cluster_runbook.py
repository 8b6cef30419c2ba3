"""docs/cluster.md is a runbook whose every ``toolscale``/``allocate`` command is run here, in its order.

* every command parses with the real CLI;
* the analysis commands (section 8) run on ``docs/cluster.toml`` itself, over runs simulated on its own design;
* the cluster commands (sections 2-7) run on the dev SLURM cluster against a small copy of the config (proxy
  rungs, the same sections: a CPU dataset array, one job per run, evaluation through ``vllm serve`` stood in
  for by ``toolscale serve-model`` behind a ``bin/vllm`` of the same command line).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from toolscale.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[2]
RUNBOOK = ROOT / "docs" / "cluster.md"
CLUSTER = ROOT / "docs" / "cluster.toml"
ANALYSIS = ("fit", "report", "allocate")


def runbook_commands() -> list[list[str]]:
    """The argv of every command in the runbook's ``sh`` blocks, in order (``allocate`` as ``toolscale allocate``)."""
    blocks = re.findall(r"```sh\n(.*?)```", RUNBOOK.read_text(encoding="utf-8"), flags=re.S)
    out = []
    for block in blocks:
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            if not words:
                continue
            assert words[0] in ("toolscale", "allocate"), f"not a toolscale command in a runbook sh block: {line}"
            out.append(words[1:] if words[0] == "toolscale" else ["allocate", *words[1:]])
    return out


def test_every_runbook_command_parses():
    commands = runbook_commands()
    assert len(commands) >= 15
    parser = build_parser()
    for argv in commands:
        args = parser.parse_args(argv)  # a wrong flag exits 2 here
        assert getattr(args, "func", None) is not None, argv
    names = {a[0] for a in commands}
    assert {"validate", "grid", "preflight", "launch", "sync", "calibrate-cost", "status", "cancel", *ANALYSIS} <= names


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_the_analysis_commands_run_on_the_cluster_config(tmp_path, monkeypatch, capsys):
    """fit, report and allocate on docs/cluster.toml, over its 176-run design simulated (no training). Slow:
    each command fits the law (with its bootstrap) to 176 points, about a minute of CPU each."""
    monkeypatch.chdir(tmp_path)  # the config's registry is ./toolscale.duckdb
    cfg = str(CLUSTER)
    assert main(["simulate", "--config", cfg, "--experiment", "cluster-qwen3", "--benchmark", "heldout-calls",
                 "--seed", "1", "--json"]) == 0
    capsys.readouterr()
    for argv in (a for a in runbook_commands() if a[0] in ANALYSIS):
        argv = [cfg if w == "docs/cluster.toml" else w for w in argv]
        assert main(argv) == 0, argv
        out = capsys.readouterr().out
        if argv[0] == "fit":
            assert json.loads(out)["law"]
    assert any((tmp_path / "report").iterdir())


TINY = """\
[experiment]
name = "runbook"
registry = "{root}/toolscale.duckdb"

[[axes]]
name = "tool_diversity"
kind = "diversity"
unit = "tools"
min = 4
max = 8
levels = 2
integer = true
cost_per_unit = 150.0

[[axes]]
name = "task_count"
kind = "diversity"
unit = "tasks"
min = 16
max = 24
levels = 2
integer = true
cost_per_unit = 0.8

[[ladder]]
name = "t1"
hidden_size = 32
num_layers = 1
num_heads = 2
vocab_size = 512
max_seq_len = 2048
max_steps = 2
batch_size = 4
micro_batch_size = 2
learning_rate = 1e-3
cpus = 1
mem_gb = 2
timeout_min = 20

[[ladder]]
name = "t2"
hidden_size = 64
num_layers = 1
num_heads = 2
vocab_size = 512
max_seq_len = 2048
max_steps = 4
batch_size = 4
learning_rate = 1e-3
cpus = 1
mem_gb = 2
timeout_min = 20

[design]
kind = "full"
center_points = 0
heldout_fraction = 0.25
min_extrapolation_factor = 1.0

[probe]
sample_size = 8
train_steps = 3

[train]
max_epochs = 16
checkpoint_every_min = 20
keep_checkpoints = false
threads = 1

[eval]
benchmarks = ["heldout-calls"]
limit = 3
backend = "vllm-server"
vllm = "{root}/vllm-env"
concurrency = 4
vllm_startup_s = 300

[executor]
kind = "slurm"
max_parallel = 4
max_attempts = 2
folder = "{root}/runs"
signal_delay_s = 300
offline = true
storage_quota_gb = 100
dataset_cpus = 1
dataset_mem_gb = 2

[cost]
per_pflop = 0.00174
tokens_per_task = 1500
gpu_hour_usd = 2.5
eval_gpu_s_per_run = 600
"""

FAKE_VLLM = """\
#!/bin/sh
# `vllm serve MODEL --served-model-name NAME --host H --port P ...` on CPU: toolscale serve-model, same routes
model="$2"; shift 2
while [ $# -gt 0 ]; do
  case "$1" in
    --served-model-name) name="$2"; shift 2;;
    --port) port="$2"; shift 2;;
    *) shift;;
  esac
done
exec "{python}" -m toolscale.cli serve-model "$model" --model-name "$name" --port "$port" --threads 1
"""


def _dev_cluster() -> None:
    conf = os.environ.get("SLURM_CONF") or str(Path(os.environ.get("TOOLSCALE_SLURM_DIR", "/tmp/toolscale-slurm"))
                                               / "etc" / "slurm.conf")
    if not Path(conf).exists():
        pytest.skip("no dev SLURM cluster: run `slurm/dev-cluster.sh up` (make test does)")
    os.environ["SLURM_CONF"] = conf
    if subprocess.run(["scontrol", "ping"], capture_output=True, timeout=20).returncode != 0:
        pytest.skip("dev SLURM cluster does not answer: run `slurm/dev-cluster.sh up`")


@pytest.mark.slurm
@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_the_runbook_runs_on_the_dev_cluster(tmp_path, monkeypatch, capsys):
    """Sections 2-7 on the dev cluster, in order: validate, dry-run design, preflight (a node job per rung that
    trains and evaluates through the vllm stand-in), design, pilots, sync, calibrate-cost, launch, status,
    resume, cancel. Minutes: every run synthesises, probes, trains and serves its model."""
    _dev_cluster()
    env = tmp_path / "vllm-env" / "bin"
    env.mkdir(parents=True)
    (env / "vllm").write_text(FAKE_VLLM.format(python=sys.executable))
    (env / "vllm").chmod((env / "vllm").stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    tiny = tmp_path / "cluster.toml"
    tiny.write_text(TINY.format(root=tmp_path))
    for argv in (a for a in runbook_commands() if a[0] not in ANALYSIS):
        argv = [str(tiny) if w == "docs/cluster.toml" else w for w in argv]
        if argv[0] == "cancel":  # nothing is live any more: cancel what a resume would start
            argv = [*argv, "--pending"]
        code = main(argv)
        out = capsys.readouterr()
        assert code == 0, (argv, out.err[-3000:])
        if argv[:2] == ["sync", "--config"] and "--wait" in argv:
            assert "failed" not in out.out.split("runs:")[-1] or " 0 failed" in out.out, out.out
    from grid.registry import Registry

    with Registry(tmp_path / "toolscale.duckdb", read_only=True) as reg:
        runs = reg.runs("runbook")
    done = [r for r in runs if r.status == "done"]
    assert done, [r.error for r in runs]
    assert all("heldout-calls/bpb" in r.metrics for r in done)  # scored through the vLLM protocol
    assert all(r.metadata["stage_plan"]["sft_steps"] > 0 for r in done)
