"""`toolscale export`: the format follows the file's suffix, and the tidy long table loads as a HF dataset."""

from __future__ import annotations

from pathlib import Path

from toolscale.cli import main

SMALL = Path(__file__).resolve().parents[1] / "fit" / "small.toml"


def test_export_infers_parquet_and_the_long_table_loads_as_a_dataset(tmp_path, capsys):
    db = str(tmp_path / "r.duckdb")
    assert main(["simulate", "--config", str(SMALL), "--registry", db, "--experiment", "sim"]) == 0
    wide, long = tmp_path / "runs.parquet", tmp_path / "long.parquet"
    assert main(["export", "--registry", db, "--experiment", "sim", "--out", str(wide)]) == 0
    assert wide.read_bytes()[:4] == b"PAR1"  # Parquet, not CSV bytes under a .parquet name
    assert main(["export", "--registry", db, "--experiment", "sim", "--long", "--out", str(long)]) == 0
    import datasets

    ds = datasets.load_dataset("parquet", data_files=str(long), split="train")
    assert ds.num_rows == 108 and {"run_id", "split", "benchmark", "metric", "value", "stderr",
                                   "tool_diversity"} <= set(ds.column_names)
    assert set(ds["benchmark"]) == {"simulated"} and set(ds["split"]) == {"fit", "heldout"}
    assert main(["export", "--registry", db, "--experiment", "sim", "--out", str(tmp_path / "runs.csv")]) == 0
    assert (tmp_path / "runs.csv").read_text().startswith("run_id,")


def test_export_counts_runs_not_checkpoint_rows(tmp_path, capsys):
    # a pipeline run's scored checkpoints are rows of their own (with a step); "wrote 3 runs" counted them as runs
    from datetime import UTC, datetime

    from grid.models import MetricResult, RunResult, RunSpec, run_id_for
    from grid.registry import Registry

    db = str(tmp_path / "r.duckdb")
    recipe = {"tool_diversity": 4.0}
    spec = RunSpec(run_id=run_id_for("e1", "v1", recipe, "m", 0), experiment="e1", design_version="v1", recipe=recipe,
                   model_size="m", model_params=1e5, train_tokens=1e6, train_flops=6e11, seed=0)
    metrics = [MetricResult(benchmark="b", metric="bpb", score=2.0),
               MetricResult(benchmark="b", metric="bpb", score=2.5, step=10),
               MetricResult(benchmark="b", metric="bpb", score=2.0, step=20)]
    with Registry(db) as reg:
        reg.ensure_experiment("e1", axes=["tool_diversity"])
        reg.add_runs([spec], code="c")
        reg.ingest([(RunResult(run_id=spec.run_id, experiment="e1", status="done", metrics=metrics,
                               finished_at=datetime(2026, 1, 1, tzinfo=UTC)), "h", "r.json")])
    out = tmp_path / "runs.csv"
    assert main(["export", "--registry", db, "--out", str(out)]) == 0
    assert f"wrote 3 rows (1 run) to {out}" in capsys.readouterr().err
    assert len(out.read_text().strip().splitlines()) == 4  # header, the run, its two checkpoints


def _lmeval_checkpoints(folder: Path) -> None:
    """lm-eval results of two models at steps 1000 and 2000 (one JSON per model and step)."""
    import json

    for i, (model, n) in enumerate((("org/m-70m", 7e7), ("org/m-160m", 1.6e8))):
        for step in (1000, 2000):
            res = {"results": {"arc_easy": {"acc,none": 0.4 + 0.05 * i + step / 1e5, "acc_stderr,none": 0.01}},
                   "config": {"model_args": f"pretrained={model},revision=step{step}", "model_num_parameters": n}}
            sub = folder / model.replace("/", "__")
            sub.mkdir(parents=True, exist_ok=True)
            (sub / f"results_step{step}.json").write_text(json.dumps(res))


def test_export_has_the_step_of_runs_imported_with_checkpoints_all(tmp_path, capsys):
    """Each `<id>@<step>` run of `import-runs --checkpoints all` exports its step, in the wide and the long table,
    as CSV and as Parquet; an experiment without steps has no step column."""
    import io

    import pandas as pd

    _lmeval_checkpoints(tmp_path / "results")
    db = str(tmp_path / "r.duckdb")
    assert main(["import-runs", str(tmp_path / "results"), "--from", "lm-eval", "--experiment", "lm", "--registry", db,
                 "--map", "acc=score", "--checkpoints", "all"]) == 0
    assert main(["simulate", "--config", str(SMALL), "--registry", db, "--experiment", "sim"]) == 0
    for form in ([], ["--long"]):
        for name in ("runs.csv", "runs.parquet"):
            out = tmp_path / name
            assert main(["export", "--registry", db, "--experiment", "lm", *form, "--out", str(out)]) == 0
            frame = pd.read_parquet(out) if name.endswith(".parquet") else pd.read_csv(out)
            assert list(frame.columns[:2]) == ["run_id", "step"] and len(frame) == 4
            assert [f"{s}" for s in frame["step"]] == [r.rpartition("@")[2] for r in frame["run_id"]]
            assert set(frame["step"]) == {1000, 2000}
        assert (tmp_path / "runs.parquet").read_bytes()[:4] == b"PAR1"
        assert main(["export", "--registry", db, "--experiment", "sim", *form, "--out", str(tmp_path / "s.csv")]) == 0
        assert "step" not in pd.read_csv(tmp_path / "s.csv").columns
    capsys.readouterr()
    assert main(["export", "--registry", db, "--long"]) == 0  # both: the step is empty for runs without one
    both = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert both.loc[both["experiment"] == "sim", "step"].isna().all()
    assert both.loc[both["experiment"] == "lm", "step"].notna().all()
