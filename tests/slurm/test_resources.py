"""Ladder rung + SLURM spec -> submitit parameters (pure), and the sbatch file they make."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurm.errors import SubmitError
from slurm.resources import executor_parameters
from toolscale.config import ModelSize, SlurmSpec


def _sbatch(params: dict) -> str:
    from submitit.slurm.slurm import _make_sbatch_string

    shared = {"timeout_min": "time", "cpus_per_task": "cpus_per_task", "mem_gb": "mem",
              "gpus_per_node": "gpus_per_node", "name": "job_name"}
    kw = {shared[k]: v for k, v in params.items() if k in shared}
    kw["mem"] = f"{int(kw['mem'])}GB"
    kw.update({k[len("slurm_"):]: v for k, v in params.items() if k.startswith("slurm_")})
    return _make_sbatch_string(command="python -m x", folder="/f", map_count=10, **kw)


def test_rung_resources_and_pass_through():
    size = ModelSize(name="l", cpus=4, mem_gb=16, gpus=1, timeout_min=90)
    spec = SlurmSpec(partition="gpu", account="acct", qos="high", constraint="a100",
                     additional_parameters={"mail_type": "FAIL", "exclusive": True})
    p = executor_parameters(size, spec, max_parallel=3, job_name="ts-e-l")
    assert p["timeout_min"] == 90 and p["cpus_per_task"] == 4 and p["mem_gb"] == 16.0 and p["gpus_per_node"] == 1
    assert p["slurm_partition"] == "gpu" and p["slurm_account"] == "acct" and p["slurm_qos"] == "high"
    text = _sbatch(p)
    for line in ["--partition=gpu", "--account=acct", "--qos=high", "--constraint=a100", "--cpus-per-task=4",
                 "--mem=16GB", "--gpus-per-node=1", "--time=90", "--array=0-9%3", "--mail-type=FAIL",
                 "#SBATCH --exclusive", "--signal=USR2@300", "#SBATCH --requeue", "--job-name=ts-e-l"]:
        assert line in text, f"{line!r} missing from:\n{text}"


def test_cpu_rung_has_no_gpu_and_unset_options_are_absent():
    p = executor_parameters(ModelSize(name="s"), SlurmSpec(), max_parallel=1, job_name="j", requeue=False)
    assert "gpus_per_node" not in p and "slurm_partition" not in p and "slurm_additional_parameters" not in p
    assert "tasks_per_node" not in p
    assert "--partition" not in _sbatch(p) and "--requeue" not in _sbatch(p)


def test_multi_gpu_rung_runs_one_task_per_gpu():
    """4 GPUs: 4 tasks (torch distributed, one process per device), the rung's CPUs shared out among them."""
    size = ModelSize(name="q4", pretrained="/m", params=4_000_000_000, gpus=4, cpus=32, mem_gb=320, timeout_min=720)
    p = executor_parameters(size, SlurmSpec(), max_parallel=64, job_name="j")
    assert p["tasks_per_node"] == 4 and p["cpus_per_task"] == 8 and p["gpus_per_node"] == 4
    assert p["slurm_signal_delay_s"] == 300 and p["slurm_additional_parameters"] == {"requeue": True}
    one = executor_parameters(size.model_copy(update={"gpus": 1}), SlurmSpec(), max_parallel=1, job_name="j")
    assert "tasks_per_node" not in one and one["cpus_per_task"] == 32


def test_signal_delay_fits_inside_short_time_limits():
    p = executor_parameters(ModelSize(name="s", timeout_min=1), SlurmSpec(), max_parallel=1, job_name="j",
                            signal_delay_s=300)
    assert p["slurm_signal_delay_s"] == 20  # 60 s limit - 30 s check period - 10 s startup


@pytest.mark.parametrize(("extra", "message"), [({"time": "10"}, "'time' is set by toolscale"),
                                                 ({"dependency": "afterok:1"}, "'dependency' is set by toolscale"),
                                                 ({"Bad Flag": 1}, "'Bad Flag' is not an sbatch flag name")])
def test_bad_extra_flags_are_rejected(extra, message):
    with pytest.raises(SubmitError, match=message):
        executor_parameters(ModelSize(name="s"), SlurmSpec(additional_parameters=extra), max_parallel=1,
                            job_name="j")


GOLDEN = Path(__file__).with_name("golden") / "sbatch_tiny-l.txt"


def test_sbatch_file_matches_golden(golden):
    """Regenerate with ``make golden``."""
    size = ModelSize(name="tiny-l", hidden_size=128, num_layers=3, num_heads=4, cpus=2, mem_gb=3, timeout_min=20)
    spec = SlurmSpec(partition="cpu", account="lab", additional_parameters={"mail_type": "FAIL"})
    got = _sbatch(executor_parameters(size, spec, max_parallel=2, job_name="ts-toolscale-micro-tiny-l"))
    assert got == golden.check_in(GOLDEN, got), f"sbatch file changed; if intended, regenerate with {golden.command}"
