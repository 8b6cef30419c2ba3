"""Issue 29's decision-accuracy extension, the reported figures (README.md here), as Markdown on stdout.

Reads the refits ``fit-<benchmark>.json`` (``fit --json``) here, the committed fits ``../fit-<benchmark>.json``,
and the registry. Per benchmark: whether the refit's parameters equal the committed ones; the held-out error on
seed means (:func:`fit.holdout.seed_mean_error`) over the 6 new recipes, all 9 design recipes and the verify arms'
recipes; the runs inside their 90% intervals; decision accuracy over the 9 design recipes
(:func:`fit.decision.decisions_for_fit`, both orders, all pairs and close pairs).

Usage: python docs/results/logspaced/decisions/analyse.py CONFIG FOLDER
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np

BENCHMARKS = ("indist-calls", "heldout-servers")


def _set_of(run) -> str:
    if run.source == "verification":
        return "verify"
    return "new" if str(run.design_version).startswith("next-") else "committed"


def _params_diff(a: dict, b: dict) -> float:
    """Largest relative difference between two fits' parameter estimates."""
    return max(abs(a[k]["estimate"] - b[k]["estimate"]) / max(abs(b[k]["estimate"]), 1e-12) for k in b)


def _pct(x) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _acc(d) -> str:
    if d is None:
        return "n/a"
    close = (f"{d.close_accuracy:.0%} of {d.close_pairs} close pairs [{d.close_lo:.2f}, {d.close_hi:.2f}]"
             if d.close_pairs else "no close pairs")
    return f"{d.accuracy:.0%} of {d.pairs} pairs [{d.lo:.2f}, {d.hi:.2f}]; {close}"


def benchmark_section(bench: str, folder: Path, runs, cfg) -> list[str]:
    from fit.decision import decisions_for_fit, recipe_key
    from fit.holdout import seed_mean_error
    from fit.targets import target_values
    from pipeline.fit import validation_of

    new, old = (json.loads(p.read_text()) for p in (folder / f"fit-{bench}.json", folder.parent / f"fit-{bench}.json"))
    diff = _params_diff(new["params"], old["params"])
    out = [f"## {bench} (bpb, envelope; law `{new['law']}`, committed `{old['law']}`)", "",
           f"- Refit on the same {new['n_points']} fitted runs: largest relative parameter difference from the committed "
           f"fit {diff:.2g} ({'the same law' if diff < 1e-6 and new['law'] == old['law'] else 'DIFFERENT: see below'}).",
           ""]
    by_id = {r.run_id: r for r in runs}
    pts = [p for p in new["heldout_predictions"] if p["run_id"] in by_id]
    rows = ["| recipes | runs | recipes | held-out error (seed means) | runs inside 90% intervals |", "|---|---|---|---|---|"]
    for label, keep in (("6 new design recipes", {"new"}), ("3 committed design recipes", {"committed"}),
                        ("all 9 design recipes", {"new", "committed"}), ("verify arms", {"verify"})):
        sel = [p for p in pts if _set_of(by_id[p["run_id"]]) in keep]
        if not sel:
            continue
        a = np.array([p["actual"] for p in sel])
        pr = np.array([p["predicted"] for p in sel])
        are, n_rec = seed_mean_error(a, pr, [recipe_key(by_id[p["run_id"]].recipe) for p in sel])
        inside = sum(1 for p in sel if p["lo"] is not None and p["lo"] <= p["actual"] <= p["hi"])
        rows.append(f"| {label} | {len(sel)} | {n_rec} | {_pct(are)} | {inside} of {len(sel)} |")
    out += rows + [""]
    out += ["| recipe (tools, tasks, databases, repair) | set | actual (seed mean) | predicted | error |",
            "|---|---|---|---|---|"]
    groups: dict[str, list] = {}
    for p in pts:
        groups.setdefault(recipe_key(by_id[p["run_id"]].recipe), []).append(p)
    for key, ps in sorted(groups.items(), key=lambda kv: _set_of(by_id[kv[1][0]["run_id"]])):
        r = by_id[ps[0]["run_id"]].recipe
        a, pr = float(np.mean([p["actual"] for p in ps])), float(np.mean([p["predicted"] for p in ps]))
        out.append(f"| {r['tool_diversity']:g}, {r['task_count']:g}, {r['db_diversity']:g}, {r['repair_rate']:g} "
                   f"| {_set_of(by_id[ps[0]['run_id']])} | {a:.3f} | {pr:.3f} | {(a - pr) / a:+.1%} |")
    design = [r for r in runs if r.source != "verification"]
    values = target_values(design, benchmark=bench, metric="bpb", target="envelope", validation=validation_of(cfg, None))
    fit = SimpleNamespace(benchmark=bench, metric="bpb", law=new["law"],
                          heldout=SimpleNamespace(points=[SimpleNamespace(run_id=p["run_id"], predicted=p["predicted"])
                                                          for p in pts]))
    observed, law = decisions_for_fit(design, fit, higher_is_better=False, values=values)
    out += ["", "Decision accuracy over the 9 design recipes (Wilson 90% intervals; close: within 2 seed SDs at the "
            f"largest fitted rung, seed SD {observed.seed_sd:.3f} bpb):", "",
            f"- the order observed at p-m: {_acc(observed)}",
            f"- the law's order at p-l: {_acc(law)}", ""]
    return out


def main(cfg_path: str, folder: str) -> int:
    from pipeline.fit import load_runs
    from toolscale.config import load_config

    cfg = load_config(cfg_path)
    loaded = load_runs(cfg.experiment.registry, cfg.experiment.name)
    runs = [r for r in loaded.runs if r.status == "done"]
    print("# Issue 29: the log-spaced law on every design recipe at p-l (generated by analyse.py)\n")
    for bench in BENCHMARKS:
        print("\n".join(benchmark_section(bench, Path(folder), runs, loaded.config)))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
    raise SystemExit(main(*sys.argv[1:3]))
