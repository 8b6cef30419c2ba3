"""`toolscale next` on simulated truths: the gain interval, its coverage and the regret after K added runs, by policy.

Targets (issue 37), at K = 12 against 12 random runs of equal cost (medians over truths):

- gain-interval width after the proposed runs <= 0.67x random's;
- regret after them <= 0.67x random's;
- coverage of the gain interval after augmentation 85-95%;
- `toolscale next --runs 12` on the default design (440 runs, a fit with 200 bootstrap draws) <= 60 s on 2 cores.

Each experiment starts from a deliberately thin design: the default preset's axes and ladder with a Latin
hypercube of 16 points plus 2 center points (54 fitted runs over tiny-xs, tiny-s and tiny-m, 18 held out at
tiny-l, the target rung), training compute priced at ``[cost].per_pflop = 3000`` usd (a tiny-l run about
480 usd, tiny-m 29 usd; a new dataset 700-8,700 usd), so that a run's size matters to its cost. Scores are
drawn from a known truth plus noise (SD 0.015) and fitted as `toolscale fit --law auto --holdout split` fits
them, with fewer bootstrap draws than its default 200 so that the 91 fits fit the shared machine: 100 for the
first fit (the draws `next` weights, ``--bootstrap``), 40 for each refit (``--refit-bootstrap``), 15 for the
interaction test (``--interaction-bootstrap``). Then, for K = 6, 12, 24,
four policies add K runs from the same candidate space (every rung x the design levels' full factorial, the
experiment's own recipes and the allocation's plans):

- ``next``: `toolscale next --runs 24` at the budget (its first K runs are its proposal of K);
- ``random``: K candidates drawn one at a time, uniformly among those the rest of ``next``'s cost for K runs
  still affords; the first such batch within 10% of that cost (up to 200 batches; else the closest);
- ``d_optimal``: greedy D-optimal augmentation on the chosen law's parameter Jacobian at the point estimate
  (the fitted runs' information plus each added run's), cost not considered;
- ``seeds``: new seeds of the fitted design points at the largest fitted size (tiny-m), in a seeded order.

The added runs' results are drawn from the truth (a noise stream per truth, seed, policy and K), stored as
fitted runs, the experiment refitted by the same protocol and `allocate` asked again at the same budget. The
true gain is ``truth(plan) - truth(fair baseline)`` and the regret ``truth(oracle) - truth(plan)``, the oracle
maximising the truth under the same request (bounds from the fitted ranges, budget, integers rounded).

Truths: the five of ``benchmarks/allocate_truths.py`` (additive, multiplicative, interaction amplifying and
two discounting) and two that none of the fitted forms contains (misspecified): ``effective`` (every data
axis multiplies the effective training tokens, so data effects interact with each other and with D) and
``logistic`` (a logistic link over log levels, so every effect bends and interacts on the score scale).

``--detail PATH`` appends one JSON line per evaluation (a truth, seed, policy, K) as it finishes;
``--from-detail PATH`` summarises such a file. ``--json`` prints the records for ``benchmarks/run_all``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import tomllib
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _next_policies import (d_optimal_rows, random_rows, seeds_rows, target_tokens, truth_score,  # noqa: E402
                            truths)
from allocator.models import AllocationQuery, Budget  # noqa: E402
from allocator.planning import build_request  # noqa: E402
from allocator.solver import round_integers, score_at, solve_levels  # noqa: E402
from fit.experiment import fit_experiment  # noqa: E402
from fit.laws import get_law  # noqa: E402
from fit.models import FitRequest, Truth  # noqa: E402
from fit.simulate import law_inputs_for_config, simulate_results  # noqa: E402
from grid.augment import augment_runs  # noqa: E402
from grid.design import build_design  # noqa: E402
from grid.models import MetricResult  # noqa: E402
from grid.registry import Registry  # noqa: E402
from pipeline.allocate import plan_allocation  # noqa: E402
from pipeline.next_runs import propose_next_runs  # noqa: E402
from toolscale.cli.project import example_config_text  # noqa: E402
from toolscale.config import parse_config  # noqa: E402

BENCH = "simulated"
BUDGET = 4000.0
KS = (6, 12, 24)
POLICIES = ("next", "random", "d_optimal", "seeds")
PER_PFLOP = 3000.0
NOISE_SD = 0.015


def thin_config():
    """The default preset with a 16-point Latin hypercube (+2 center points) and priced training compute."""
    data = tomllib.loads(example_config_text("default"))
    data["experiment"]["name"] = "sim"
    data["design"].update(kind="lhs", lhs_samples=16, center_points=2)
    data["cost"]["per_pflop"] = PER_PFLOP
    return parse_config(data)


def fit_and_store(path: str, cfg, n_boot: int, inter_boot: int, seed: int) -> None:
    """Fit the experiment as `toolscale fit --law auto --holdout split` does, store the fit."""
    with Registry(path, read_only=True) as reg:
        done = reg.runs("sim", status="done")
    req = FitRequest(experiment="sim", benchmark=BENCH, metric="score", law="auto", holdout="split",
                     n_bootstrap=n_boot, interaction_bootstrap=inter_boot, seed=seed, n_jobs=1)
    fit = fit_experiment(done, req, config=cfg).fit
    with Registry(path) as reg:
        reg.save_fit(experiment="sim", benchmark=BENCH, metric="score", law=fit.law, converged=fit.converged,
                     n_points=fit.n_points, data_hash=fit.data_hash, payload=fit.model_dump(mode="json"))


def store_runs(path: str, cfg, specs, tlaw, params, noise_seed: int) -> None:
    """Simulate ``specs`` from the truth and store them as done runs."""
    truth = Truth(law=tlaw.name, params=params, noise_sd=NOISE_SD, benchmark=BENCH)
    values = simulate_results(specs, truth, tlaw, seed=noise_seed)
    with Registry(path) as reg:
        reg.ensure_experiment("sim", config=cfg.model_dump(mode="json"), axes=[a.name for a in cfg.axes],
                              simulated=True)
        reg.import_runs("sim", [a.name for a in cfg.axes], specs,
                        [[MetricResult(benchmark=BENCH, metric="score", score=v)] for v in values],
                        simulated=True, source="simulated")


def evaluate(path: str, cfg, tlaw, params) -> dict:
    """`allocate` at the budget, judged against the truth: width, true gain inside, regret against the oracle."""
    rep = plan_allocation(AllocationQuery.of(registry=path, budget=BUDGET, benchmark=BENCH, redraws=30), save=False)
    with Registry(path, read_only=True) as reg:
        ranges: dict[str, tuple[float, float]] = {}
        for r in reg.runs("sim", status="done", split="fit"):
            for k, v in r.recipe.items():
                lo, hi = ranges.get(k, (np.inf, -np.inf))
                ranges[k] = (min(lo, v), max(hi, v))
    n_target = rep.model_params
    req = build_request(cfg, budget=Budget(value=BUDGET, unit="usd"), benchmark=BENCH, model_params=n_target,
                        fitted_ranges={k: v for k, v in ranges.items() if v[1] > v[0]})
    score = truth_score(tlaw, params, target_tokens(cfg))
    oracle = round_integers(req, solve_levels(req, score), score)
    t_plan, t_base = score_at(score, rep.plan.levels, n_target), score_at(score, rep.baseline.levels, n_target)
    true_gain = t_plan - t_base
    iv = rep.gain_interval
    return {"law": rep.law, "width": iv[1] - iv[0] if iv else None, "gain_interval": iv,
            "predicted_gain": rep.gain_over_baseline, "true_gain": true_gain,
            "inside": bool(iv is not None and iv[0] <= true_gain <= iv[1]),
            "regret": score_at(score, oracle, n_target) - t_plan, "decision": rep.decision.verdict,
            "expected_regret": rep.expected_regret}


def _policy_rows(policy: str, k: int, ctx: dict) -> tuple[list[dict], float]:
    """Rows (recipe, model_size, token_multiplier, seed) of ``policy``'s first ``k`` runs, and their cost."""
    nxt = ctx["next"]
    if policy == "next":
        return nxt.rows()[:k], nxt.runs[k - 1].cumulative_cost
    if policy == "random":
        return random_rows(ctx["path"], k, nxt.runs[k - 1].cumulative_cost, seed=ctx["seed"] * 100 + k,
                           plans=ctx["plans"])
    if policy == "d_optimal":
        rows, costs = ctx["dopt"]
        return rows[:k], costs[k - 1]
    rows, costs = ctx["seeds"]
    return rows[:k], costs[k - 1]


