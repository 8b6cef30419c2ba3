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
