"""Speed and quality of fit/ on the default preset's real design (simulated truths). Prints figures.

Usage::

    .venv/bin/python benchmarks/fit_speed.py                 # speed + 20 simulated experiments
    .venv/bin/python benchmarks/fit_speed.py --experiments 50 --bootstrap 200 --jobs 2

Targets (issue 9; measured here, never asserted in tests):

- speed: a joint fit of ~300 runs over six axes with the full starting grid under 10 s
  on 2 cores; 1,000 bootstrap refits under 60 s;
- quality over simulated truths with realistic noise (SD 0.015 score points): held-out
  MAE at >= 16x extrapolation <= 0.02; 90% prediction intervals covering 85-95% of
  held-out runs; the interaction test picking the true hypothesis in >= 90% of experiments.

Misspecified truths (issue 15; ``--misspecified N``): truths whose form no registered law has
-- diversity worth more to a bigger model (a diversity x size interaction), quality that
discounts what diversity buys through a non-linear shape, quality that amplifies it through
another, and a chance floor under a saturating score. Each is fitted the way ``toolscale fit
--law auto`` fits: the verdict (bootstrap LR + gain-ratio interval), the supported form, its
bootstrap, the forms mixed into the intervals by BIC weight. Targets: held-out MAE at >= 16x
<= 0.02; 90% coverage 85-95%; verdict accuracy over truths of either interaction sign >= 90%.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fit.fitting import fit_law  # noqa: E402
from fit.holdout import apply_holdout  # noqa: E402
from fit.interaction import compare_hypotheses  # noqa: E402
from fit.laws import get_law  # noqa: E402
from fit.models import Points, Truth  # noqa: E402
from fit.simulate import builtin_truth, law_inputs_for_config, simulate_results  # noqa: E402
from grid.design import build_design  # noqa: E402
from toolscale.config import load_config  # noqa: E402

PRESET = Path(__file__).resolve().parents[1] / "toolscale" / "presets" / "default.toml"


def random_truth(inputs, hypothesis: str, rng: np.random.Generator, noise: float) -> Truth:
    """A truth drawn around the built-in one (fit/simulate.py), so results do not hinge on one parameter set."""
    base = builtin_truth(inputs, hypothesis, noise_sd=noise)
    # S0 >= A_N keeps every mean score above 0, so clipping does not bias the data
    p = {"S0": rng.uniform(0.3, 0.45), "A_N": rng.uniform(0.15, 0.3), "alpha_N": rng.uniform(0.3, 0.7)}
    for name in base.params:
        if name.startswith("G_"):
            p[name] = rng.uniform(0.05, 0.15)
        elif name.startswith("alpha_") and name != "alpha_N":
            p[name] = rng.uniform(0.3, 0.9)
        elif name.startswith("H_"):
            p[name] = rng.uniform(0.2, 0.6) if hypothesis == "multiplicative" else rng.uniform(0.02, 0.08)
        elif name.startswith("beta_"):
            p[name] = rng.uniform(0.5, 2.0)
    return base.model_copy(update={"params": p})


def _gain(inputs, X, p, kind: str) -> np.ndarray:
    """``G(x)`` (diversity) or ``Q(q)`` (quality) of the hypothesis laws at the params ``p``."""
    from fit.laws import normalise

    out = np.zeros(len(next(iter(X.values()))))
    for inp in inputs:
        if inp.kind == kind == "diversity":
            out += p[f"G_{inp.name}"] * (1 - normalise(inp, np.asarray(X[inp.name], float)) ** -p[f"alpha_{inp.name}"])
        elif inp.kind == kind == "quality":
            w = normalise(inp, np.asarray(X[inp.name], float))
            out += p[f"H_{inp.name}"] * (1 - (1 + w) ** -p[f"beta_{inp.name}"])
    return out


MISSPECIFIED = {
    "diversity x size": "additive",   # quality adds; diversity's gain grows with log N (no registered form has it)
    "discount (G / (1 + Q)^2)": "discounts",
    "amplify (G (1 + Q)^2)": "amplifies",
    "chance floor 0.25 + multiplicative": "amplifies",
}
"""Misspecified truth -> the verdict a correct interaction test reaches on it."""


def misspecified_points(design, inputs, kind: str, rng: np.random.Generator, noise: float, seed: int) -> Points:
    """Scores from the truth ``kind`` (see :data:`MISSPECIFIED`) over the design's runs, noise added, held out."""
    from fit.laws import normalise

    X = {i.name: [r.model_params if i.name == "N" else r.recipe[i.name] for r in design.runs] for i in inputs}
    p = random_truth(inputs, "additive", rng, noise).params
    for name in list(p):
        if name.startswith("H_"):
            p[name] = rng.uniform(0.3, 0.6)
    size = next(i for i in inputs if i.kind == "size")
    n = normalise(size, np.asarray(X["N"], float))
    base = p["S0"] - p["A_N"] * n ** -p["alpha_N"]
    g, q = _gain(inputs, X, p, "diversity"), _gain(inputs, X, p, "quality")
    if kind == "diversity x size":
        mean = base + g * (0.6 + 0.25 * np.log(n)) + 0.15 * q
    elif kind.startswith("discount"):
        mean = base + 1.6 * g / (1 + q) ** 2 + 0.15 * q
    elif kind.startswith("amplify"):
        mean = base + 0.7 * g * (1 + q) ** 2
    else:
        mean = 0.25 + 0.75 * (base + g * (1 + q) - 0.05)
    y = np.clip(mean + np.random.default_rng(seed).normal(0, noise, mean.size), 0.0, 1.0)
    pts = Points(inputs=X, y=list(y), run_ids=[r.run_id for r in design.runs], split=[r.split for r in design.runs],
                 flops=[r.train_flops for r in design.runs], benchmark="sim", simulated=True)
    return apply_holdout(pts, "top-flops:0.25", 0.25)[0]


