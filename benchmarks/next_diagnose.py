"""Why a gain interval after `toolscale next` misses its truth: one experiment of `next_runs.py`, taken apart.

Runs one truth and seed as ``next_runs.py`` does (the thin design, its fit, K runs by one policy, the refit),
keeps the refitted registry, and prints what the miss is made of:

- the plan and the fair baseline against the tested range of each axis (an arm past it, and the error per
  doubling the fit measured there, or none);
- each law form mixed into the interval: its weight, its gain at the plan and the 5-95% range of its draws,
  beside the true gain;
- the law's gain error at the plan against its error over random recipes within the tested ranges (the same
  baseline): an error at the plan far above the others is the optimizer's curse (the plan was chosen where the
  law's errors are largest), a shared offset is the law's error at the baseline;
- the bootstrap's own estimate of that optimism: over the draws, each draw's gain at its own optimum minus the
  point estimate's gain there. When it is much smaller than the error at the plan, the draws cannot see what
  the interval misses (the truth lies outside the law forms, or the draws are narrower than the law's error).

With ``--probes``, two candidate remedies are tried on the kept registry (neither is in the product; see
``latest_issue37.txt``):

- **within the fitted sizes**: at the largest fitted size with 6+ recipes, recipes are left out 5 folds at a
  time (all their sizes), the law is refitted on the rest and predicts them; the slope ``b`` of the observed on
  the predicted differences (:func:`fit.selection.effect_slope`, centred per fold) gives a relative error of a
  difference at a fitted size, ``sqrt(max(0, (b - 1)^2 - SE^2))``. The interval is then redone two ways, as a
  normal approximation: widened by that relative error, or calibrated (centre times ``b``, SE added);
- **an anchor run**: one run at the plan's recipe (clipped to the config's ranges) at a named size, simulated
  from the truth, and a refit: does a run where the plan sits pull the law's gain to the truth?

Examples::

    python benchmarks/next_diagnose.py --truth logistic --seed 10
    python benchmarks/next_diagnose.py --truth "interaction- (discounts)" --seed 10 --policy random --json
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import next_runs as nr  # noqa: E402
from _next_policies import target_tokens, truth_score  # noqa: E402
from allocator.models import AllocationQuery  # noqa: E402
from allocator.solver import score_at, solve_levels  # noqa: E402
from fit.data import points_from_runs  # noqa: E402
from fit.fitting import fit_law  # noqa: E402
from fit.models import FitResult, Points  # noqa: E402
from fit.predict import law_of  # noqa: E402
from fit.selection import effect_slope  # noqa: E402
from grid.augment import augment_runs  # noqa: E402
from grid.design import build_design  # noqa: E402
from grid.registry import Registry  # noqa: E402
from pipeline.allocate import load_inputs, plan_allocation  # noqa: E402


def _truth(name: str):
    """``(full name, truth score)``: the first of next_runs' truths whose name starts with ``name``."""
    cfg = nr.thin_config()
    d_ref = min(r.train_tokens for r in build_design(cfg).runs)
    all_truths = nr.truths(nr.law_inputs_for_config(cfg), d_ref)
    full = next((n for n in all_truths if n.startswith(name)), None)
    if full is None:
        raise SystemExit(f"unknown truth {name!r}; truths: {', '.join(all_truths)}")
    law, params = all_truths[full]
    return full, truth_score(law, params, target_tokens(cfg))


def _forms(fit: FitResult, plan: dict, base: dict, n: float) -> list[dict]:
    """Each mixed form's weight, point gain at ``plan`` over ``base`` and its draws' 5-95% range."""
    out = []
    for f in [fit, *fit.forms]:
        law = law_of(f)

        def gain(p, law=law):
            X = lambda lv: {**{i.name: np.array([lv[i.name]]) for i in law.inputs if i.name in lv},  # noqa: E731
                            "N": np.array([n])}
            return float(law.predict(p, X(plan))[0] - law.predict(p, X(base))[0])

        draws = [gain(d) for d in f.draws()]
        out.append({"law": f.law, "weight": f.form_weight if fit.forms else 1.0, "gain": gain(f.params),
                    "draws_5_95": [float(np.percentile(draws, 5)), float(np.percentile(draws, 95))] if draws else None})
    return out


