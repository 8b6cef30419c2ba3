"""eval/checkpoints.py: a run's kept checkpoints scored on validation items (likelihood only), the test benchmarks
only at the chosen one and the last; through one tokenizer and the experiment's token cache, the scores are those
of each checkpoint scored alone."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from eval.backends import TransformersBackend  # noqa: E402
from eval.checkpoints import choose_step, evaluate_checkpoints  # noqa: E402
from eval.heldout import build_heldout_calls  # noqa: E402
from eval.runner import evaluate  # noqa: E402
from toolscale.config import EvalSpec  # noqa: E402

from .tiny_model import save_tiny_model  # noqa: E402


@pytest.fixture(scope="module")
def items():
    return build_heldout_calls(calls_per_domain=3, parallel_per_domain=1, irrelevant_per_domain=1)


@pytest.fixture(scope="module")
def snapshots(tmp_path_factory, items):
    """Three kept checkpoints of one run: the same tokenizer, different weights (seeds)."""
    root = tmp_path_factory.mktemp("run")
    out = []
    for step, seed in ((10, 1), (20, 2), (30, 3)):
        out.append({"step": step, "tokens": 100.0 * step,
                    "path": save_tiny_model(root / f"checkpoint-{step}", items, seed=seed)})
    return out


def _bpb(rows):
    return next(r.score for r in rows if r.metric == "bpb")


def test_the_lowest_validation_bpb_is_chosen_and_only_it_and_the_last_are_tested(snapshots, items, tmp_path):
    spec = EvalSpec(benchmarks=["heldout-calls"], validation="valid-calls", validation_limit=6, limit=4,
                    generate_limit=1)
    tokenizer = TransformersBackend._load_tokenizer(snapshots[0]["path"])  # loaded once for every checkpoint
    cache = tmp_path / "eval-cache"
    calls = []

    def score(path, bench, *, diagnostics=False, **kw):
        calls.append((path, bench, kw["score_only"]))
        backend = TransformersBackend(path, tokenizer_obj=tokenizer, threads=1, cache_dir=cache)
        return evaluate(path, bench, items=items, backend=backend, seed=0, **kw)

    rows, summary = evaluate_checkpoints(snapshots, spec, score=score)
    alone = {}  # each checkpoint on its own: its own tokenizer, no cache
    for snap in snapshots:
        got = evaluate(snap["path"], "valid-calls", items=items, limit=6, score_only=True,
                       backend=TransformersBackend(snap["path"], threads=1))
        alone[snap["step"]] = _bpb(got)
    assert summary["validation_bpb"] == pytest.approx({str(k): v for k, v in alone.items()}, rel=1e-6)
    assert len(set(alone.values())) == 3  # not a tie: the choice is decided
    chosen = min(alone, key=alone.get)
    assert summary["chosen_step"] == chosen and summary["last_step"] == 30
    paths = {s["step"]: s["path"] for s in snapshots}
    tested = {(p, b) for p, b, only_scores in calls if not only_scores}
    assert tested == {(paths[chosen], "heldout-calls"), (paths[30], "heldout-calls")}
    assert {s for s in (r.step for r in rows if r.benchmark == "heldout-calls")} == {chosen, 30, None}
    # the second checkpoint onwards read every validation item's encoding from the cache
    again = TransformersBackend(paths[20], tokenizer_obj=tokenizer, threads=1, cache_dir=cache)
    evaluate(paths[20], "valid-calls", items=items, limit=6, score_only=True, backend=again)
    assert again.cache.hits > 0 and again.cache.misses == 0


def test_a_tie_goes_to_the_earliest_step_and_no_finite_value_is_refused():
    assert choose_step({30: 1.0, 10: 1.0, 20: 2.0}) == 10
    assert choose_step({10: float("nan"), 20: 3.0}) == 20
    with pytest.raises(ValueError, match="no checkpoint has a finite validation value"):
        choose_step({10: float("nan")})