def fit_like_auto(pts: Points, inputs, *, n_bootstrap: int, inter_bootstrap: int, jobs: int, seed: int):
    """What ``toolscale fit --law auto`` does for a score with diversity and quality axes: verdict, form, mixture."""
    from fit.experiment import sized_choice, with_extrapolation, with_forms

    inter, forms = compare_hypotheses(pts, inputs, n_starts=8, max_grid=4096, seed=seed, n_bootstrap=inter_bootstrap,
                                      n_jobs=jobs)
    law, selection = sized_choice(pts, get_law(inter.supported, inputs), n_starts=8, max_grid=4096, seed=seed)
    fit = fit_law(pts, law, n_starts=8, max_grid=8192, n_bootstrap=n_bootstrap, n_jobs=jobs, seed=seed)
    fit = with_forms(fit, [f for k, f in forms.items() if k != fit.law], pts, law, seed=seed)
    fit = with_extrapolation(fit, selection, pts, law, seed=seed)
    return inter, fit


def points_for(design, law, truth: Truth, seed: int) -> Points:
    y = simulate_results(design.runs, truth, law, seed=seed)
    X = {a: [r.model_params if a == "N" else r.recipe[a] for r in design.runs] for a in law.axes}
    pts = Points(inputs=X, y=y, run_ids=[r.run_id for r in design.runs], split=[r.split for r in design.runs],
                 flops=[r.train_flops for r in design.runs], benchmark="sim", simulated=True)
    return apply_holdout(pts, "top-flops:0.25", 0.25)[0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--experiments", type=int, default=20, help="simulated experiments for the quality figures")
    ap.add_argument("--bootstrap", type=int, default=100, help="bootstrap refits per quality experiment")
    ap.add_argument("--speed-bootstrap", type=int, default=1000, help="bootstrap refits timed for speed")
    ap.add_argument("--noise", type=float, default=0.015, help="noise SD in score points")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="bootstrap worker processes")
    ap.add_argument("--skip-speed", action="store_true")
    ap.add_argument("--config", default=str(PRESET), help="experiment config whose design is used (default preset)")
    ap.add_argument("--json", action="store_true", help="end with one JSON line of records for benchmarks/run_all")
    ap.add_argument("--quick", action="store_true", help="4 experiments, 20 bootstrap refits, 200 timed refits")
    ap.add_argument("--misspecified", type=int, default=0, metavar="N",
                    help="N experiments on misspecified truths (cycling over the four kinds)")
    ap.add_argument("--first", type=int, default=0, metavar="K",
                    help="start the misspecified experiments at number K (fresh truths and noise after a run of K)")
    ap.add_argument("--inter-bootstrap", type=int, default=20,
                    help="bootstrap draws of the interaction verdict (LR and gain ratio) per misspecified experiment")
    args = ap.parse_args()
    if args.quick:
        args.experiments, args.bootstrap, args.speed_bootstrap = 4, 20, 200
    records = []

    config = load_config(args.config)
    design = build_design(config)
    inputs = law_inputs_for_config(config)
    fitted = sum(r.split == "fit" for r in design.runs)
    print(f"design: {len(design.runs)} runs ({fitted} fitted), {len(config.axes)} axes, "
          f"extrapolation factor {design.summary.extrapolation_factor:.1f}x; cores: {os.cpu_count()}")

    if not args.skip_speed:
        law = get_law("multiplicative", inputs)
        pts = points_for(design, law, builtin_truth(inputs, "multiplicative", noise_sd=args.noise), seed=0)
        t0 = time.perf_counter()
        fit = fit_law(pts, law, n_starts=8, max_grid=8192)
        t_fit = time.perf_counter() - t0
        print(f"speed: joint fit, {fit.n_points} runs, {law.n_params} parameters, full grid (8192 starts scored, "
              f"8 minimiser runs): {t_fit:.2f} s  [target < 10 s]")
        records.append({"benchmark": "fit", "figure": f"joint fit, {fit.n_points} runs, six axes", "value": t_fit,
                        "unit": "s", "target": "< 10 s"})
        every = pts.model_copy(update={"split": ["fit"] * pts.n})
        t0 = time.perf_counter()
        whole = fit_law(every, law, n_starts=8, max_grid=8192)
        print(f"speed: joint fit of every run ({whole.n_points}, --holdout none): {time.perf_counter() - t0:.2f} s")
        t0 = time.perf_counter()
        fit = fit_law(pts, law, n_starts=8, max_grid=8192, n_bootstrap=args.speed_bootstrap, n_jobs=args.jobs)
        t_boot = time.perf_counter() - t0 - fit.fit_seconds
        print(f"speed: {len(fit.bootstrap)} bootstrap refits on {args.jobs} workers: {t_boot:.1f} s  [target < 60 s]")
        records.append({"benchmark": "fit", "figure": f"{len(fit.bootstrap)} bootstrap refits", "value": t_boot,
                        "unit": "s", "target": "< 60 s for 1,000"})

    rng = np.random.default_rng(2026)
    maes, maxes, covs, correct = [], [], [], []
    for i in range(args.experiments):
        hyp = "multiplicative" if i % 2 == 0 else "additive"
        truth = random_truth(inputs, hyp, rng, args.noise)
        law = get_law(hyp, inputs)
        pts = points_for(design, law, truth, seed=100 + i)
        t0 = time.perf_counter()
        inter, _ = compare_hypotheses(pts, inputs, n_starts=8, max_grid=4096, seed=i)
        chosen = get_law(inter.supported, inputs)
        fit = fit_law(pts, chosen, n_starts=8, max_grid=8192, n_bootstrap=args.bootstrap, n_jobs=args.jobs, seed=i)
        h = fit.heldout
        maes.append(h.mae)
        maxes.append(h.max_error)
        covs.append(h.interval_coverage)
        correct.append(inter.supported == hyp)
        print(f"  exp {i:2d} truth {hyp:14s} alpha_N {truth.params['alpha_N']:.2f} -> {inter.supported:14s} "
              f"({inter.strength}, dBIC {inter.delta_bic:6.1f})  MAE {h.mae:.4f}  max {h.max_error:.4f}  "
              f"coverage {h.interval_coverage:.2f}  [{time.perf_counter() - t0:.1f} s]", flush=True)
    if args.experiments:
        factor = design.summary.extrapolation_factor
        print(f"quality over {args.experiments} simulated experiments (noise SD {args.noise}, {factor:.1f}x):")
        print(f"  held-out MAE: mean {np.mean(maes):.4f}, median {np.median(maes):.4f}, worst {np.max(maes):.4f}  "
              "[target <= 0.02; plan reference 0.0285]")
        print(f"  held-out max error: mean {np.mean(maxes):.4f}")
        print(f"  90% prediction-interval coverage: mean {np.mean(covs):.3f}, range {np.min(covs):.2f}-"
              f"{np.max(covs):.2f}  [target 0.85-0.95]")
        print(f"  interaction test correct: {np.mean(correct):.0%} ({sum(correct)}/{len(correct)})  [target >= 90%]")
        records += [
            {"benchmark": "fit", "figure": f"held-out MAE at {factor:.1f}x (mean of {args.experiments})",
             "value": float(np.mean(maes)), "unit": "score", "target": "<= 0.02"},
            {"benchmark": "fit", "figure": "90% interval coverage (mean)", "value": float(np.mean(covs)),
             "unit": "share", "target": "0.85-0.95"},
            {"benchmark": "fit", "figure": "interaction test picks the truth", "value": float(np.mean(correct)),
             "unit": "share", "target": ">= 0.9"}]
    if args.misspecified:
        records += run_misspecified(design, inputs, args)
    if args.json:
        print(json.dumps(records))
    return 0


