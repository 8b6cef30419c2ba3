"""The pure part of verification: arms -> runs, runs -> realised against predicted, seed intervals."""

from __future__ import annotations

import pytest
from scipy.stats import t

from allocator.models import AllocationPlan, CostModel, AxisCost, Decision, Optimality, Plan, Budget
from allocator.verification import (arms_of, group_name, realised_levels, summarise, t_interval,
                                    verification_runs)
from grid.models import RunRecord

COST = CostModel(unit="usd", axes=[AxisCost(name="tool_diversity", per_unit=100.0),
                                   AxisCost(name="task_count", per_unit=1.0)])


def _plan(levels, score):
    spend = COST.spend(levels, 1e6)
    return Plan(levels=levels, spend=spend, total_cost=sum(spend.values()), predicted_score=score)


def _allocation() -> AllocationPlan:
    opt = Optimality(marginal_per_cost={}, interior=[], at_bound={}, max_relative_gap=0.0, budget_binding=True, ok=True)
    return AllocationPlan(budget=Budget(value=1000.0), benchmark="b", model_params=1e6,
                          plan=_plan({"tool_diversity": 6.0, "task_count": 300.0}, 0.30), interval=(0.28, 0.32),
                          baseline=_plan({"tool_diversity": 4.0, "task_count": 500.0}, 0.25),
                          baseline_interval=(0.23, 0.27), gain_over_baseline=0.05, gain_interval=(0.03, 0.07),
                          decision=Decision(verdict="recommend", reason="gain"), marginal_value={}, optimality=opt,
                          extrapolation=False)


def _record(spec, status="done", score=None, **meta):
    return RunRecord(run_id=spec.run_id, experiment=spec.experiment, design_version=spec.design_version,
                     recipe=spec.recipe, model_size=spec.model_size, model_params=spec.model_params,
                     train_tokens=spec.train_tokens, train_flops=spec.train_flops, seed=spec.seed, status=status,
                     attempts=1, job_id=None, split=spec.split, error=None if status == "done" else "x\nBoom",
                     source="verification", metadata={**spec.metadata, **meta},
                     metrics={} if score is None else {"b/token_prob": score})


def _arms(seeds=(0, 1, 2)):
    plan = _allocation()
    equal = _plan({"tool_diversity": 5.0, "task_count": 450.0}, 0.27)
    arms = arms_of(plan, equal, (0.25, 0.29), seeds=list(seeds))
    group = group_name("exp", "b", 1000.0, "s", arms)
    return plan, verification_runs(arms, group=group, model_size="s", model_params=1e6, train_tokens=1e5,
                                   verifies="exp"), group


def test_t_interval_matches_the_student_t_formula() -> None:
    lo, hi = t_interval([1.0, 2.0, 4.0])
    half = t.ppf(0.95, 2) * 1.5275252316519468 / 3 ** 0.5
    assert (lo, hi) == pytest.approx((7 / 3 - half, 7 / 3 + half))
    assert t_interval([1.0]) is None and t_interval([1.0, None]) is None


def test_runs_of_the_group_are_deterministic_and_never_fitted() -> None:
    _, (arms, specs), group = _arms()
    _, (arms2, specs2), group2 = _arms()
    assert group == group2 and group.startswith("exp.verify-")
    assert [s.run_id for s in specs] == [s.run_id for s in specs2] and len({s.run_id for s in specs}) == 9
    assert {s.split for s in specs} == {"heldout"} and {s.metadata["arm"] for s in specs} == {
        "allocator", "diversity_only", "equal_spend"}
    assert arms[0].run_ids == [s.run_id for s in specs[:3]]
    _, _, other = _arms(seeds=(0,))
    assert other != group


def test_realised_levels_price_what_the_pipeline_measured() -> None:
    lv = realised_levels({"tool_diversity": 6.0, "task_count": 300.0, "repair_rate": 0.5},
                         {"measured": {"tool_diversity": 5.0, "task_count": 280.0}, "counts": {"trajectories": 310}})
    assert lv == {"tool_diversity": 5.0, "task_count": 310.0, "repair_rate": 0.5}


def test_summary_pairs_seeds_and_checks_the_interval() -> None:
    plan, (arms, specs), group = _arms()
    alloc = dict(zip((0, 1, 2), (0.31, 0.29, 0.33)))
    div = dict(zip((0, 1, 2), (0.26, 0.25, 0.27)))
    records = []
    for s in specs:
        v = {"allocator": alloc, "diversity_only": div}.get(s.metadata["arm"], {0: 0.2, 1: 0.2, 2: 0.2})[s.seed]
        records.append(_record(s, score=v, measured={"tool_diversity": s.recipe["tool_diversity"] - 1}))
    rep = summarise(experiment="exp", group=group, benchmark="b", metric="token_prob", plan=plan, arms=arms,
                    runs=records, cost=COST, model_size="s", law="additive", fit_id="f",
                    simulated=False, decision=plan.decision)
    gains = [alloc[s] - div[s] for s in (0, 1, 2)]
    assert rep.realised_gain == pytest.approx(sum(gains) / 3)
    assert rep.realised_gain_ci == pytest.approx(t_interval(gains))
    assert rep.inside_interval is True and rep.complete and not rep.problems
    assert rep.arms[0].realised_mean == pytest.approx(0.31) and rep.arms[0].synthesis_cost == pytest.approx(
        100 * 5 + 300)
    # a failed run: reported, left out of the gain, the report incomplete
    records[1] = _record(specs[1], status="failed")
    rep = summarise(experiment="exp", group=group, benchmark="b", metric="token_prob", plan=plan, arms=arms,
                    runs=records, cost=COST, model_size="s", law="additive", fit_id="f",
                    simulated=False, decision=plan.decision)
    assert not rep.complete and "is failed: Boom" in rep.problems[0]
    assert rep.realised_gain == pytest.approx((gains[0] + gains[2]) / 2) and rep.arms[0].realised_scores[1] is None


