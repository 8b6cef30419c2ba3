"""probes/shared.py: one cross-fitted lm probe per experiment, pooled across its datasets."""

from __future__ import annotations

import json

import pytest
import torch

from probes.shared import SHARED_FILE, probe_with_shared, train_shared
from probes.toydata import make_dataset, write_dataset
from toolscale.config import ProbeSpec
from toolscale.errors import UsageError

SPEC = ProbeSpec(kind="lm", hidden_size=32, num_layers=1, num_heads=2, vocab_size=320, max_seq_len=128, batch_size=4,
                 train_steps=3, sample_size=12)


def test_each_dataset_is_scored_by_a_probe_that_never_saw_it(tmp_path):
    torch.set_num_threads(1)
    dirs = []
    for n in range(3):
        d = tmp_path / f"d{n}"
        write_dataset(make_dataset(6, defect_rate=0.5, seed=n, id_digits=2), str(d))
        dirs.append(str(d))
    shared = train_shared(dirs, SPEC, tmp_path / "probe")
    assert set(shared.models) == set(dirs) and len(shared.trained_on) == 2
    for d, model in shared.models.items():
        assert d not in shared.trained_on[model]
    assert shared.train_flops == 6 * shared.params * shared.train_tokens > 0
    assert json.loads((tmp_path / "probe" / SHARED_FILE).read_text())["models"] == shared.models
    s = probe_with_shared(dirs[0], shared, SPEC, experiment_train_flops=1e14)
    assert s.kind == f"hf:{shared.models[dirs[0]]}" and s.n_scored == s.n_actions
    assert s.cost.train_flops == 0 and s.probe_cost_share == pytest.approx(s.cost.score_flops / 1e14)
    assert "experiment" in s.cost.target
    with pytest.raises(UsageError, match="at least 2 dataset folders"):
        train_shared(dirs[:1], SPEC, tmp_path / "p1")
    with pytest.raises(UsageError, match="not one of the shared probe's datasets"):
        probe_with_shared(tmp_path / "other", shared, SPEC, 1e14)
