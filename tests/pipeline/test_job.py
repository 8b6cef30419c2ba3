"""The pipeline job kind: shared dataset cache (content hash + lock), lazy imports, end to end (slow)."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

from grid.models import RunSpec
from grid.registry import Registry
from slurm.launcher import launch
from pipeline.job import COMPLETE_MARKER, dataset_key, ensure_dataset
from toolscale.config import load_config


def test_dataset_key_depends_on_recipe_and_seed_only():
    a = dataset_key({"tool_diversity": 4, "seed": 0})
    assert a == dataset_key({"seed": 0, "tool_diversity": 4})
    assert a != dataset_key({"tool_diversity": 4, "seed": 1})
    assert a.startswith("ds-") and len(a) == 19


def test_concurrent_builders_of_one_dataset_build_it_once(tmp_path):
    builds: list[int] = []

    def build(folder: Path) -> None:
        folder.mkdir(parents=True)
        builds.append(threading.get_ident())
        time.sleep(0.3)
        (folder / "train.jsonl").write_text("x\n")

    out: list[tuple[Path, bool]] = []
    threads = [threading.Thread(target=lambda: out.append(ensure_dataset(tmp_path, "ds-1", build)))
               for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(builds) == 1
    assert sorted(b for _, b in out) == [False, False, True]
    assert {p for p, _ in out} == {tmp_path / "ds-1"}
    assert (tmp_path / "ds-1" / COMPLETE_MARKER).exists()
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")) == ["ds-1"]


def test_failed_build_leaves_nothing_and_next_caller_rebuilds(tmp_path):
    def bad(folder: Path) -> None:
        folder.mkdir(parents=True)
        (folder / "half").write_text("x")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        ensure_dataset(tmp_path, "ds-2", bad)
    assert [p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")] == []
    path, built = ensure_dataset(tmp_path, "ds-2", lambda f: f.mkdir(parents=True))
    assert built and (path / COMPLETE_MARKER).exists()


PIPE_CONFIG = """\
[experiment]
name = "pipe"
registry = "{root}/reg.duckdb"

[[axes]]
name = "tool_diversity"
kind = "diversity"
unit = "tools"
min = 4
max = 8

[[axes]]
name = "task_count"
kind = "diversity"
unit = "tasks"
min = 16
max = 32
integer = true

[[ladder]]
name = "t1"
hidden_size = 16
num_layers = 1
num_heads = 2
vocab_size = 512
max_steps = 4
batch_size = 2

[[ladder]]
name = "t2"
hidden_size = 32
num_layers = 1
num_heads = 2
vocab_size = 512
max_steps = 4
batch_size = 2

[probe]
sample_size = 8
train_steps = 3

[train]
threads = 1

[eval]
benchmarks = ["heldout-calls"]
limit = 4
validation_limit = 4
checkpoints = 2