def test_verification_trains_the_rung_as_the_experiment_did() -> None:
    """Steps and learning rate come from the experiment's largest-D run at that rung (not the rung's defaults)."""
    from allocator.verification import training_template
    from grid.models import RunSpec

    def run(rid, size, tokens, **meta):
        spec = RunSpec(run_id=rid, experiment="exp", design_version="d", recipe={"tool_diversity": 4.0},
                       model_size=size, model_params=1e5, train_tokens=tokens, train_flops=6e5 * tokens, seed=0,
                       split="heldout", metadata=meta)
        return _record(spec, score=0.1)

    runs = [run("a", "l", 2e5, max_steps=50, learning_rate=0.02, tokens_per_param=2.0),
            run("b", "l", 2e6, max_steps=975, learning_rate=0.0093, tokens_per_param=20.0),
            run("c", "m", 9e5, max_steps=220, learning_rate=0.024, tokens_per_param=20.0)]
    n, d, training = training_template(runs, "l")
    assert (n, d) == (1e5, 2e6) and training == {"max_steps": 975, "learning_rate": 0.0093, "tokens_per_param": 20.0}
    assert training_template(runs, "xl") is None
    plan = _allocation()
    arms = arms_of(plan, _plan({"tool_diversity": 5.0, "task_count": 450.0}, 0.27), None, seeds=[0])
    g0, g1 = group_name("exp", "b", 1000.0, "l", arms), group_name("exp", "b", 1000.0, "l", arms, training)
    assert g0 != g1  # a fixed training recipe never reuses runs trained another way
    _, specs = verification_runs(arms, group=g1, model_size="l", model_params=n, train_tokens=d, verifies="exp",
                                 training=training)
    assert all(s.metadata["max_steps"] == 975 and s.metadata["learning_rate"] == 0.0093 for s in specs)
    assert all(s.train_tokens == 2e6 for s in specs)


def test_a_loss_is_verified_in_its_own_unit_and_a_gain_is_a_reduction() -> None:
    plan = _allocation().model_copy(update={"plan": _plan({"tool_diversity": 6.0, "task_count": 300.0}, -1.5),
                                            "interval": (-1.6, -1.4),
                                            "baseline": _plan({"tool_diversity": 4.0, "task_count": 500.0}, -1.7),
                                            "baseline_interval": (-1.8, -1.6), "gain_over_baseline": 0.2,
                                            "gain_interval": (0.1, 0.3)})
    arms = arms_of(plan, _plan({"tool_diversity": 5.0, "task_count": 450.0}, -1.6), (-1.7, -1.5), seeds=[0, 1],
                   sign=-1.0)
    assert arms[0].predicted_score == 1.5 and arms[0].predicted_interval == (1.4, 1.6)
    group = group_name("exp", "b", 1000.0, "s", arms)
    arms, specs = verification_runs(arms, group=group, model_size="s", model_params=1e6, train_tokens=1e5,
                                    verifies="exp")
    bpb = {"allocator": [1.45, 1.55], "diversity_only": [1.70, 1.72], "equal_spend": [1.6, 1.6]}
    runs = []
    for s in specs:
        rec = _record(s)
        runs.append(rec.model_copy(update={"metrics": {"b/bpb": bpb[s.metadata["arm"]][s.seed]}}))
    rep = summarise(experiment="exp", group=group, benchmark="b", metric="bpb", plan=plan, arms=arms, runs=runs,
                    cost=COST, model_size="s", law="chinchilla_unique", fit_id="f", simulated=False,
                    decision=plan.decision, sign=-1.0)
    assert rep.realised_gain == pytest.approx(((1.70 - 1.45) + (1.72 - 1.55)) / 2)  # lower bpb is the gain
    assert rep.inside_interval is True  # 0.21 lies in the predicted (0.1, 0.3)


