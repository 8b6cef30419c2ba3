"""eval/checkpoints.py: a run's checkpoints scored on validation items (likelihood only), the lowest kept."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from eval.backends import TransformersBackend  # noqa: E402
from eval.checkpoints import choose_checkpoint, score_likelihood  # noqa: E402
from eval.heldout import build_heldout_calls  # noqa: E402
from toolscale.errors import UsageError  # noqa: E402

from .tiny_model import save_tiny_model  # noqa: E402


@pytest.fixture(scope="module")
def items():
    return build_heldout_calls(calls_per_domain=3, parallel_per_domain=1, irrelevant_per_domain=1)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, items):
    """Three 'checkpoints' of one run: the same tokenizer, different weights (seeds)."""
    root = tmp_path_factory.mktemp("run")
    for step, seed in ((30, 3), (10, 1), (20, 2)):
        save_tiny_model(root / f"checkpoint-{step}", items, seed=seed)
    return root


def test_the_lowest_validation_bpb_is_chosen_and_every_checkpoint_is_reported(run_dir, items, tmp_path):
    folders = list(run_dir.glob("checkpoint-*"))
    choice = choose_checkpoint(folders, "heldout-calls", items=items, limit=6, cache_dir=tmp_path, threads=1)
    assert [s.step for s in choice.scores] == [10, 20, 30]
    alone = {}
    for f in folders:  # each checkpoint scored on its own, without the shared tokenizer or cache
        rows = score_likelihood(TransformersBackend(str(f), threads=1), "heldout-calls", items=items, limit=6)
        alone[str(f)] = next(m.score for m in rows if m.metric == "bpb")
    assert {s.checkpoint: s.score for s in choice.scores} == pytest.approx(alone, rel=1e-6)
    assert choice.chosen == min(alone, key=alone.get)
    assert len({s.score for s in choice.scores}) == 3  # not a tie: the choice is decided
    assert all(s.n_items == choice.scores[0].n_items for s in choice.scores)
    assert choice.metric == "bpb" and choice.benchmark == "heldout-calls"


def test_choosing_by_loss_and_a_tie_goes_to_the_earliest_step(run_dir, items, tmp_path):
    import shutil

    twin = tmp_path / "checkpoint-5"
    shutil.copytree(run_dir / "checkpoint-20", twin)  # the same weights at an earlier step
    choice = choose_checkpoint([run_dir / "checkpoint-20", twin], "heldout-calls", items=items, limit=4,
                               metric="loss", threads=1)
    assert choice.scores[0].score == choice.scores[1].score and choice.chosen == str(twin)


def test_bad_input_is_refused_with_the_value(run_dir, items, tmp_path):
    with pytest.raises(UsageError, match="at least one checkpoint"):
        choose_checkpoint([], "heldout-calls", items=items)
    with pytest.raises(UsageError, match="not found: .*checkpoint-99"):
        choose_checkpoint([run_dir / "checkpoint-99"], "heldout-calls", items=items)
    with pytest.raises(UsageError, match="metric must be one of bpb, loss, got 'score'"):
        choose_checkpoint([run_dir / "checkpoint-10"], "heldout-calls", items=items, metric="score")
    with pytest.raises(UsageError, match="heldout-env.*has env items"):
        choose_checkpoint([run_dir / "checkpoint-10"], "heldout-env")
