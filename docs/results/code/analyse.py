"""The code-domain replication's tables (issue 33): the code law beside the tool law, spec_dependency's effect,
the exponents across domains, the cross-domain fit. Reads the fit files ``run_code.sh`` wrote and the registry.

    python docs/results/code/analyse.py --tools docs/results --registry runs/code/toolscale.duckdb \\
        --experiment code-proxy > docs/results/code/analysis.md
    python docs/results/code/analyse.py --tools docs/results/logspaced --code docs/results/code/logspaced \\
        --registry runs/code-log/toolscale.duckdb --experiment code-proxy-log > docs/results/code/logspaced/analysis.md

Reads the code domain's fit and joint-fit files from ``--code`` (default: this folder), writes
``comparison.json`` (every number of the tables) there, and prints Markdown.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
PAIRS = (("indist-calls", "code-indist", "joint-indist.json"),
         ("heldout-servers", "code-heldout-apis", "joint-heldout.json"))


def _load(path: Path) -> dict[str, Any] | None:
    return json.loads(path.read_text()) if path.is_file() else None


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _num(x: float | None, fmt: str = ".3g") -> str:
    return "n/a" if x is None else format(x, fmt)


def law_row(fit: dict[str, Any]) -> dict[str, Any]:
    """The figures of one ``fit --json`` summary the comparison reads."""
    sel = fit.get("selection") or {}
    cands = {c["label"]: c for c in sel.get("candidates", [])}
    return {"experiment": fit["experiment"], "benchmark": f"{fit['benchmark']}/{fit['metric']}", "law": fit["law"],
            "n_params": fit["n_params"], "n_points": fit["n_points"], "residual_sd": fit["residual_sd"],
            "heldout_n": fit.get("heldout_n"), "heldout_relative_mae": fit.get("heldout_relative_mae"),
            "interval_coverage": fit.get("interval_coverage"), "extrapolation_factor": fit.get("extrapolation_factor"),
            "bic": fit["bic"], "cv": {k: v.get("cv_relative_mae") for k, v in cands.items()},
            "cv_bic": {k: v.get("bic") for k, v in cands.items()}}


def spec_effect(registry: str, experiment: str, benchmark: str) -> dict[str, Any] | None:
    """Predicted bpb change from spec_dependency 0 to 1 at the held-out rung (the held-out runs' median N and D, the
    centre recipe), over the stored fit's bootstrap draws: estimate and 95% interval."""
    from fit.laws import law_of
    from fit.models import FitResult
    from grid.registry import Registry

    with Registry(registry, read_only=True) as reg:
        rows = [r for r in reg.fits(experiment, benchmark) if r.metric == "bpb"]
        runs = reg.runs(experiment, status="done")
    if not rows:
        return None
    fit = FitResult.model_validate(rows[0].payload)
    law = law_of(fit)
    if "spec_dependency" not in law.axes:
        return {"law": fit.law, "note": "the chosen form has no spec_dependency input"}
    held = [r for r in runs if r.split == "heldout"]
    n = float(np.median([r.model_params for r in held])) if held else max(r.model_params for r in runs)
    d = float(np.median([r.train_tokens for r in held])) if held else 20 * n
    centre = {a: float(np.median([r.recipe[a] for r in runs])) for a in law.axes if a not in ("N", "D")}
    out = {}
    for label, (nn, dd) in {"heldout_rung": (n, d),
                            "largest_fitted_rung": (max(r.model_params for r in runs if r.split == "fit"),
                                                    max(r.train_tokens for r in runs if r.split == "fit"))}.items():
        X0 = {"N": [nn], "D": [dd], **{a: [v] for a, v in centre.items()}}
        X1 = {**X0, "spec_dependency": [1.0]}
        X0 = {**X0, "spec_dependency": [0.0]}
        diffs = np.array([float(law.predict(p, X1)[0] - law.predict(p, X0)[0]) for p in fit.draws()])
        est = float(law.predict(fit.params, X1)[0] - law.predict(fit.params, X0)[0])
        out[label] = {"N": nn, "D": dd, "recipe": centre, "delta_bpb": est,
                      "lo": float(np.quantile(diffs, 0.025)), "hi": float(np.quantile(diffs, 0.975)),
                      "n_draws": int(diffs.size)}
    q = {k: v for k, v in fit.params.items() if k.endswith("spec_dependency")}
    return {"law": fit.law, "fit_id": rows[0].fit_id, "params": q,
            "intervals": {k: fit.intervals[k].model_dump() for k in q if k in fit.intervals}, **out}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tools", default="docs/results", help="folder of the tool domain's fit files")
    ap.add_argument("--code", default=str(HERE), help="folder of the code domain's fit and joint-fit files")
    ap.add_argument("--registry", default="runs/code/toolscale.duckdb")
    ap.add_argument("--experiment", default="code-proxy")
    args = ap.parse_args()
    tools_dir, code_dir = Path(args.tools), Path(args.code)
    report: dict[str, Any] = {"tools_results": str(tools_dir), "code_results": str(code_dir), "pairs": []}
    print("## The code law beside the tool law (bits per byte, held-out rung, same protocol)\n")
    lines = ["| benchmarks | form chosen (rung CV) | parameters | residual SD (log bpb) | held-out relative MAE "
             "| 90% coverage | extrapolation |", "|---|---|---|---|---|---|---|"]
    for tool_b, code_b, joint in PAIRS:
        t, c = _load(tools_dir / f"fit-{tool_b}.json"), _load(code_dir / f"fit-{code_b}.json")
        pair: dict[str, Any] = {"tools": law_row(t) if t else None, "code": law_row(c) if c else None}
        for side, row in (("tools", pair["tools"]), ("code", pair["code"])):
            if row:
                lines.append(f"| {side}: {row['benchmark']} | {row['law']} | {row['n_params']} | "
                             f"{row['residual_sd']:.4f} | {_pct(row['heldout_relative_mae'])} | "
                             f"{_pct(row['interval_coverage'])} | {_num(row['extrapolation_factor'], '.1f')}x |")
        if pair["tools"] and pair["code"]:
            pair["residual_sd_code_le_tools"] = pair["code"]["residual_sd"] <= pair["tools"]["residual_sd"]
            a, b = pair["code"]["heldout_relative_mae"], pair["tools"]["heldout_relative_mae"]
            pair["heldout_code_le_tools"] = None if a is None or b is None else a <= b
        jf = _load(code_dir / joint)
        pair["joint"] = jf
        report["pairs"].append(pair)
    print("\n".join(lines))
    print("\n## Cross-domain fits (shared exponents, per-domain constants)\n")
    for pair in report["pairs"]:
        jf = pair["joint"]
        if not jf:
            continue
        print(f"**{jf['metric']}** ({jf['law']}): {jf['verdict']}; BIC alone {jf['bic_separate']:.1f} "
              f"(k={jf['k_separate']}), shared {jf['bic_joint']:.1f} (k={jf['k_joint']}); LR {jf['lr_stat']:.2f}"
              f" (p={_num(jf['lr_p'])})\n")
        print("| exponent | " + " | ".join(jf["experiments"]) + " | shared | domains' intervals overlap |")
        print("|---|" + "---|" * (len(jf["experiments"]) + 2))
        for e in jf["exponents"]:
            cells = [f"{e['separate'][x]['estimate']:.3g} [{e['separate'][x]['lo']:.3g}, "
                     f"{e['separate'][x]['hi']:.3g}]" for x in jf["experiments"]]
            j = e["joint"]
            agree = "n/a" if e["agree"] is None else ("yes" if e["agree"] else "no")
            print(f"| {e['name']} | " + " | ".join(cells) + f" | {j['estimate']:.3g} [{j['lo']:.3g}, {j['hi']:.3g}] "
                  f"| {agree} |")
        print("\n| experiment | residual SD alone | shared | held-out error alone | shared |\n|---|---|---|---|---|")
        for d in jf["domains"]:
            print(f"| {d['experiment']} | {d['residual_sd_separate']:.4f} | {d['residual_sd_joint']:.4f} | "
                  f"{_pct(d['heldout_relative_mae_separate'])} | {_pct(d['heldout_relative_mae_joint'])} |")
        print()
    eff = {}
    try:
        eff = {b: spec_effect(args.registry, args.experiment, b) for _, b, _ in PAIRS}
    except Exception as err:  # noqa: BLE001 - the registry is not committed: say why the effect is missing
        eff = {"error": f"{type(err).__name__}: {err}"}
    report["spec_dependency_effect"] = eff
    inter = _load(code_dir / "fit-code-indist-token_prob.json")
    report["interaction_token_prob"] = (inter or {}).get("interaction")
    print("## spec_dependency\n")
    for b, e in eff.items():
        if isinstance(e, dict) and "heldout_rung" in e:
            h, f = e["heldout_rung"], e["largest_fitted_rung"]
            print(f"- {b} ({e['law']}): spec_dependency 0 -> 1 changes predicted bpb by {h['delta_bpb']:+.4f} "
                  f"[{h['lo']:+.4f}, {h['hi']:+.4f}] at the held-out rung and {f['delta_bpb']:+.4f} "
                  f"[{f['lo']:+.4f}, {f['hi']:+.4f}] at the largest fitted one (95%, {h['n_draws']} bootstrap draws)")
        else:
            print(f"- {b}: {e}")
    if report["interaction_token_prob"]:
        i = report["interaction_token_prob"]
        print(f"- interaction test (token_prob, score laws): {i.get('verdict')} -> {i.get('supported')} "
              f"({i.get('strength')}); gain ratio {_num(i.get('gain_ratio'))} "
              f"[{_num(i.get('gain_ratio_lo'))}, {_num(i.get('gain_ratio_hi'))}], LR p = {_num(i.get('lr_p'))}")
    (code_dir / "comparison.json").write_text(json.dumps(report, indent=1, default=lambda o: None) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
