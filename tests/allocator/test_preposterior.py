"""The preposterior criterion on toy ensembles whose answers are known: what a run tells, what it costs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from allocator.preposterior import CostBook, Ensemble, effect_gains, select_runs, weighted_measures


def _book(n: int, data: list[float] | None = None, compute: list[float] | None = None) -> CostBook:
    """One recipe per candidate, one cell, no dataset yet."""
    return CostBook(np.arange(n), np.zeros(n, dtype=int), np.array(data or [1.0] * n),
                    np.array(compute or [0.0] * n), {}, set(), 0)


def _toy(b: int = 400, seed: int = 0, noise: float = 0.01) -> Ensemble:
    """A gain g ~ N(0.05, 0.02^2) over draws; candidate 0 measures g itself, 1 measures g/4, 2 measures an
    unrelated quantity; plans: the plan (score g) and a rival (score 0), so a draw with g < 0 regrets the plan."""
    rng = np.random.default_rng(seed)
    g = rng.normal(0.05, 0.02, b)
    other = rng.normal(0.5, 0.02, b)
    preds = np.column_stack([0.5 + g, 0.5 + g / 4, other])
    scores = np.column_stack([g, np.zeros(b)])
    return Ensemble(gains=g, scores=scores, preds=preds, noise_var=np.full(3, noise ** 2),
                    cand_n=np.full(3, 1e6), target_n=1e6)


def test_uniform_weights_give_the_percentile_resolution_and_the_mean_regret() -> None:
    ens = _toy()
    m = weighted_measures(np.zeros((1, 1, ens.n_draws)), ens.gains[None], ens.scores, ens.scores.max(axis=1))
    assert m["p_resolved"][0] == float(np.percentile(ens.gains, 5) > 0)
    shifted = ens.gains - np.percentile(ens.gains, 5) + 1e-3   # 5th percentile just above 0: resolved
    assert weighted_measures(np.zeros((1, 1, ens.n_draws)), shifted[None], ens.scores, ens.scores.max(axis=1)
                             )["p_resolved"][0] == 1.0
    assert weighted_measures(np.zeros((1, 1, ens.n_draws)), (shifted - 2e-3)[None], ens.scores,
                             ens.scores.max(axis=1))["p_resolved"][0] == 0.0
    # the plan (mean g > 0) is kept; regret = mean over draws of max(0, -g)
    assert m["regret"][0] == pytest.approx(np.mean(np.maximum(-ens.gains, 0.0)), rel=1e-9)
    assert m["ess"][0] == pytest.approx(ens.n_draws)


def test_the_informative_run_is_chosen_and_its_expected_width_matches_the_gaussian_posterior() -> None:
    ens = _toy(b=2000)
    sel = select_runs(ens, _book(3), 1, sims=200)
    assert sel.steps[0].index == 0  # measures the gain itself
    # linear-Gaussian: posterior SD of g after one result of noise 0.01 on 0.5 + g, g's SD 0.02
    sd = math.sqrt(1 / (1 / 0.02 ** 2 + 1 / 0.01 ** 2))
    assert sel.steps[0].width == pytest.approx(2 * 1.645 * sd, rel=0.12)
    assert sel.steps[0].width < 0.5 * sel.width_now
    assert sel.steps[0].regret < sel.regret_now


def test_a_run_that_tells_nothing_about_the_gain_leaves_the_width() -> None:
    ens = _toy(b=2000)
    only_other = Ensemble(gains=ens.gains, scores=ens.scores, preds=ens.preds[:, 2:], noise_var=ens.noise_var[2:],
                          cand_n=ens.cand_n[2:], target_n=ens.target_n)
    sel = select_runs(only_other, _book(1), 1, sims=200)
    assert sel.steps[0].width == pytest.approx(sel.width_now, rel=0.1)


def test_cost_decides_between_equally_informative_runs() -> None:
    ens = _toy()
    twin = Ensemble(gains=ens.gains, scores=ens.scores, preds=ens.preds[:, [0, 0]], noise_var=ens.noise_var[:2],
                    cand_n=ens.cand_n[:2], target_n=ens.target_n)
    assert select_runs(twin, _book(2, data=[10.0, 1.0]), 1).steps[0].index == 1
    assert select_runs(twin, _book(2, data=[1.0, 10.0]), 1).steps[0].index == 0


def test_greedy_prefix_and_replicates_get_new_seeds() -> None:
    ens = _toy()
    five = select_runs(ens, _book(3), 5)
    three = select_runs(ens, _book(3), 3)
    assert [s.index for s in three.steps] == [s.index for s in five.steps[:3]]
    widths = [s.width for s in five.steps]
    assert widths[-1] < widths[0] < five.width_now
    seen = [(s.index, s.seed) for s in five.steps]
    assert len(set(seen)) == len(seen)  # the same candidate twice is a replicate with another seed


def test_max_cost_caps_the_batch_and_refuses_when_nothing_fits() -> None:
    ens = _toy()
    sel = select_runs(ens, _book(3, data=[3.0, 3.0, 3.0]), 5, max_cost=7.0)
    assert len(sel.steps) == 2 and sum(s.data_cost for s in sel.steps) <= 7.0
    assert "stopped after 2 of 5 runs" in sel.notes[0]
    with pytest.raises(ValueError, match="no candidate run costs at most 2"):
        select_runs(ens, _book(3, data=[3.0, 3.0, 3.0]), 1, max_cost=2.0)


def test_cost_book_reuses_a_dataset_across_cells() -> None:
    # recipe 0 at cells 0 and 1, recipe 1 at cell 0; recipe 1 has data for seed 4 (a run at cell 1)
    book = CostBook(np.array([0, 0, 1]), np.array([0, 1, 0]), np.array([100.0, 50.0]), np.array([1.0, 2.0, 1.0]),
                    {1: [4]}, {(1, 1, 4)}, 5)
    assert book.costs().tolist() == [101.0, 102.0, 1.0]
    assert book.take(2) == (4, False, 0.0, 1.0)  # reuses seed 4's dataset at a new cell
    assert book.take(0) == (5, True, 100.0, 1.0)  # a new dataset (new seed)...
    assert book.costs().tolist() == [101.0, 2.0, 51.0]  # ...which recipe 0's other cell now reuses
    assert book.take(1) == (5, False, 0.0, 2.0)


def test_a_run_at_the_plans_size_removes_the_effect_error() -> None:
    rng = np.random.default_rng(1)
    g = rng.normal(0.05, 0.005, 300)
    ens = Ensemble(gains=g, scores=np.column_stack([g, np.zeros(300)]), preds=rng.normal(0.5, 0.01, (300, 2)),
                   noise_var=np.full(2, 1e-4), cand_n=np.array([1e6, 1e8]), target_n=1e8, effect_sd=0.5,
                   max_fitted_n=1e6, z=rng.standard_normal(300))
    now, at_target = effect_gains(ens, np.array([0.0, 1e8]))
    assert np.allclose(at_target, g) and np.std(now) > 2 * np.std(g)
    sel = select_runs(ens, _book(2), 1, sims=100)
    assert sel.steps[0].index == 1 and sel.steps[0].width < 0.5 * sel.width_now


def _sized(rng: np.random.Generator, sizes=(1e6, 1e8), **rung) -> Ensemble:
    g = rng.normal(0.05, 0.005, 300)
    c = len(sizes)
    return Ensemble(gains=g, scores=np.column_stack([g, np.zeros(300)]), preds=rng.normal(0.5, 0.01, (300, c)),
                    noise_var=np.full(c, 1e-4), cand_n=np.array(sizes), target_n=1e8, effect_sd=0.5,
                    max_fitted_n=1e8, z=rng.standard_normal(300), max_compared_n=1e6, rung_runs=3, **rung)


def test_the_effect_error_stays_until_the_plans_size_has_three_runs() -> None:
    """A size becomes a rung with 3 fitted runs: a lone run there fits one recipe's level, not the differences."""
    from allocator.preposterior import _rung_if_chosen, _State

    ens = _sized(np.random.default_rng(1), (1e6, 1e8, 1e8), sparse_runs={1e8: 1})  # one fitted run at the target
    st = _State(logw=np.zeros((1, 300)), max_n=0.0, picks={}, ya=np.zeros((300, 1)), fa=np.zeros((300, 3)),
                ga=np.zeros(300), u=0.0)
    assert _rung_if_chosen(ens, st, np.array([0, 1, 2])).tolist() == [0.0, 0.0, 0.0]  # 1 + 1 runs: not yet
    st.picks = {1: 1}
    assert _rung_if_chosen(ens, st, np.array([0, 1, 2])).tolist() == [0.0, 0.0, 1e8]  # a third, distinct run
    st.picks = {1: 2}  # a replicate adds no difference to check
    assert _rung_if_chosen(ens, st, np.array([1])).tolist() == [0.0]
    # the effect error counts from the largest rung, not from the lone run that set max_fitted_n
    now = effect_gains(ens, 0.0)[0]
    assert np.std(now) > 2 * np.std(ens.gains)
    # two runs there already: one more removes the error, and the greedy takes it
    two = _sized(np.random.default_rng(1), sparse_runs={1e8: 2})
    sel = select_runs(two, _book(2), 1, sims=100)
    assert sel.steps[0].index == 1 and sel.steps[0].width < 0.5 * sel.width_now
    # none there: one run cannot remove it
    none = select_runs(_sized(np.random.default_rng(1)), _book(2), 1, sims=100)
    assert none.steps[0].width > 0.9 * none.width_now


