"""Fixtures of the launcher tests: a small config, a registry with pending runs, the test job kinds."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from grid.models import RunSpec
from grid.registry import Registry
from slurm.jobs import JOB_KINDS, register_job_kind
from toolscale.config import ExperimentConfig, load_config

_KINDS_FILE = Path(__file__).with_name("kinds.py")


def _load_kinds():
    spec = importlib.util.spec_from_file_location("toolscale_test_slurm_kinds", _KINDS_FILE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


kinds = _load_kinds()

CONFIG = """\
[experiment]
name = "{name}"
registry = "{registry}"

[[axes]]
name = "tool_diversity"
kind = "diversity"
unit = "tools"
min = 1
max = 8

[[ladder]]
name = "s"
cpus = {cpus}
mem_gb = 0.5
timeout_min = {timeout_min}

[[ladder]]
name = "m"
cpus = 1
mem_gb = 0.5
timeout_min = {timeout_min}

[executor]
kind = "{executor}"
max_parallel = {max_parallel}
max_attempts = {max_attempts}
folder = "{folder}"
{slurm}
"""


@dataclass
class Env:
    """A test experiment on disk."""

    config_path: Path
    config: ExperimentConfig
    registry: Path
    folder: Path
    run_ids: list[str]


@pytest.fixture(autouse=True)
def _test_kinds():
    """Register the test job kinds for every test (and drop them afterwards)."""
    names = {"succeed": kinds.succeed, "boom": kinds.boom, "flaky": kinds.flaky, "sleeper": kinds.sleeper,
             "counter": kinds.counter, "crash": kinds.crash, "crash_once": kinds.crash_once, "taint": kinds.taint,
             "inspect_state": kinds.inspect_state, "sft_tiny": kinds.sft_tiny, "oom": kinds.oom}
    for name, fn in names.items():
        register_job_kind(name, fn)
    yield
    for name in names:
        JOB_KINDS.pop(name, None)


def make_env(tmp_path: Path, *, n_runs: int = 3, executor: str = "debug", max_parallel: int = 4,
             max_attempts: int = 2, sizes: tuple[str, ...] = ("s",), timeout_min: int = 2, cpus: int = 1,
             slurm: str = "", name: str = "sl-test") -> Env:
    """Write a config and a registry holding ``n_runs`` pending runs per size in ``sizes``."""
    folder = tmp_path / "runs"
    registry = tmp_path / "reg.duckdb"
    text = CONFIG.format(name=name, registry=registry, executor=executor, max_parallel=max_parallel,
                         max_attempts=max_attempts, folder=folder, timeout_min=timeout_min, cpus=cpus, slurm=slurm)
    path = tmp_path / "exp.toml"
    path.write_text(text, encoding="utf-8")
    cfg = load_config(path)
    runs = [RunSpec(run_id=f"{name}-{size}-{i}", experiment=name, design_version="v1",
                    recipe={"tool_diversity": float(i + 1)}, model_size=size, seed=i)
            for size in sizes for i in range(n_runs)]
    with Registry(registry) as reg:
        reg.ensure_experiment(name, axes=["tool_diversity"])
        reg.add_runs(runs)
    return Env(path, cfg, registry, folder, [r.run_id for r in runs])


def runs_by_id(env: Env) -> dict:
    """Current registry rows of the env's runs."""
    with Registry(env.registry, read_only=True) as reg:
        return {r.run_id: r for r in reg.runs(env.config.experiment.name)}


@pytest.fixture
def make(tmp_path):
    """``make(**kw) -> Env`` (see :func:`make_env`), in this test's tmp folder."""
    return lambda **kw: make_env(tmp_path, **kw)


@pytest.fixture
def rows():
    """``rows(env) -> {run_id: RunRecord}``."""
    return runs_by_id


def launch_killed_before_registry_update(env: Env, monkeypatch) -> None:
    """A launcher killed after the scheduler accepted the jobs and the manifest was written, before the
    registry heard of them: the runs are submitted but still ``pending`` in the registry (asserted)."""
    from slurm.launcher import launch

    def killed(self, job_ids):
        raise KeyboardInterrupt("launcher killed")

    monkeypatch.setattr(Registry, "mark_submitted", killed)
    with pytest.raises(KeyboardInterrupt):
        launch(env.config, env.registry, job_kind="succeed")
    monkeypatch.undo()
    assert {r.status for r in runs_by_id(env).values()} == {"pending"}


@pytest.fixture
def killed_launch(monkeypatch):
    """``killed_launch(env)``: :func:`launch_killed_before_registry_update` with this test's monkeypatch."""
    return lambda env: launch_killed_before_registry_update(env, monkeypatch)


@pytest.fixture(scope="module")
def dev_cluster():
    """The dev cluster's SLURM_CONF exported, or a skip saying how to start it (the tests marked ``slurm`` that
    submit real jobs use it)."""
    state = Path(os.environ.get("TOOLSCALE_SLURM_DIR", "/tmp/toolscale-slurm"))
    conf = os.environ.get("SLURM_CONF") or str(state / "etc" / "slurm.conf")
    if not Path(conf).exists():
        pytest.skip("no dev SLURM cluster: run `slurm/dev-cluster.sh up` (make test does)")
    old = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = conf
    try:
        ok = subprocess.run(["scontrol", "ping"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.SubprocessError):
        ok = False
    if not ok:
        pytest.skip("dev SLURM cluster does not answer: run `slurm/dev-cluster.sh up` (make test does)")
    yield conf
    if old is None:
        os.environ.pop("SLURM_CONF", None)
    else:
        os.environ["SLURM_CONF"] = old
