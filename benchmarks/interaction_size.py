"""The interaction test's size: how often it rejects additivity when the truth is additive.

Target (issue 29, item 11): on at least 200 additive simulations the rejection rate is 5% within its
binomial noise.

Each simulation is a real design (``--config``: by default ``tests/fit/small.toml``, a full factorial over two
diversity axes and one quality axis at four sizes, 81 fitted runs; ``toolscale/presets/default.toml`` is the
default preset's 330 fitted runs, about ten times slower per simulation) with the held-out rung predicted, not
fitted, and scores drawn from the built-in additive truth plus Gaussian noise (SD 0.015, a fresh draw per
seed). The test is run exactly as ``toolscale fit`` runs it
(:func:`fit.interaction.compare_hypotheses`): ``additive`` and ``interaction`` fitted from the grid
(``--starts``, ``--grid``), the statistic ``LR = n log(RSS_add / RSS_int)`` recomputed by
:func:`fit.interaction.lr_statistic`, and its p-value from ``--draws`` residual-bootstrap draws under the
additive fit, each refitted by the same procedure from the same starts. Additivity is rejected when
``p <= 0.05``; with ``--draws 39`` that is an observed statistic in the top 2 of 40, an exact 5% test
when the draws are exchangeable with the data. ``--truth multiplicative`` measures power instead.
Nothing is tuned on these results.

Usage::

    .venv/bin/python benchmarks/interaction_size.py [--sims 200] [--draws 39] [--detail PATH] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fit.decision import wilson  # noqa: E402
from fit.fitting import fit_law  # noqa: E402
from fit.interaction import ALPHA, lr_bootstrap, lr_statistic  # noqa: E402
from fit.laws import get_law, law_of  # noqa: E402
from fit.models import Points, Truth  # noqa: E402
from fit.simulate import builtin_truth, law_inputs_for_config, simulate_results  # noqa: E402
from grid.design import build_design  # noqa: E402
from toolscale.config import parse_config  # noqa: E402


def _config(path: str):
    return parse_config(tomllib.loads((ROOT / path).read_text(encoding="utf-8")))


def one(cfg, runs, truth_law: str, seed: int, *, draws: int, n_starts: int, max_grid: int,
        noise_sd: float) -> dict:
    """One simulated experiment: the test's p-value and verdict."""
    inputs = law_inputs_for_config(cfg)
    truth = builtin_truth(inputs, truth_law, noise_sd=noise_sd)
    y = simulate_results(runs, Truth(law=truth_law, params=truth.params, noise_sd=noise_sd),
                         get_law(truth_law, inputs), seed=seed)
    add, inter = get_law("additive", inputs), get_law("interaction", inputs)
    X = {a: [r.model_params if a == "N" else r.recipe[a] for r in runs] for a in add.axes}
    pts = Points(inputs=X, y=y, split=[r.split for r in runs], target="score")
    train = pts.subset(pts.split_array() == "fit")
    fa = fit_law(pts, add, n_starts=n_starts, max_grid=max_grid, seed=seed)
    fi = fit_law(pts, inter, n_starts=n_starts, max_grid=max_grid, seed=seed)
    kw = dict(starts_add=[fa.params], starts_int=[fi.params], fixed=fa.fixed or None)
    lr, add_params, _ = lr_statistic(train, law_of(fa), law_of(fi), **kw)
    p, b = lr_bootstrap(train, law_of(fa), add_params, law_of(fi), lr, n_draws=draws, seed=seed, **kw)
    return {"truth": truth_law, "seed": seed, "n": train.n, "lr": lr if math.isfinite(lr) else None, "p": p,
            "draws": b, "reject": bool(p <= ALPHA + 1e-12)}


def summarise(rows: list[dict]) -> dict:
    """Rejection rate with its 95% Wilson interval and the two-sided binomial test against 5%."""
    from scipy.stats import binomtest

    n = len(rows)
    k = sum(r["reject"] for r in rows)
    lo, hi = wilson(k, n, 0.95)
    test = binomtest(k, n, ALPHA) if n else None
    return {"simulations": n, "rejections": k, "rate": k / n if n else None, "wilson95": [lo, hi],
            "binomial_p_vs_5pct": test.pvalue if test else None,
            "truths": sorted({r["truth"] for r in rows}), "draws": sorted({r["draws"] for r in rows}),
            "fitted_runs": sorted({r["n"] for r in rows})}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sims", type=int, default=200)
    ap.add_argument("--config", default="tests/fit/small.toml", help="the design simulated (a path under the repo)")
    ap.add_argument("--draws", type=int, default=39, help="bootstrap draws per test (39: exact 5%% test)")
    ap.add_argument("--truth", choices=["additive", "multiplicative"], default="additive")
    ap.add_argument("--starts", type=int, default=4)
    ap.add_argument("--grid", type=int, default=1024)
    ap.add_argument("--noise-sd", type=float, default=0.015)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--detail", help="append every simulation as a JSON line")
    ap.add_argument("--from-detail", help="only summarise a --detail file")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.from_detail:
        rows = [json.loads(line) for line in Path(args.from_detail).read_text().splitlines() if line.strip()]
    else:
        cfg = _config(args.config)
        runs = build_design(cfg).runs
        rows, t0 = [], time.monotonic()
        for i in range(args.sims):
            row = one(cfg, runs, args.truth, args.first_seed + i, draws=args.draws, n_starts=args.starts,
                      max_grid=args.grid, noise_sd=args.noise_sd)
            rows.append(row)
            if args.detail:
                with open(args.detail, "a", encoding="utf-8") as f:
                    f.write(json.dumps(row) + "\n")
            print(f"{i + 1}/{args.sims}: p={row['p']:.3f} reject={row['reject']} "
                  f"({(time.monotonic() - t0) / 60:.1f} min)", file=sys.stderr, flush=True)
    out = summarise(rows)
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        lo, hi = out["wilson95"]
        print(f"{out['truths']} truth: {out['rejections']} of {out['simulations']} rejected additivity "
              f"({out['rate']:.1%}, 95% Wilson {lo:.1%}-{hi:.1%}); binomial test against 5%: "
              f"p = {out['binomial_p_vs_5pct']:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