def test_tempering_keeps_the_effective_draws_and_leaves_out_what_was_left_out() -> None:
    rng = np.random.default_rng(3)
    logw = rng.normal(0.0, 30.0, (2, 5, 200))  # nearly all weight on one draw
    logw[0, 0, 7] = -np.inf
    from allocator.preposterior import _ess, tempered

    t = tempered(logw, 30.0)
    ess = _ess(t)
    assert np.all(ess >= 30.0 * 0.98) and np.all(ess <= 30.0 * 1.05)  # the largest tau that keeps 30
    assert t[0, 0, 7] == -np.inf
    flat = np.zeros((1, 1, 50))
    assert np.array_equal(tempered(flat, 30.0), flat)  # already above the floor: untouched
    # the order of the draws' weights is kept
    assert np.array_equal(np.argsort(t[1, 2]), np.argsort(logw[1, 2]))


def test_many_uninformative_runs_do_not_look_sure() -> None:
    """Runs that pin down a quantity unrelated to the gain collapse the raw weights onto a few draws; the width
    must stay the gain's own, not the spread of those few draws."""
    rng = np.random.default_rng(5)
    b = 200
    g = rng.normal(0.05, 0.02, b)
    other = rng.normal(0.5, 0.05, (b, 6))  # six sharp measurements of unrelated quantities
    ens = Ensemble(gains=g, scores=np.column_stack([g, np.zeros(b)]), preds=other, noise_var=np.full(6, 1e-6),
                   cand_n=np.full(6, 1e6), target_n=1e6)
    sel = select_runs(ens, _book(6), 6, sims=64)
    assert sel.steps[-1].ess < 5  # the raw weights did collapse
    assert sel.steps[-1].width == pytest.approx(sel.width_now, rel=0.05)
    assert sel.width_now == pytest.approx(2 * 1.645 * np.std(g, ddof=1), rel=1e-9)


def test_a_noiseless_candidate_that_all_draws_predict_alike_is_harmless() -> None:
    """Zero noise and zero spread over the draws: the run tells nothing, and nothing divides by zero."""
    ens = _toy(b=300)
    flat = Ensemble(gains=ens.gains, scores=ens.scores, preds=np.column_stack([ens.preds[:, 0], np.full(300, 0.5)]),
                    noise_var=np.array([1e-4, 0.0]), cand_n=ens.cand_n[:2], target_n=ens.target_n)
    sel = select_runs(flat, _book(2), 2, sims=50)
    assert all(np.isfinite([s.width, s.regret]).all() for s in sel.steps)
    assert sel.steps[0].index == 0