def diagnose(path: str, truth, *, recipes: int = 300, redraws: int = 30, seed: int = 0) -> dict:
    """The parts of one allocation's miss (module docstring) from the refitted registry at ``path``."""
    query = AllocationQuery.of(registry=path, budget=nr.BUDGET, benchmark=nr.BENCH, redraws=0)
    rep = plan_allocation(query, save=False)
    with Registry(path, read_only=True) as reg:
        ld = load_inputs(reg, query)
    n, plan, base, score = rep.model_params, rep.plan.levels, rep.baseline.levels, ld.surface.score

    def error(lv):  # the law's gain error over the baseline at lv
        return (score_at(score, lv, n) - score_at(score, base, n)) - (score_at(truth, lv, n) - score_at(truth, base, n))

    rng = np.random.default_rng(seed)
    errs = np.array([error({a.name: float(np.exp(rng.uniform(np.log(a.fitted_min), np.log(a.fitted_max))) if a.log
                                          else rng.uniform(a.fitted_min, a.fitted_max)) for a in ld.request.axes})
                     for _ in range(recipes)])
    optimism = []
    for d in list(ld.surface.draws)[:redraws]:
        lv = solve_levels(ld.request, d, warm=[plan], starts=0)
        optimism.append((score_at(d, lv, n) - score_at(d, base, n)) - (score_at(score, lv, n) - score_at(score, base, n)))
    at_plan = error(plan)
    return {
        "law": rep.law, "gain": rep.gain_over_baseline, "gain_interval": rep.gain_interval,
        "true_gain": score_at(truth, plan, n) - score_at(truth, base, n), "model_params": n,
        "axes": [{"axis": a.name, "kind": a.kind, "plan": plan[a.name], "baseline": base[a.name],
                  "tested": [a.fitted_min, a.fitted_max], "error_per_doubling": ld.surface.axis_sd.get(a.name)}
                 for a in ld.request.axes],
        "forms": _forms(ld.fit, plan, base, n),
        "error_at_plan": at_plan, "error_random_mean": float(errs.mean()), "error_random_sd": float(errs.std()),
        "optimism_mean": float(np.mean(optimism)) if optimism else None,
        "optimism_sd": float(np.std(optimism)) if optimism else None,
    }


def _recipe_folds(fitted: Points, axes: list[str], folds: int, seed: int
                  ) -> tuple[np.ndarray, float, np.ndarray, int]:
    """``(fold per point, or -1; the size whose recipes are left out; that size's mask; its recipes)``: the
    largest fitted size with 6+ recipes, its recipes dealt into ``folds`` folds in a seeded random order."""
    n = np.asarray(fitted.inputs["N"], dtype=float)
    keys = [tuple(round(float(fitted.inputs[a][i]), 9) for a in axes) for i in range(n.size)]
    top = max(x for x in set(n.tolist()) if len({k for k, m in zip(keys, n) if m == x}) >= 6)
    recipes = sorted({k for k, m in zip(keys, n) if m == top})
    order = np.random.default_rng(seed).permutation(len(recipes))
    fold_of = {recipes[j]: i % folds for i, j in enumerate(order)}
    return np.array([fold_of.get(k, -1) for k in keys]), top, n == top, len(recipes)