[executor]
kind = "debug"
folder = "{root}/runs"
"""


def _pipe(tmp_path: Path, sizes: tuple[str, ...], checkpoints: str = "checkpoints = 2"):
    path = tmp_path / "pipe.toml"
    path.write_text(PIPE_CONFIG.format(root=tmp_path).replace("checkpoints = 2", checkpoints))
    cfg = load_config(path)
    with Registry(cfg.experiment.registry) as reg:
        reg.ensure_experiment("pipe", axes=["tool_diversity", "task_count"])
        reg.add_runs([RunSpec(run_id=f"p-{s}", experiment="pipe", design_version="v",
                              recipe={"tool_diversity": 6.0, "task_count": 16.0}, model_size=s) for s in sizes])
    return cfg


def test_missing_stage_module_fails_the_run_not_the_launcher(tmp_path, monkeypatch):
    cfg = _pipe(tmp_path, ("t1",))
    monkeypatch.setitem(sys.modules, "synth.dataset", None)  # import of the synth stage fails in the job
    rep = launch(cfg, cfg.experiment.registry, executor="debug")
    assert rep.submitted == ["p-t1"]
    with Registry(cfg.experiment.registry, read_only=True) as reg:
        run = reg.runs("pipe")[0]
    assert run.status == "failed" and "ModuleNotFoundError" in run.error and "synth.dataset" in run.error


@pytest.mark.slow
@pytest.mark.integration
def test_pipeline_end_to_end_shares_the_dataset_across_sizes(tmp_path):
    """Two real runs (synthesis, probe, training, validation at two checkpoints, test at the chosen one)."""
    cfg = _pipe(tmp_path, ("t1", "t2"))
    launch(cfg, cfg.experiment.registry, executor="debug")
    with Registry(cfg.experiment.registry, read_only=True) as reg:
        runs = {r.run_id: r for r in reg.runs("pipe")}
    assert {r.status for r in runs.values()} == {"done"}, [r.error for r in runs.values()]
    a, b = runs["p-t1"], runs["p-t2"]
    assert "heldout-calls/score" in a.metrics and 0.0 <= a.metrics["heldout-calls/score"] <= 1.0
    assert a.metadata["dataset_key"] == b.metadata["dataset_key"]
    assert sorted([a.metadata["dataset_built_here"], b.metadata["dataset_built_here"]]) == [False, True]
    assert a.model_params < b.model_params and a.train_flops > 0
    assert a.metadata["probe"]["coverage"] is not None
    for r in (a, b):  # seconds per stage, for finding where a run's time goes
        assert set(r.metadata["stage_s"]) == {"dataset", "train", "eval"}
        assert r.metadata["stage_s"]["train"] > 0 and r.metadata["stage_s"]["eval"] > 0
    datasets = [p for p in (tmp_path / "runs" / "datasets").iterdir() if p.name.startswith("ds-")]
    assert len(datasets) == 1
    assert list((tmp_path / "runs" / "datasets" / "train-cache").glob("tok-*.npz"))  # the SFT set tokenised, kept
    # checkpoints as data: steps 2 and 4 kept, both scored on the validation split, the chosen one and the
    # last on the test benchmark, with the tokens seen by each; the last one's test rows are the run's own
    for r in (a, b):
        assert sorted(r.checkpoints) == [2, 4]
        summary = r.metadata["checkpoints"]
        chosen = summary["chosen_step"]
        vals = {s: r.checkpoints[s]["valid-calls/bpb"] for s in (2, 4)}
        assert chosen == min(vals, key=lambda s: (vals[s], s)) and summary["validation"] == "valid-calls"
        assert 0 < r.checkpoints[2]["train/tokens"] < r.checkpoints[4]["train/tokens"] == r.train_tokens
        assert r.checkpoints[4]["heldout-calls/bpb"] == r.metrics["heldout-calls/bpb"]
        assert "heldout-calls/bpb" in r.checkpoints[chosen]
        # the chosen checkpoint's diagnostics: span types, seen tools (none: heldout-calls is on held-out
        # servers), the two baselines
        diag = r.checkpoints[chosen]
        assert diag["heldout-calls/seen_share"] == 0.0 and "heldout-calls/bpb_unseen" in diag
        assert {"heldout-calls/bpb_tool", "heldout-calls/bpb_json", "heldout-calls/bpb_uniform",
                "heldout-calls/bpb_unigram"} <= set(diag)
        assert diag["heldout-calls/bpb_unigram"] < diag["heldout-calls/bpb_uniform"]


@pytest.mark.slow
@pytest.mark.integration
def test_log_spaced_checkpoints_reach_the_run_and_its_rows(tmp_path):
    """One real run with ``[eval] checkpoint_spacing = "log"``: 3 kept of 4 steps at 1, 2, 4 (linear: 1, 3, 4),
    each scored on validation and stored as the run's checkpoint rows."""
    cfg = _pipe(tmp_path, ("t1",), 'checkpoints = 3\ncheckpoint_spacing = "log"')
    assert cfg.eval.checkpoint_spacing == "log"
    launch(cfg, cfg.experiment.registry, executor="debug")
    with Registry(cfg.experiment.registry, read_only=True) as reg:
        (run,) = reg.runs("pipe")
    assert run.status == "done", run.error
    assert sorted(run.checkpoints) == [1, 2, 4]
    assert all("valid-calls/bpb" in run.checkpoints[s] for s in (1, 2, 4))


