"""The cluster runbook's config designs as docs/cluster.md says: 176 runs, three fitted sizes, 16x extrapolation,
epochs capped, a storage estimate, one process per GPU, and a price per PFLOP consistent with its own comment."""

from __future__ import annotations

from pathlib import Path

import pytest

from grid.design import build_design
from slurm.submit import launch_plan
from toolscale.config import load_config
from train.distributed import accumulation

CLUSTER = Path(__file__).resolve().parents[2] / "docs" / "cluster.toml"


def test_cluster_config_designs_as_documented() -> None:
    cfg = load_config(CLUSTER)
    assert all(m.pretrained for m in cfg.ladder)
    design = build_design(cfg)
    runs = design.runs
    held = [r for r in runs if r.split == "heldout"]
    fitted = [r for r in runs if r.split == "fit"]
    assert len(runs) == 176 and len(held) == 44
    assert design.summary.fitted_sizes == 3 and design.summary.qd_clear_of_main
    ratio = max(r.train_flops for r in held) / max(r.train_flops for r in fitted)
    assert ratio >= 16.0
    total = sum(r.train_flops for r in runs)
    assert 1.2e21 < total < 1.3e21  # "1.24e21 FLOPs" in docs/cluster.md
    assert 4000 < design.summary.storage.total_gb < 4200  # "about 4.1 TB"
    assert design.summary.storage.total_gb <= cfg.executor.storage_quota_gb
    assert cfg.train.max_epochs is not None


def test_cluster_config_prices_and_lays_out_as_documented() -> None:
    cfg = load_config(CLUSTER)
    # $2.50 per GPU-hour at 40% MFU of an H100 (4e14 FLOP/s): 2.5 / (4e14 x 3600 / 1e15) usd per PFLOP
    assert cfg.cost.per_pflop == pytest.approx(cfg.cost.gpu_hour_usd / (4e14 * 3600 / 1e15), rel=0.01)
    for size in cfg.ladder:
        micro, accum = accumulation(size.batch_size, max(1, size.gpus), size.micro_batch_size)
        assert max(1, size.gpus) * micro * accum == size.batch_size
    plan = {p["model_size"]: p["parameters"] for p in launch_plan(cfg, [])} or None
    assert plan is None  # no runs, nothing to plan; the parameters per rung:
    from slurm.resources import executor_parameters

    eight = executor_parameters(cfg.model_size("qwen3-8b"), cfg.executor.slurm, max_parallel=16, job_name="j",
                                signal_delay_s=cfg.executor.signal_delay_s, requeue=cfg.executor.requeue)
    assert eight["tasks_per_node"] == 4 and eight["gpus_per_node"] == 4 and eight["cpus_per_task"] == 8
    assert eight["slurm_signal_delay_s"] == 300 and eight["slurm_additional_parameters"]["requeue"] is True
    assert cfg.eval.backend == "vllm-server" and cfg.executor.offline