def within_rung(path: str, *, folds: int = 5, seed: int = 0) -> dict:
    """The law's relative error of a difference between recipes at a fitted size (module docstring)."""
    with Registry(path, read_only=True) as reg:
        fit = FitResult.model_validate(reg.fits("sim")[0].payload)
        runs = reg.runs("sim", status="done")
    law = law_of(fit)
    pts = points_from_runs(runs, benchmark=nr.BENCH, metric="score", inputs=law.axes, experiment="sim")
    fitted = pts.subset(pts.split_array() == "fit")
    axes = [i.name for i in law.inputs if i.kind in ("diversity", "quality", "unique_tokens")]
    fold, top, at_top, n_recipes = _recipe_folds(fitted, axes, folds, seed)
    obs, pred = [], []
    for f in range(folds):
        held = (fold == f) & at_top
        keep = (fold != f) | held
        sub = fitted.subset(keep)
        res = fit_law(sub.model_copy(update={"split": ["heldout" if h else "fit" for h in held[keep]]}), law,
                      n_starts=2, max_grid=512, n_bootstrap=0, maxiter=500)
        if not res.converged or res.heldout is None:
            continue
        y = np.array([p.actual for p in res.heldout.points])
        p = np.array([p.predicted for p in res.heldout.points])
        obs.append(y - y.mean())
        pred.append(p - p.mean())
    b, se = effect_slope(np.concatenate(obs), np.concatenate(pred))
    rel = float(np.sqrt(max(0.0, (b - 1.0) ** 2 - se ** 2))) if b is not None and se is not None else None
    return {"size": top, "recipes": n_recipes, "slope": b,
            "slope_se": se, "relative_error": rel}


def redone_intervals(interval: list[float], w: dict) -> dict:
    """The 90% interval widened by the within-rung relative error, and calibrated by its slope (normal approx.)."""
    lo, hi = interval
    c, h = (lo + hi) / 2, (hi - lo) / 2
    wide = float(np.hypot(h, 1.645 * (w["relative_error"] or 0.0) * c))
    cal_c, cal_h = w["slope"] * c, float(np.hypot(w["slope"] * h, 1.645 * w["slope_se"] * c))
    return {"widened": [c - wide, c + wide], "calibrated": [cal_c - cal_h, cal_c + cal_h]}


def anchor(path: str, truth_name: str, size: str, work: Path) -> dict:
    """One run at the plan's recipe (clipped to the config's ranges) at ``size``, simulated, refitted, judged."""
    cfg = nr.thin_config()
    d_ref = min(r.train_tokens for r in build_design(cfg).runs)
    tlaw, params = nr.truths(nr.law_inputs_for_config(cfg), d_ref)[truth_name]
    rep = plan_allocation(AllocationQuery.of(registry=path, budget=nr.BUDGET, benchmark=nr.BENCH, redraws=0),
                          save=False)
    spec = {a.name: a for a in cfg.axes}
    recipe = {k: (round if spec[k].integer else float)(min(max(v, spec[k].min), spec[k].max))
              for k, v in rep.plan.levels.items()}
    out = str(work / "anchored.duckdb")
    shutil.copy(path, out)
    nr.store_runs(out, cfg, augment_runs(cfg, [{"recipe": recipe, "model_size": size, "token_multiplier": 1.0,
                                                 "seed": 900}], group="anchor"), tlaw, params, noise_seed=4242)
    nr.fit_and_store(out, cfg, 40, 40, 0)
    return {"size": size, "recipe": recipe, **nr.evaluate(out, cfg, tlaw, params)}


