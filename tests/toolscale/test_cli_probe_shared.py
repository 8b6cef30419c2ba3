"""`toolscale probe-shared`: the amortised lm probe from the command line (issue 18, item 1)."""

from __future__ import annotations

import json

import pytest

from probes.models import SharedProbeReport
from probes.toydata import make_dataset, write_dataset
from toolscale.cli import main

CONFIG = """
[experiment]
name = "shared-probe"
registry = "r.duckdb"

[[axes]]
name = "tool_diversity"
kind = "diversity"
unit = "tools"
min = 4
max = 40
levels = 2
integer = true

[[ladder]]
name = "t"
hidden_size = 32
num_layers = 1
max_steps = 10

[probe]
kind = "copy"
hidden_size = 32
num_layers = 1
num_heads = 2
vocab_size = 320
max_seq_len = 128
batch_size = 4
train_steps = 3
sample_size = 12
"""


def test_probe_shared_scores_each_dataset_with_a_probe_that_never_saw_it(tmp_path, capsys):
    import torch

    torch.set_num_threads(1)
    dirs = []
    for n in range(3):
        d = tmp_path / f"d{n}"
        write_dataset(make_dataset(6, defect_rate=0.5, seed=n, id_digits=2), str(d))
        dirs.append(str(d))
    cfg = tmp_path / "c.toml"
    cfg.write_text(CONFIG)
    assert main(["probe-shared", *dirs, "--out", str(tmp_path / "probe"), "--experiment-flops", "1e12",
                 "--config", str(cfg), "--json"]) == 0
    rep = SharedProbeReport.model_validate(json.loads(capsys.readouterr().out))
    assert set(rep.summaries) == set(dirs) and len(rep.shared.trained_on) == 2  # kind lm, whatever [probe] says
    for d, s in rep.summaries.items():
        assert d not in rep.shared.trained_on[rep.shared.models[d]]
        assert s.kind == f"hf:{rep.shared.models[d]}" and s.probe_cost_share == pytest.approx(s.cost.score_flops / 1e12)
    assert rep.train_share == pytest.approx(rep.shared.train_flops / 1e12) and rep.train_share > 0


@pytest.mark.parametrize("extra,needle", [([], "at least 2 dataset folders"), (["NOPE"], "no train.jsonl")])
def test_probe_shared_bad_input_is_one_line(tmp_path, capsys, extra, needle):
    d = tmp_path / "d0"
    write_dataset(make_dataset(4, defect_rate=0.5, seed=0, id_digits=2), str(d))
    args = [str(d), *[str(tmp_path / e) for e in extra]]
    assert main(["probe-shared", *args, "--out", str(tmp_path / "p"), "--experiment-flops", "1e12"]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1
