from __future__ import annotations

import pytest

from probes.cost import probe_cost
from toolscale.errors import UsageError


def test_cost_share_from_known_flops():
    c = probe_cost(params=1e6, train_tokens=1e5, score_tokens=5e5, target_train_flops=1e14, budget_share=0.05)
    assert c.train_flops == pytest.approx(6e11)
    assert c.score_flops == pytest.approx(1e12)
    assert c.total_flops == pytest.approx(1.6e12)
    assert c.share == pytest.approx(0.016) and c.within_budget
    over = probe_cost(params=1e6, train_tokens=1e6, score_tokens=0, target_train_flops=1e11)
    assert over.share == pytest.approx(60.0) and over.within_budget is False


def test_unknown_target_leaves_share_empty():
    c = probe_cost(params=10, train_tokens=1, score_tokens=1, target_train_flops=None)
    assert c.share is None and c.within_budget is None and c.total_flops == 80


def test_bad_target_rejected():
    with pytest.raises(UsageError, match="target_train_flops must be a positive number of FLOPs, got -1"):
        probe_cost(params=1, train_tokens=1, score_tokens=1, target_train_flops=-1)


def test_a_probe_that_spends_nothing_has_share_zero_even_without_a_target():
    c = probe_cost(params=0, train_tokens=0, score_tokens=0, target_train_flops=None, target="rung tiny-l")
    assert c.share == 0.0 and c.within_budget and c.target == "rung tiny-l"
    spent = probe_cost(params=10, train_tokens=5, score_tokens=0, target_train_flops=None)
    assert spent.share is None and spent.within_budget is None
