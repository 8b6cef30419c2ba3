"""Checking a plan by training it: plans -> runs of a verification group, runs -> realised against predicted.

Pure: :func:`verification_runs` turns the arms (the allocator's plan, the fair
diversity-only plan and an equal-spend plan, each with integer axes rounded within
budget) into :class:`grid.models.RunSpec` rows of one verification group, K seeds
each; :func:`summarise` reads the finished runs back into a
:class:`allocator.models.VerificationReport`. Launching, waiting and storing live at
the edge (``toolscale verify``), on the same launch path as grid runs.

Statistics: per arm, the mean over seeds and its 90% Student-t interval
``mean +- t_{0.95, K-1} sd / sqrt(K)``; the realised gain is the mean of the paired
per-seed differences (allocator minus diversity-only, and allocator minus the best recipe
observed at the largest fitted rung: seed ``s`` of every arm shares the synthesis and
training seed), with the same interval over those differences.

The realised gain is noisy itself: with ``s`` the SD of one run across seeds and ``K`` paired
seeds its variance is ``2 s^2 / K`` (two independent arms). It is compared with the predicted
gain's interval widened by that noise, each side added in quadrature at the 90% level:
``lo = g - sqrt((g - lo_g)^2 + (z sqrt(2 s^2 / K))^2)`` and likewise above (:func:`comparison_interval`).
``s`` is pooled within the arms' seeds, or the fit's noise floor when no arm has two seeds. When the
allocator's and the diversity-only plan are one recipe, their gain is exactly 0 by construction and
is not counted as a check (``inside_interval`` None).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from allocator.models import (ARMS, AllocationPlan, CostModel, Decision, Plan, VerificationArm,
                              VerificationReport, signed_interval)
from toolscale.config import training_flops
from grid.models import RunRecord

__all__ = ["ARM_LABELS", "TRAINING_KEYS", "group_name", "verification_runs", "realised_levels", "summarise",
           "t_interval", "arms_of", "training_template", "comparison_interval", "pooled_arm_sd"]

ARM_LABELS = {
    "allocator": "the allocator's plan (the fitted law's optimum at this budget)",
    "diversity_only": "the fair diversity-only plan (a law over the diversity axes alone, quality at baseline)",
    "equal_spend": "an equal split of the budget across the costed axes",
    "best_observed": "the best recipe observed at the largest fitted rung within budget (DataDecide's single-scale "
                     "choice)",
}
"""What each arm is, in words."""


def t_interval(values: Sequence[float], level: float = 0.90) -> tuple[float, float] | None:
    """Student-t interval of the mean of ``values`` (None with fewer than 2 values)."""
    from scipy.stats import t

    v = np.asarray([x for x in values if x is not None], dtype=float)
    if v.size < 2:
        return None
    half = float(t.ppf(0.5 + level / 2, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size))
    m = float(v.mean())
    return m - half, m + half


def arms_of(plan: AllocationPlan, equal: Plan, equal_interval: tuple[float, float] | None,
            seeds: Sequence[int], sign: float = 1.0, names: Sequence[str] = ARMS) -> list[VerificationArm]:
    """The arms (no runs yet) among ``names``, with their predictions: the plan, the fair baseline, equal spend,
    and the best recipe observed at the largest fitted rung (left out when the plan has none).

    ``sign = -1`` for a loss: the plans' scores are the negated loss, and the arms state their
    predictions in the metric's own unit (a positive loss), as the runs will report it.
    """
    made = {"allocator": (plan.plan, plan.interval), "diversity_only": (plan.baseline, plan.baseline_interval),
            "equal_spend": (equal, equal_interval),
            "best_observed": (plan.best_observed, plan.best_observed_interval)}
    return [VerificationArm(name=name, label=ARM_LABELS[name], levels=dict(made[name][0].levels),
                            planned_cost=made[name][0].total_cost,
                            predicted_score=sign * made[name][0].predicted_score,
                            predicted_interval=signed_interval(made[name][1], sign), run_ids=[], seeds=list(seeds))
            for name in ARMS if name in names and made[name][0] is not None]


def comparison_interval(gain: float, interval: tuple[float, float] | None, seed_sd: float | None, k: int,
                        level: float = 0.90) -> tuple[float, float] | None:
    """The predicted gain's interval widened by the realised gain's own noise, variance ``2 s^2 / K``
    (module docstring); the interval unchanged without a seed SD, None without an interval."""
    if interval is None:
        return None
    if seed_sd is None or k < 1:
        return interval
    from scipy.stats import norm

    noise = float(norm.ppf(0.5 + level / 2)) * math.sqrt(2.0 * seed_sd ** 2 / k)
    lo, hi = interval
    return (gain - math.hypot(gain - lo, noise), gain + math.hypot(hi - gain, noise))


def pooled_arm_sd(per_seed: Mapping[str, Mapping[int, float]], arms: Sequence[VerificationArm]) -> float | None:
    """SD of one run across seeds pooled within the arms (each recipe once: arms sharing runs count once)."""
    groups: dict[str, list[float]] = {}
    for arm in arms:
        key = json.dumps(sorted(arm.levels.items()))
        if key not in groups and arm.name in per_seed:
            groups[key] = list(per_seed[arm.name].values())
    ss, df = 0.0, 0
    for v in groups.values():
        a = np.asarray(v, dtype=float)
        if a.size >= 2:
            ss += float(np.sum((a - a.mean()) ** 2))
            df += a.size - 1
    return math.sqrt(ss / df) if df else None


def group_name(experiment: str, benchmark: str, budget: float, model_size: str,
               arms: Sequence[VerificationArm], training: Mapping[str, Any] | None = None) -> str:
    """``<experiment>.verify-<hash>``: the same plans at the same budget, size and training give the same group."""
    parts: list[Any] = [experiment, benchmark, budget, model_size, [sorted(a.levels.items()) for a in arms],
                        sorted({s for a in arms for s in a.seeds})]
    if training:
        parts.append(sorted(training.items()))
    key = json.dumps(parts, default=str)
    return f"{experiment}.verify-{hashlib.sha256(key.encode()).hexdigest()[:10]}"


TRAINING_KEYS = ("max_steps", "learning_rate", "tokens_per_param", "token_multiplier")
"""Run metadata that decides how a run trains (steps, peak learning rate, tokens per parameter)."""


def training_template(runs: Sequence[RunRecord], model_size: str) -> tuple[float, float, dict[str, Any]] | None:
    """``(model_params, train_tokens, training metadata)`` of the experiment's largest-D run at ``model_size``.

    A verification run must train as the experiment trained that rung: the same steps (the design's
    top tokens-per-parameter cell, which is the D the allocator plans with) and the same learning rate
    (the scan's rule). None when the experiment has no run at that rung (the rung's defaults apply).
    """
    at = [r for r in runs if r.model_size == model_size and r.train_tokens]
    if not at:
        return None
    top = max(at, key=lambda r: float(r.train_tokens))
    meta = {k: top.metadata[k] for k in TRAINING_KEYS if k in (top.metadata or {})}
    return float(top.model_params or 0.0), float(top.train_tokens), meta


def verification_runs(arms: Sequence[VerificationArm], *, group: str, model_size: str, model_params: float,
                      train_tokens: float, verifies: str,
                      training: Mapping[str, Any] | None = None) -> tuple[list[VerificationArm], list[Any]]:
    """The arms with their run ids, and the :class:`grid.models.RunSpec` of every (arm, seed) run.

    Runs carry ``metadata = {"group": "verification", "arm", "verifies"}`` plus ``training``
    (:func:`training_template`: steps and learning rate as the experiment trained the rung), and
    split ``heldout`` (nothing ever fits them); their design version is the group name.
    Two arms with the same recipe (a "no decision": the plan is the diversity-only plan) share
    their runs: one run per (recipe, seed), labelled with the first arm, and a realised gain of 0.
    """
    from grid.models import RunSpec, run_id_for

    out_arms, specs, seen = [], [], set()
    for arm in arms:
        ids = []
        for seed in arm.seeds:
            rid = run_id_for(group, group, dict(arm.levels), model_size, seed)
            ids.append(rid)
            if rid in seen:
                continue
            seen.add(rid)
            specs.append(RunSpec(run_id=rid, experiment=group, design_version=group, recipe=dict(arm.levels),
                                 model_size=model_size, model_params=model_params, train_tokens=train_tokens,
                                 train_flops=training_flops(model_params, train_tokens), seed=seed, split="heldout",
                                 metadata={"group": "verification", "arm": arm.name, "verifies": verifies,
                                           **dict(training or {})}))
        out_arms.append(arm.model_copy(update={"run_ids": ids}))
    return out_arms, specs


def realised_levels(requested: Mapping[str, float], metadata: Mapping[str, Any]) -> dict[str, float]:
    """The levels the pipeline delivered, from a done run's metadata (its dataset manifest's ``measured``).

    ``task_count`` is the tasks synthesised and judged (``counts.trajectories``, what synthesis paid for)
    when the run recorded it, else the accepted tasks; an axis the manifest does not measure keeps
    its requested level.
    """
    measured = dict(metadata.get("measured") or {})
    counts = dict(metadata.get("counts") or {})
    out = {}
    for k, v in requested.items():
        out[k] = float(measured[k]) if measured.get(k) is not None else float(v)
    if counts.get("trajectories") is not None and "task_count" in out:
        out["task_count"] = float(counts["trajectories"])
    return out


def _paired(per_seed: Mapping[str, Mapping[int, float]], a: str, b: str, sign: float) -> list[float]:
    x, y = per_seed.get(a, {}), per_seed.get(b, {})
    return [sign * (x[s] - y[s]) for s in sorted(set(x) & set(y))]


def _check(gain: float | None, predicted: float | None, interval: tuple[float, float] | None, sd: float | None,
           k: int) -> tuple[tuple[float, float] | None, bool | None]:
    """``(comparison interval, inside)`` of one realised gain against its prediction."""
    if predicted is None:
        return None, None
    iv = comparison_interval(predicted, interval, sd, k)
    inside = None if gain is None or iv is None else bool(iv[0] <= gain <= iv[1])
    return iv, inside


def summarise(*, experiment: str, group: str, benchmark: str, metric: str, plan: AllocationPlan,
              arms: Sequence[VerificationArm], runs: Sequence[RunRecord], cost: CostModel, model_size: str,
              law: str, fit_id: str, simulated: bool, decision: Decision, plot: str | None = None,
              sign: float = 1.0, noise_sd: float | None = None) -> VerificationReport:
    """Realised against predicted for every arm, the realised gains with their seed intervals, and whether each
    lies inside its comparison interval (the predicted one widened by ``2 s^2 / K``, module docstring).

    Scores stay in the metric's unit; a gain is always an improvement: ``sign (allocator - other)`` per seed,
    with ``sign = -1`` for a loss (the plan's predicted gains are already in that orientation). ``noise_sd``
    (metric units) is the seed SD used when no arm ran two seeds.
    """
    by_id = {r.run_id: r for r in runs}
    filled, problems, per_seed = _fill_arms(arms, by_id, f"{benchmark}/{metric}", cost)
    sd = pooled_arm_sd(per_seed, filled)
    source = "pooled within the arms' seeds"
    if sd is None:
        sd, source = noise_sd, "the fit's noise floor (no arm ran two seeds)" if noise_sd is not None else ""
    paired = _paired(per_seed, "allocator", "diversity_only", sign)
    gain = float(np.mean(paired)) if paired else None
    notes = []
    arm = {a.name: a for a in filled}
    same = "diversity_only" in arm and arm["allocator"].levels == arm["diversity_only"].levels
    iv, inside = _check(gain, plan.gain_over_baseline, plan.gain_interval, sd, len(paired))
    if same:
        inside = None
        notes.append("the allocator's plan is the diversity-only plan (one recipe, shared runs): their gain is 0 by "
                     "construction and is not counted as a check")
    paired_b = _paired(per_seed, "allocator", "best_observed", sign)
    gain_b = float(np.mean(paired_b)) if paired_b else None
    iv_b, inside_b = _check(gain_b, plan.gain_over_best_observed, plan.best_observed_gain_interval, sd, len(paired_b))
    if "best_observed" in arm and arm["best_observed"].levels == arm["allocator"].levels:
        inside_b = None
        notes.append("the allocator's plan is the best observed recipe: nothing to compare")
    return VerificationReport(
        experiment=experiment, group=group, benchmark=benchmark, metric=metric, budget=plan.budget,
        model_size=model_size, model_params=plan.model_params, law=law, fit_id=fit_id,
        simulated=simulated, arms=filled, predicted_gain=plan.gain_over_baseline,
        predicted_gain_interval=plan.gain_interval, decision=decision, realised_gain=gain,
        realised_gain_ci=t_interval(paired), seed_sd=sd, seed_sd_source=source, comparison_interval=iv,
        inside_interval=inside, predicted_gain_best_observed=plan.gain_over_best_observed if "best_observed" in arm
        else None, predicted_gain_best_observed_interval=plan.best_observed_gain_interval if "best_observed" in arm
        else None, realised_gain_best_observed=gain_b, comparison_interval_best_observed=iv_b,
        inside_interval_best_observed=inside_b, notes=notes, complete=not problems, problems=problems, plot=plot)


def _fill_arms(arms: Sequence[VerificationArm], by_id: Mapping[str, Any], key: str, cost: CostModel
               ) -> tuple[list[VerificationArm], list[str], dict[str, dict[int, float]]]:
    """The arms with their realised scores, the problems (runs not done), and each arm's score per seed."""
    filled, problems = [], []
    per_seed: dict[str, dict[int, float]] = {}
    for arm in arms:
        scores, costs, status = [], [], {}
        for rid, seed in zip(arm.run_ids, arm.seeds):
            r = by_id.get(rid)
            status[rid] = r.status if r is not None else "missing"
            v = r.metrics.get(key) if r is not None and r.status == "done" else None
            if r is not None and r.status == "done" and v is None:
                problems.append(f"run {rid} ({arm.name}, seed {seed}) is done but has no {key}")
            elif r is None or r.status != "done":
                why = f": {r.error.strip().splitlines()[-1]}" if r is not None and r.error else ""
                problems.append(f"run {rid} ({arm.name}, seed {seed}) is {status[rid]}{why}")
            scores.append(v)
            if v is not None:
                per_seed.setdefault(arm.name, {})[seed] = float(v)
                costs.append(cost.total(realised_levels(arm.levels, r.metadata), r.model_params or 0.0))
        done = [s for s in scores if s is not None]
        filled.append(arm.model_copy(update={
            "realised_scores": scores, "realised_mean": float(np.mean(done)) if done else None,
            "realised_ci": t_interval(done), "synthesis_cost": float(np.mean(costs)) if costs else None,
            "run_status": status}))
    return filled, problems, per_seed
