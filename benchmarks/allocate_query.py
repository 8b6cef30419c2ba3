"""Allocation query time: load the fit from DuckDB and solve (point fit; then 1,000 bootstrap draws).

Targets (issue 10): one query under 1 s; with 1,000 bootstrap draws under 10 s.
Medians of repeated runs. ``--json`` prints the records for ``benchmarks/run_all``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import tomllib
from pathlib import Path

import numpy as np

from _timing import median_time  # this folder is on sys.path when run as a script
from allocator.models import AllocationQuery
from pipeline.allocate import plan_allocation
from fit.laws import get_law
from fit.models import FitResult
from fit.simulate import builtin_truth, law_inputs_for_config
from grid.design import build_design
from grid.models import MetricResult
from grid.registry import Registry
from toolscale.cli.project import example_config_text
from toolscale.config import parse_config


def _registry(folder: Path, n_draws: int) -> str:
    cfg = parse_config(tomllib.loads(example_config_text("default")))
    inputs = law_inputs_for_config(cfg)
    truth = builtin_truth(inputs, "multiplicative", benchmark="bench")
    law = get_law("multiplicative", inputs)
    rng = np.random.default_rng(0)
    draws = [{k: v * float(rng.uniform(0.9, 1.1)) for k, v in truth.params.items()} for _ in range(n_draws)]
    fit = FitResult(law=law.name, inputs=list(law.inputs), params=truth.params, target="score", loss=0.0,
                    converged=True, n_points=220, n_params=len(truth.params), data_hash="bench", huber_delta=0.05,
                    n_starts=1, residual_sd=0.015, log_likelihood=0.0, aic=0.0, bic=0.0, bootstrap=draws,
                    experiment="exp", benchmark="bench")
    path = str(folder / "bench.duckdb")
    runs = [r.model_copy(update={"experiment": "exp"}) for r in build_design(cfg).runs]
    with Registry(path) as reg:
        reg.import_runs("exp", [a.name for a in cfg.axes], runs, [[MetricResult(benchmark="bench", score=0.5)]
                                                                   for _ in runs])
        reg.ensure_experiment("exp", config=cfg.model_dump(mode="json"))
        reg.save_fit(experiment="exp", benchmark="bench", metric="score", law=law.name, converged=True,
                     n_points=220, data_hash="bench", payload=fit.model_dump(mode="json"))
    return path


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    repeats = 3 if args.quick else 5
    with tempfile.TemporaryDirectory() as tmp:
        path = _registry(Path(tmp), 1000)
        # the first query also fits the diversity-only baseline law (cached for later queries in the process)
        point_query = AllocationQuery.of(registry=path, budget=20000.0, benchmark="bench", draws=0)
        full_query = point_query.model_copy(update={"draws": 1000})
        first = median_time(lambda: plan_allocation(point_query, save=False), 1)
        point = median_time(lambda: plan_allocation(point_query, save=False), repeats)
        full = median_time(lambda: plan_allocation(full_query, save=False), repeats)
    records = [
        {"benchmark": "allocate", "figure": "first query of a process (fits the diversity-only baseline law)",
         "value": first, "unit": "s", "target": "< 1 s"},
        {"benchmark": "allocate", "figure": "one query, fit loaded from DuckDB (median)", "value": point,
         "unit": "s", "target": "< 1 s"},
        {"benchmark": "allocate", "figure": "query with 1,000 bootstrap draws (median)", "value": full,
         "unit": "s", "target": "< 10 s"},
    ]
    if args.json:
        print(json.dumps(records))
    else:
        for r in records:
            print(f"{r['figure']}: {r['value']:.3f} {r['unit']} (target {r['target']})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
