"""Pre-registered fresh held-out runs of the proxy experiment: the design recipes that p-l never ran.

The committed law (``fit --law auto`` on the fitted runs: ``chinchilla_unique``) was checked on the six
p-l runs of the D-optimal subset. The design has nine recipes; these are the other three, never trained
at p-l. This script tests the same stored fits on them, in three steps:

1. ``predict``: the newest stored fit of each benchmark predicts each recipe at p-l, at the tokens the
   experiment's p-l runs trained on; written to ``fresh_heldout_predictions.json`` (commit it before step 2).
2. ``train``: the runs, trained as the experiment trained p-l (the same steps, learning rate and tokens per
   parameter as its largest-D p-l run, seed 0, the experiment's shared tokenizer and datasets), in their own
   group ``<experiment>.fresh-heldout``, split ``heldout``; nothing ever fits them.
3. ``compare``: the same fits (by id) predict at each run's measured tokens; error, relative error and
   whether the 90% interval holds the run, per benchmark; written to ``fresh_heldout.json``.

Usage (from the repository root; the registry of ``run_proxy.sh``):

    .venv/bin/python docs/results/fresh_heldout.py predict --registry REG
    .venv/bin/python docs/results/fresh_heldout.py train --registry REG [--folder RUNS]
    .venv/bin/python docs/results/fresh_heldout.py compare --registry REG
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from fit.models import FitResult  # noqa: E402
from fit.predict import predict_at  # noqa: E402
from grid.registry import Registry  # noqa: E402
from toolscale.config import load_config  # noqa: E402

BENCHES = ("indist-calls", "heldout-servers")
RUNG = "p-l"
PREDICTIONS = HERE / "fresh_heldout_predictions.json"
RESULT = HERE / "fresh_heldout.json"


def _fresh_recipes(runs) -> list[dict[str, float]]:
    """Recipes of the fitted design that never ran at the held-out rung, in a fixed order."""
    at_top = {json.dumps(r.recipe, sort_keys=True) for r in runs if r.model_size == RUNG}
    fitted = {json.dumps(r.recipe, sort_keys=True) for r in runs if r.split == "fit"}
    return [json.loads(k) for k in sorted(fitted - at_top)]


def _fits(reg, experiment: str, ids: dict[str, str] | None = None) -> dict[str, tuple[str, FitResult]]:
    out = {}
    for b in BENCHES:
        rows = [r for r in reg.fits(experiment, b) if ids is None or r.fit_id == ids[b]]
        if not rows:
            raise SystemExit(f"no stored fit for {experiment}/{b}; run docs/results/run_proxy.sh first")
        out[b] = (rows[0].fit_id, FitResult.model_validate(rows[0].payload))
    return out


def _point(recipe: dict[str, float], n: float, d: float) -> dict[str, float]:
    return {"N": n, "D": d, **recipe}


def predict(reg_path: str, experiment: str) -> None:
    from allocator.verification import training_template

    with Registry(reg_path, read_only=True) as reg:
        runs = reg.runs(experiment, status="done")
        fits = _fits(reg, experiment)
    n, d, training = training_template(runs, RUNG)
    recipes = _fresh_recipes(runs)
    out = {"experiment": experiment, "rung": RUNG, "model_params": n, "train_tokens": d, "training": training,
           "recipes": recipes, "fits": {}}
    for b, (fit_id, fit) in fits.items():
        pred = predict_at(fit, [_point(r, n, d) for r in recipes], fit_id=fit_id)
        out["fits"][b] = {"fit_id": fit_id, "law": fit.law,
                          "predictions": [{"predicted": p.predicted, "lo": p.lo, "hi": p.hi} for p in pred.points]}
    PREDICTIONS.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {PREDICTIONS}: {len(recipes)} recipes; commit it before `train`")


def train(reg_path: str, experiment: str, config: str, max_parallel: int, folder: str | None) -> None:
    from grid.models import RunSpec, run_id_for
    from slurm.launcher import launch
    from toolscale.cli.launch import _wait

    pre = json.loads(PREDICTIONS.read_text(encoding="utf-8"))
    group = f"{experiment}.fresh-heldout"
    cfg = load_config(config)
    gcfg = cfg.model_copy(update={"experiment": cfg.experiment.model_copy(update={"name": group})})
    specs = [RunSpec(run_id=run_id_for(group, group, r, RUNG, 0), experiment=group, design_version=group, recipe=r,
                     model_size=RUNG, model_params=pre["model_params"], train_tokens=pre["train_tokens"],
                     train_flops=6.0 * pre["model_params"] * pre["train_tokens"], seed=0, split="heldout",
                     metadata={"group": "fresh-heldout", "verifies": experiment, **pre["training"]})
             for r in pre["recipes"]]
    with Registry(reg_path) as reg:
        reg.ensure_experiment(group, config=gcfg.model_dump(mode="json"), axes=[a.name for a in gcfg.axes])
        reg.add_design(group, group, {"group": "fresh-heldout", "verifies": experiment,
                                      "predictions": str(PREDICTIONS.name)})
        reg.add_runs(specs, source="verification")
    kw = dict(executor="local", max_parallel=max_parallel, folder=folder)
    launch(gcfg, reg_path, resume=True, **kw)
    _wait(reg_path, gcfg, argparse.Namespace(folder=folder, poll=5.0), top_up=lambda: launch(gcfg, reg_path, **kw))


def compare(reg_path: str, experiment: str) -> None:
    pre = json.loads(PREDICTIONS.read_text(encoding="utf-8"))
    group = f"{experiment}.fresh-heldout"
    with Registry(reg_path, read_only=True) as reg:
        runs = {json.dumps(r.recipe, sort_keys=True): r for r in reg.runs(group)}
        fits = _fits(reg, experiment, {b: pre["fits"][b]["fit_id"] for b in BENCHES})
    out = {"experiment": experiment, "group": group, "benchmarks": {}}
    for b, (fit_id, fit) in fits.items():
        rows = []
        for i, recipe in enumerate(pre["recipes"]):
            run = runs[json.dumps(recipe, sort_keys=True)]
            actual = run.metrics.get(f"{b}/bpb") if run.status == "done" else None
            p = predict_at(fit, [_point(recipe, run.model_params, run.train_tokens)], fit_id=fit_id).points[0]
            rows.append({"run_id": run.run_id, "status": run.status, "recipe": recipe,
                         "train_tokens": run.train_tokens, "actual": actual, "predicted": p.predicted, "lo": p.lo,
                         "hi": p.hi, "preregistered": pre["fits"][b]["predictions"][i],
                         "relative_error": None if actual is None else (p.predicted - actual) / actual,
                         "inside": None if actual is None else bool(p.lo <= actual <= p.hi)})
        done = [r for r in rows if r["actual"] is not None]
        mae = sum(abs(r["predicted"] - r["actual"]) for r in done) / len(done) if done else None
        mean = sum(r["actual"] for r in done) / len(done) if done else None
        out["benchmarks"][b] = {"fit_id": fit_id, "law": fit.law, "runs": rows, "mae": mae,
                                "relative_mae": None if not done else mae / mean,
                                "coverage": None if not done else sum(r["inside"] for r in done) / len(done)}
        print(f"{b}: {len(done)} runs, relative MAE {out['benchmarks'][b]['relative_mae']:.3f}, "
              f"coverage {out['benchmarks'][b]['coverage']:.2f}")
    RESULT.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("step", choices=["predict", "train", "compare"])
    p.add_argument("--registry", required=True, help="the proxy experiment's registry")
    p.add_argument("--experiment", default="proxy")
    p.add_argument("--config", default=str(HERE / "proxy.toml"))
    p.add_argument("--max-parallel", type=int, default=2)
    p.add_argument("--folder", help="the experiment's run folder (its datasets and tokenizer are reused); "
                                    "default: the config's executor.folder")
    args = p.parse_args(argv)
    if args.step == "predict":
        predict(args.registry, args.experiment)
    elif args.step == "train":
        train(args.registry, args.experiment, args.config, args.max_parallel, args.folder)
    else:
        compare(args.registry, args.experiment)
    return 0


if __name__ == "__main__":
    sys.exit(main())