def test_job_recipe_keeps_the_users_servers(tmp_path):
    from pipeline.job import job_recipe

    cfg = _pipe(tmp_path, ("t1",))
    synth = cfg.synth.model_copy(update={"servers": ["python -m mcp_server_git --repository /data/repo"],
                                         "arg_values": {"repo_path": ["/data/repo"]}})
    run = RunSpec(run_id="p", experiment="pipe", design_version="v", recipe={"tool_diversity": 6.0}, model_size="t1")
    recipe = job_recipe(run, cfg.model_copy(update={"synth": synth}))
    assert recipe.servers == ["python -m mcp_server_git --repository /data/repo"]
    assert recipe.arg_values == {"repo_path": ["/data/repo"]} and recipe.tool_diversity == 6
    plain = job_recipe(run, cfg)
    assert dataset_key(plain.identity()) != dataset_key(recipe.identity())
    assert "servers" not in plain.identity()  # ids of recipes without servers are unchanged


def test_job_recipe_carries_the_llm_roles(tmp_path):
    from pipeline.job import job_recipe
    from toolscale.config import LLMRoleSpec

    cfg = _pipe(tmp_path, ("t1",))
    judge = LLMRoleSpec(base_url="http://127.0.0.1:8000/v1", model="q", price_in=0.15, concurrency=16)
    with_llm = cfg.model_copy(update={"synth": cfg.synth.model_copy(update={"llm": {"judge": judge}})})
    run = RunSpec(run_id="p", experiment="pipe", design_version="v", recipe={"tool_diversity": 6.0}, model_size="t1")
    recipe = job_recipe(run, with_llm)
    assert recipe.llm == {"judge": judge}
    assert dataset_key(recipe.identity()) != dataset_key(job_recipe(run, cfg).identity())
    cheaper = with_llm.model_copy(update={"synth": with_llm.synth.model_copy(update={"llm": {
        "judge": judge.model_copy(update={"price_in": 0.0, "concurrency": 2})}})})
    assert job_recipe(run, cheaper).identity() == recipe.identity()  # price and concurrency do not change the data


@pytest.mark.slow
@pytest.mark.integration
def test_a_code_experiment_runs_end_to_end(tmp_path):
    """``experiment.domain = "code"``: the same job builds a code dataset (tests replayed in the jail), probes it,
    trains and scores both code benchmarks (bpb and pass rate)."""
    text = PIPE_CONFIG.format(root=tmp_path).replace('name = "pipe"', 'name = "pipe"\ndomain = "code"')
    text = text.replace('name = "task_count"', 'name = "spec_dependency"').replace(
        'unit = "tasks"\nmin = 16\nmax = 32\ninteger = true', 'kind = "quality"\nunit = "fraction"\nmin = 0.0\n'
        'max = 1.0\nspacing = "linear"').replace('kind = "diversity"\nkind = "quality"', 'kind = "quality"')
    text = text.replace('benchmarks = ["heldout-calls"]\nlimit = 4', 'limit = 4\ngenerate_limit = 2')
    path = tmp_path / "code.toml"
    path.write_text(text)
    cfg = load_config(path)
    assert cfg.eval.benchmarks == ["code-indist", "code-heldout-apis"]
    with Registry(cfg.experiment.registry) as reg:
        reg.ensure_experiment("pipe", axes=["tool_diversity", "spec_dependency"])
        reg.add_runs([RunSpec(run_id="c-t1", experiment="pipe", design_version="v",
                              recipe={"tool_diversity": 6.0, "spec_dependency": 0.5}, model_size="t1")])
    launch(cfg, cfg.experiment.registry, executor="debug")
    with Registry(cfg.experiment.registry, read_only=True) as reg:
        (run,) = reg.runs("pipe")
    assert run.status == "done", run.error
    for b in ("code-indist", "code-heldout-apis"):
        assert run.metrics[f"{b}/bpb"] > 0 and 0.0 <= run.metrics[f"{b}/score"] <= 1.0
    assert run.metadata["measured"]["golden_pass_rate"] == 1.0
    assert run.metadata["probe"]["coverage"] is not None