def _print(d: dict) -> None:
    lo, hi = d["gain_interval"] or (float("nan"), float("nan"))
    print(f"law {d['law']}: gain {d['gain']:+.4f}, 90% interval [{lo:+.4f}, {hi:+.4f}]; true gain "
          f"{d['true_gain']:+.4f} ({'inside' if lo <= d['true_gain'] <= hi else 'OUTSIDE'})")
    for a in d["axes"]:
        past = a["plan"] > a["tested"][1] * (1 + 1e-9)
        sd = a["error_per_doubling"]
        print(f"  {a['axis']:16s} {a['kind']:9s} plan {a['plan']:9.3f}  baseline {a['baseline']:9.3f}  tested "
              f"[{a['tested'][0]:g}, {a['tested'][1]:g}]" + (f"  PAST it; error per doubling {sd:.4f}" if past and sd
                                                           else "  PAST it; no error measured" if past else ""))
    for f in d["forms"]:
        r = f["draws_5_95"]
        print(f"  form {f['law']:16s} weight {f['weight']:.2f}  gain {f['gain']:+.4f}"
              + (f"  draws 5-95% [{r[0]:+.4f}, {r[1]:+.4f}]" if r else ""))
    z = (d["error_at_plan"] - d["error_random_mean"]) / d["error_random_sd"] if d["error_random_sd"] else float("nan")
    print(f"  gain error at the plan {d['error_at_plan']:+.4f}; over random tested recipes {d['error_random_mean']:+.4f}"
          f" (SD {d['error_random_sd']:.4f}; the plan's z {z:+.1f})")
    if d["optimism_mean"] is not None:
        print(f"  the draws' own optimism at their optima {d['optimism_mean']:+.4f} (SD {d['optimism_sd']:.4f})")
    if "within_rung" in d:
        w, r, t = d["within_rung"], d["redone"], d["true_gain"]
        print(f"  within the fitted sizes (N = {w['size']:.3g}): slope {w['slope']:.2f} (SE {w['slope_se']:.2f}), "
              f"relative error of a difference {w['relative_error']:.2f}")
        for how, (lo, hi) in r.items():
            print(f"    interval {how:10s} [{lo:+.4f}, {hi:+.4f}] ({'inside' if lo <= t <= hi else 'OUTSIDE'})")
    for a in d.get("anchors", []):
        lo, hi = a["gain_interval"] or (float("nan"), float("nan"))
        print(f"  anchored at the plan, {a['size']}: gain {a['predicted_gain']:+.4f}, [{lo:+.4f}, {hi:+.4f}], true "
              f"{a['true_gain']:+.4f} ({'inside' if a['inside'] else 'OUTSIDE'})")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--truth", required=True, help="a truth of next_runs.py (a prefix of its name)")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--policy", choices=("next", "random"), default="next")
    p.add_argument("--k", type=int, default=12)
    p.add_argument("--bootstrap", type=int, default=100)
    p.add_argument("--refit-bootstrap", type=int, default=40)
    p.add_argument("--interaction-bootstrap", type=int, default=15)
    p.add_argument("--keep", help="folder for the refitted registry (default: a temporary one)")
    p.add_argument("--probes", nargs="*", metavar="SIZE",
                   help="also try the two remedies (module docstring), anchoring at each SIZE (e.g. tiny-m tiny-l)")
    p.add_argument("--registry", help="diagnose this kept registry instead of running the experiment")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    full, truth = _truth(args.truth)
    with tempfile.TemporaryDirectory() as tmp:
        keep = Path(args.keep or tmp)
        keep.mkdir(parents=True, exist_ok=True)
        path = args.registry or str(keep / f"{args.policy}-{args.k}.duckdb")
        if not args.registry:
            with tempfile.TemporaryDirectory() as work:
                nr.experiment(full, args.seed, Path(work), n_boot=args.bootstrap,
                              inter_boot=args.interaction_bootstrap, refit_boot=args.refit_bootstrap, ks=(args.k,),
                              policies=(args.policy,), keep=keep)
        out = {"truth": full, "seed": args.seed, "policy": args.policy, "k": args.k, **diagnose(path, truth)}
        if args.probes is not None:
            out["within_rung"] = within_rung(path)
            out["redone"] = redone_intervals(out["gain_interval"], out["within_rung"])
            with tempfile.TemporaryDirectory() as work:
                out["anchors"] = [anchor(path, full, size, Path(work)) for size in args.probes]
    if args.json:
        print(json.dumps(out))
    else:
        print(f"{full}, seed {args.seed}, {args.policy} K = {args.k}")
        _print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