def thin_experiment(name: str, seed: int, path: str):
    """The thin design's runs of truth ``name`` and ``seed``, stored at ``path``, not yet fitted: the config, the
    truth's law and parameters, and the noise tag (the added runs' noise streams derive from it)."""
    cfg = thin_config()
    design = list(build_design(cfg).runs)
    all_truths = truths(law_inputs_for_config(cfg), min(r.train_tokens for r in design))
    tlaw, params = all_truths[name]
    tag = 7919 * (list(all_truths).index(name) + 1) + seed
    store_runs(path, cfg, design, tlaw, params, noise_seed=tag)
    return cfg, tlaw, params, tag


def experiment(name: str, seed: int, folder: Path, *, n_boot: int, inter_boot: int, refit_boot: int,
               ks=KS, policies=POLICIES, detail: str | None = None, keep: Path | None = None) -> list[dict]:
    """One truth and seed: the thin design, its fit, the four policies at each K, refits and judgements.

    ``keep``: a folder that gets each refitted registry (``{policy}-{k}.duckdb``), for `next_diagnose.py`."""
    base = str(folder / "base.duckdb")
    cfg, tlaw, params, tag = thin_experiment(name, seed, base)
    t0 = time.perf_counter()
    fit_and_store(base, cfg, n_boot, inter_boot, seed)
    before = {**evaluate(base, cfg, tlaw, params), "fit_s": time.perf_counter() - t0}
    t0 = time.perf_counter()
    nxt = propose_next_runs(AllocationQuery.of(registry=base, budget=BUDGET, benchmark=BENCH, experiment="sim"),
                            runs=max(ks))
    next_s = time.perf_counter() - t0
    plans = [nxt.plan_levels, nxt.baseline_levels]
    ctx = {"next": nxt, "path": base, "seed": seed, "plans": plans,
           "dopt": d_optimal_rows(base, max(ks), plans) if "d_optimal" in policies else None,
           "seeds": seeds_rows(base, max(ks), seed=seed, plans=plans) if "seeds" in policies else None}
    rows = []
    for k in ks:
        for p_i, policy in enumerate(policies):
            spec_rows, cost = _policy_rows(policy, k, ctx)
            path = str(folder / f"{policy}-{k}.duckdb")
            shutil.copy(base, path)
            specs = augment_runs(cfg, spec_rows, group=f"bench-{policy}-{k}")
            store_runs(path, cfg, specs, tlaw, params, noise_seed=tag * 1000 + 10 * k + p_i)
            t0 = time.perf_counter()
            fit_and_store(path, cfg, refit_boot, min(inter_boot, refit_boot), seed)
            after = evaluate(path, cfg, tlaw, params)
            row = {"truth": name, "seed": seed, "policy": policy, "k": k, "cost": cost, **after,
                   "refit_s": time.perf_counter() - t0, "before": before, "next_s": next_s,
                   "next_expected_width": nxt.runs[k - 1].expected_width_after,
                   "next_expected_regret": nxt.runs[k - 1].expected_regret_after,
                   "next_width_now": nxt.width_now, "next_p_resolved": nxt.runs[k - 1].p_resolved_after,
                   "next_mean_ess_at_max_k": nxt.mean_ess,
                   "sizes": sorted({r["model_size"] for r in spec_rows})}
            rows.append(row)
            if keep is not None:
                shutil.copy(path, keep / Path(path).name)
            Path(path).unlink(missing_ok=True)
            if detail:
                with open(detail, "a", encoding="utf-8") as f:
                    f.write(json.dumps(row, default=str) + "\n")
            print(f"{name} seed {seed} {policy} K={k}: width {row['width']:.4f} (before {before['width']:.4f}), "
                  f"regret {row['regret']:.5f}, inside {row['inside']}, cost {cost:,.0f}", file=sys.stderr,
                  flush=True)
    return rows