def _legacy_probe_extra(manifest, train_flops):
    """What ``run_pipeline`` stored under ``extra["probe"]`` before it returned a RunOutcome (the reference)."""
    probe = manifest.get("probe") or {}
    cost = probe.get("cost") or {}
    flops = cost.get("total_flops")
    return {"measured_groundedness": probe.get("measured_groundedness"),
            "symbolic_groundedness": probe.get("symbolic_groundedness"),
            "coverage": probe.get("coverage"), "agreement": probe.get("agreement"),
            "probe_reliable": probe.get("probe_reliable"), "kind": probe.get("kind"),
            "balanced_accuracy": (probe.get("calibration") or {}).get("balanced_accuracy"),
            "probe_flops": flops,
            "probe_cost_share": (flops / train_flops) if flops is not None and train_flops else None}


MANIFESTS = [
    {"dataset_id": "d-1", "probe": {"measured_groundedness": 0.625, "symbolic_groundedness": 0.7, "coverage": 0.4,
                                    "agreement": 0.9, "probe_reliable": True, "kind": "lm", "n_actions": 12,
                                    "calibration": {"balanced_accuracy": 0.85, "threshold": 0.5},
                                    "cost": {"total_flops": 3.0e9, "share": 0.01}}},
    {"dataset_id": "d-2", "probe": {"measured_groundedness": None, "symbolic_groundedness": None, "coverage": 0.0,
                                    "agreement": None, "probe_reliable": None, "kind": "copy", "calibration": None,
                                    "cost": {"total_flops": 0.0}}},
    {"dataset_id": "d-3"},
]


@pytest.mark.parametrize("manifest", MANIFESTS)
def test_run_outcome_gives_the_result_extra_the_dict_outcome_gave(tmp_path, manifest):
    """A RunOutcome stores the same result (and the same registry metadata JSON) as the dict it replaced."""
    import json

    from grid.models import MetricResult, RunOutcome, TrainStats
    from grid.results import read_results, write_result
    from pipeline.job import _probe_summary
    from slurm.job import _outcome_to_result

    run = RunSpec(run_id="r-1", experiment="e", design_version="v", recipe={"tool_diversity": 4.0}, model_size="t1")
    stats = TrainStats(params=1e6, train_tokens=1e7, train_flops=6e13)
    metrics = [MetricResult(benchmark="heldout-calls", score=0.5, n_items=4)]
    rest = {"dataset_key": "ds-x", "tokenizer": "shared", "stage_s": {"dataset": 1.0}}
    legacy = {"metrics": metrics, "train": stats, "dataset_id": manifest.get("dataset_id"),
              "extra": {**rest, "probe": _legacy_probe_extra(manifest, stats.train_flops)}}
    typed = RunOutcome(metrics=metrics, train=stats, dataset_id=manifest.get("dataset_id"),
                       probe=_probe_summary(manifest, stats.train_flops), extra=rest)
    runner_extra = {"job_kind": "pipeline", "requeues": 0}
    old = _outcome_to_result(run, legacy, "j-1", runner_extra)
    new = _outcome_to_result(run, typed, "j-1", runner_extra)
    assert new.model_copy(update={"finished_at": old.finished_at}) == old
    assert json.dumps(new.extra, sort_keys=True) == json.dumps(old.extra, sort_keys=True)  # the registry's JSON
    write_result(tmp_path, new)
    back = read_results(tmp_path)[0][0][0]
    assert back.extra == old.model_validate_json(old.model_dump_json()).extra


def test_the_other_ranks_outcome_stores_what_the_dict_did():
    from grid.models import RunOutcome, TrainStats
    from slurm.job import _outcome_to_result

    run = RunSpec(run_id="r-1", experiment="e", design_version="v", recipe={}, model_size="t1")
    stats = TrainStats(params=1.0, train_tokens=2.0, train_flops=12.0)
    old = _outcome_to_result(run, {"metrics": [], "train": stats, "dataset_id": "ds-1"}, None, {"requeues": 0})
    new = _outcome_to_result(run, RunOutcome(metrics=[], train=stats, dataset_id="ds-1"), None, {"requeues": 0})
    assert new.model_copy(update={"finished_at": old.finished_at}) == old