def test_a_plan_equal_to_the_diversity_only_plan_shares_its_runs_and_gains_exactly_zero() -> None:
    same = _plan({"tool_diversity": 6.0, "task_count": 300.0}, 0.30)
    plan = _allocation().model_copy(update={"baseline": same, "gain_over_baseline": 0.0, "gain_interval": (0.0, 0.0),
                                            "decision": Decision(verdict="no_decision", reason="one recipe")})
    arms = arms_of(plan, _plan({"tool_diversity": 5.0, "task_count": 450.0}, 0.27), (0.25, 0.29), seeds=[0, 1])
    group = group_name("exp", "b", 1000.0, "s", arms)
    arms, specs = verification_runs(arms, group=group, model_size="s", model_params=1e6, train_tokens=1e5,
                                    verifies="exp")
    assert arms[0].run_ids == arms[1].run_ids and len(specs) == 4  # 2 shared + 2 equal-spend, no duplicate id
    assert len({s.run_id for s in specs}) == 4
    records = [_record(s, score=0.3 + 0.01 * s.seed) for s in specs]
    rep = summarise(experiment="exp", group=group, benchmark="b", metric="token_prob", plan=plan, arms=arms,
                    runs=records, cost=COST, model_size="s", law="additive", fit_id="f", simulated=False,
                    decision=plan.decision)
    # a gain of exactly 0 between one recipe and itself proves nothing: not counted as a check, and said so
    assert rep.realised_gain == 0.0 and rep.inside_interval is None and rep.complete
    assert "not counted as a check" in rep.notes[0]


def test_the_comparison_adds_the_realised_gains_seed_variance() -> None:
    from allocator.verification import comparison_interval

    # predicted gain 0.05 in [0.03, 0.07]; seed SD 0.1 over K = 3 paired seeds: noise half-width 1.645 x 0.0816
    lo, hi = comparison_interval(0.05, (0.03, 0.07), 0.1, 3)
    noise = 1.6448536 * (2 * 0.1 ** 2 / 3) ** 0.5
    assert lo == pytest.approx(0.05 - (0.02 ** 2 + noise ** 2) ** 0.5, rel=1e-6)
    assert hi == pytest.approx(0.05 + (0.02 ** 2 + noise ** 2) ** 0.5, rel=1e-6)
    assert comparison_interval(0.05, (0.03, 0.07), None, 3) == (0.03, 0.07)
    assert comparison_interval(0.05, None, 0.1, 3) is None
    # asymmetric intervals keep their asymmetry, each side widened in quadrature
    lo, hi = comparison_interval(0.0, (-0.01, 0.03), 0.0, 3)
    assert (lo, hi) == pytest.approx((-0.01, 0.03))


def test_a_gain_outside_the_noise_free_interval_can_be_inside_once_seed_noise_counts() -> None:
    plan, (arms, specs), group = _arms()
    scores = {"allocator": [0.40, 0.20, 0.33], "diversity_only": [0.25, 0.26, 0.24], "equal_spend": [0.2, 0.2, 0.2]}
    runs = [_record(s, score=scores[s.metadata["arm"]][s.seed]) for s in specs]
    rep = summarise(experiment="exp", group=group, benchmark="b", metric="token_prob", plan=plan, arms=arms,
                    runs=runs, cost=COST, model_size="s", law="additive", fit_id="f", simulated=False,
                    decision=plan.decision)
    assert rep.realised_gain == pytest.approx(0.06) and rep.seed_sd is not None
    assert rep.seed_sd_source == "pooled within the arms' seeds"
    lo, hi = rep.comparison_interval
    assert lo < 0.03 and hi > 0.07 and rep.inside_interval is True  # the seeds' spread widens the check


def test_the_best_observed_recipe_is_an_arm_and_the_plan_is_compared_with_it() -> None:
    obs = _plan({"tool_diversity": 4.0, "task_count": 800.0}, 0.28)
    plan = _allocation().model_copy(update={"best_observed": obs, "best_observed_interval": (0.26, 0.30),
                                            "gain_over_best_observed": 0.02,
                                            "best_observed_gain_interval": (0.005, 0.035)})
    arms = arms_of(plan, _plan({"tool_diversity": 5.0, "task_count": 450.0}, 0.27), (0.25, 0.29), seeds=[0, 1],
                   names=["allocator", "best_observed"])
    assert [a.name for a in arms] == ["allocator", "best_observed"] and arms[1].levels == obs.levels
    group = group_name("exp", "b", 1000.0, "s", arms)
    arms, specs = verification_runs(arms, group=group, model_size="s", model_params=1e6, train_tokens=1e5,
                                    verifies="exp")
    scores = {"allocator": [0.30, 0.32], "best_observed": [0.31, 0.33]}
    runs = [_record(s, score=scores[s.metadata["arm"]][s.seed]) for s in specs]
    rep = summarise(experiment="exp", group=group, benchmark="b", metric="token_prob", plan=plan, arms=arms,
                    runs=runs, cost=COST, model_size="s", law="additive", fit_id="f", simulated=False,
                    decision=plan.decision)
    assert rep.realised_gain_best_observed == pytest.approx(-0.01) and rep.predicted_gain_best_observed == 0.02
    assert rep.realised_gain is None  # no diversity-only arm trained
    assert rep.comparison_interval_best_observed[0] < 0.005 and rep.inside_interval_best_observed is not None