def time_default(n_boot: int) -> dict:
    """Wall and CPU time of `next --runs 12` on the default design (440 runs, multiplicative truth, a fit with
    ``n_boot`` bootstrap draws), the fit itself not counted; the 1-minute load average at the end."""
    from fit.simulate import builtin_truth

    data = tomllib.loads(example_config_text("default"))
    data["experiment"]["name"] = "sim"
    cfg = parse_config(data)
    inputs = law_inputs_for_config(cfg)
    truth = builtin_truth(inputs)
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "default.duckdb")
        store_runs(path, cfg, list(build_design(cfg).runs), get_law("multiplicative", inputs), truth.params, 0)
        fit_and_store(path, cfg, n_boot, 50, 0)
        t0, c0 = time.perf_counter(), time.process_time()
        nxt = propose_next_runs(AllocationQuery.of(registry=path, budget=BUDGET, benchmark=BENCH, experiment="sim"),
                                runs=12)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"seconds": wall, "cpu_seconds": cpu, "load_average": os.getloadavg()[0], "draws": nxt.draws,
            "candidates": nxt.candidates, "runs": len(nxt.runs)}


def run(names, seeds, *, n_boot: int, inter_boot: int, refit_boot: int, ks=KS, policies=POLICIES,
        detail: str | None = None) -> list[dict]:
    rows = []
    for name in names:
        for seed in seeds:
            with tempfile.TemporaryDirectory() as tmp:
                rows += experiment(name, seed, Path(tmp), n_boot=n_boot, inter_boot=inter_boot,
                                   refit_boot=refit_boot, ks=ks, policies=policies, detail=detail)
    return rows