def run_misspecified(design, inputs, args) -> list[dict]:
    rng = np.random.default_rng(1515)
    kinds = list(MISSPECIFIED)
    rows = []
    for i in range(args.first + args.misspecified):
        kind = kinds[i % len(kinds)]
        pts = misspecified_points(design, inputs, kind, rng, args.noise, seed=500 + i)
        if i < args.first:  # drawn only to keep the truth draws of experiment i the same in every run
            continue
        t0 = time.perf_counter()
        inter, fit = fit_like_auto(pts, inputs, n_bootstrap=args.bootstrap, inter_bootstrap=args.inter_bootstrap,
                                   jobs=args.jobs, seed=i)
        h = fit.heldout
        ok = inter.verdict == MISSPECIFIED[kind]
        rows.append((kind, h.mae, h.interval_coverage, ok))
        ci = f"[{inter.gain_ratio_lo:.2f}, {inter.gain_ratio_hi:.2f}]" if inter.gain_ratio_lo is not None else ""
        print(f"  misspecified {i:2d} {kind:36s} verdict {inter.verdict:9s} (want {MISSPECIFIED[kind]:9s}) "
              f"ratio {inter.gain_ratio:.2f} {ci} LR p {inter.lr_p:.3f} -> {fit.law:14s} MAE {h.mae:.4f} "
              f"coverage {h.interval_coverage:.2f}  [{time.perf_counter() - t0:.1f} s]", flush=True)
    maes = [r[1] for r in rows]
    covs = [r[2] for r in rows]
    acc = float(np.mean([r[3] for r in rows]))
    factor = design.summary.extrapolation_factor
    print(f"misspecified truths ({len(rows)} experiments, noise SD {args.noise}, {factor:.1f}x):")
    for kind in kinds:
        sel = [r for r in rows if r[0] == kind]
        if sel:
            print(f"  {kind:36s} MAE {np.mean([r[1] for r in sel]):.4f}  coverage {np.mean([r[2] for r in sel]):.2f}"
                  f"  verdict {sum(r[3] for r in sel)}/{len(sel)}")
    print(f"  held-out MAE: mean {np.mean(maes):.4f}, worst {np.max(maes):.4f}  [target <= 0.02]")
    print(f"  90% interval coverage: mean {np.mean(covs):.3f}, range {np.min(covs):.2f}-{np.max(covs):.2f}  "
          "[target 0.85-0.95]")
    print(f"  verdict accuracy: {acc:.0%}  [target >= 90%]")
    return [{"benchmark": "fit", "figure": f"misspecified truths: held-out MAE at {factor:.1f}x (mean of {len(rows)})",
             "value": float(np.mean(maes)), "unit": "score", "target": "<= 0.02"},
            {"benchmark": "fit", "figure": "misspecified truths: 90% interval coverage (mean)",
             "value": float(np.mean(covs)), "unit": "share", "target": "0.85-0.95"},
            {"benchmark": "fit", "figure": "misspecified truths: verdict accuracy", "value": acc,
             "unit": "share", "target": ">= 0.9"}]


if __name__ == "__main__":
    raise SystemExit(main())