def main(argv: list[str] | None = None) -> int:
    from _next_summary import records

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true",
                   help="one truth, one seed, K = 6, 30/20 bootstrap draws; the timing at 50 draws")
    p.add_argument("--truth", action="append", help="only truths whose name holds this text (repeatable)")
    p.add_argument("--seeds", type=int, default=1, help="seeds per truth (default 1)")
    p.add_argument("--first-seed", type=int, default=0)
    p.add_argument("--bootstrap", type=int, default=100, help="draws of the first fit, the ones next weights")
    p.add_argument("--refit-bootstrap", type=int, default=40, help="draws of each refit (default 40)")
    p.add_argument("--interaction-bootstrap", type=int, default=15, help="draws of the interaction test (default 15)")
    p.add_argument("--k", type=int, action="append", help="K values (default 6, 12, 24)")
    p.add_argument("--policy", action="append", choices=POLICIES,
                   help="only these policies (repeatable; default all four; the targets need next and random)")
    p.add_argument("--no-timing", action="store_true", help="skip the default-design timing")
    p.add_argument("--timing-only", action="store_true", help="only the default-design timing")
    p.add_argument("--detail", help="append every evaluation to this JSON-lines file")
    p.add_argument("--from-detail", help="only summarise the rows of an earlier --detail file")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    inputs = law_inputs_for_config(thin_config())
    all_names = list(truths(inputs))
    timing = None
    if args.from_detail:
        rows = [json.loads(line) for line in Path(args.from_detail).read_text().splitlines() if line.strip()]
        timing = next((r["timing"] for r in rows if "timing" in r), None)
        rows = [r for r in rows if "timing" not in r]
    else:
        names = [n for n in all_names if not args.truth or any(t in n for t in args.truth)]
        if args.quick:
            names, ks, nb, rb = names[1:2] if not args.truth else names[:1], (6,), 30, 20
        else:
            ks, nb, rb = tuple(args.k or KS), args.bootstrap, args.refit_bootstrap
        seeds = range(args.first_seed, args.first_seed + args.seeds)
        if not args.no_timing:
            timing = time_default(50 if args.quick else 200)
            print(f"timing: {timing}", file=sys.stderr, flush=True)
            if args.detail:
                with open(args.detail, "a", encoding="utf-8") as f:
                    f.write(json.dumps({"timing": timing}) + "\n")
        rows = [] if args.timing_only else run(names, seeds, n_boot=nb, inter_boot=args.interaction_bootstrap,
                                               refit_boot=rb, ks=ks, detail=args.detail,
                                               policies=tuple(args.policy or POLICIES))
    recs = records(rows, timing)
    if args.json:
        print(json.dumps(recs))
    else:
        for r in recs:
            iv = r.get("interval_90")
            extra = f"; the median's 90% bootstrap interval over seeds [{iv[0]:.2f}, {iv[1]:.2f}]" if iv else ""
            print(f"{r['figure']}: {r['value']} (target {r['target']}){extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
