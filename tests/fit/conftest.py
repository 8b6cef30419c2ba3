"""Shared fixtures of the fit tests: small seeded designs and simulated points."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from fit.laws import get_law
from fit.models import LawInput, Points

LEVELS = {"tool_diversity": [4.0, 9.0, 19.0, 40.0], "task_count": [64.0, 161.0, 406.0, 1024.0],
          "repair_rate": [0.0, 0.5, 1.0], "support_depth": [1.0, 2.0, 3.0, 4.0]}
SIZES = [(2.6e5, 8.2e5), (1.3e6, 1.2e6), (6.8e6, 3.9e6)]
"""(N, D) of three rungs, like the default preset's ladder."""


def reference_dir() -> Path:
    """``shared/reference`` beside the clone (CI), or beside a folder above it (a worktree under ``wt/``)."""
    repo = Path(__file__).resolve().parents[2]
    for parent in repo.parents:
        cand = parent / "shared" / "reference"
        if cand.is_dir():
            return cand
    return repo / ".." / "shared" / "reference"


def chinchilla_csv() -> Path:
    """``<repo>/../shared/reference/chinchilla/chinchilla_fig4_points.csv`` (CI has shared/ beside the clone)."""
    return reference_dir() / "chinchilla" / "chinchilla_fig4_points.csv"


def datablations_csv() -> Path:
    """``<repo>/../shared/reference/datablations/datablations_losses.csv`` (Muennighoff et al. 2023)."""
    return reference_dir() / "datablations" / "datablations_losses.csv"


def small_inputs() -> tuple[LawInput, ...]:
    """Model size, two diversity axes and two quality axes."""
    return (LawInput(name="N", kind="size", ref=SIZES[0][0]),
            LawInput(name="tool_diversity", kind="diversity", ref=4.0),
            LawInput(name="task_count", kind="diversity", ref=64.0),
            LawInput(name="repair_rate", kind="quality", lo=0.0, hi=1.0),
            LawInput(name="support_depth", kind="quality", lo=1.0, hi=4.0))


def design_runs(n_points: int = 40, seed: int = 0, sizes=SIZES) -> list[SimpleNamespace]:
    """Random recipes over LEVELS crossed with every rung; top rung held out (split)."""
    rng = np.random.default_rng(seed)
    runs = []
    for i in range(n_points):
        recipe = {a: float(rng.choice(v)) for a, v in LEVELS.items()}
        for j, (n, d) in enumerate(sizes):
            runs.append(SimpleNamespace(run_id=f"r{i}-{j}", recipe=recipe, model_params=n, train_tokens=d,
                                        train_flops=6 * n * d, split="heldout" if j == len(sizes) - 1 else "fit"))
    return runs


def simulated_points(law_name: str, params: dict, runs, *, noise: float = 0.01, seed: int = 1) -> Points:
    """Points drawn from ``law_name`` at ``params`` over ``runs`` (score target)."""
    from fit.models import Truth
    from fit.simulate import simulate_results

    law = get_law(law_name, small_inputs())
    y = simulate_results(runs, Truth(law=law_name, params=params, noise_sd=noise), law, seed=seed)
    X = {a: [r.model_params if a == "N" else r.recipe[a] for r in runs] for a in law.axes}
    return Points(inputs=X, y=y, run_ids=[r.run_id for r in runs], split=[r.split for r in runs],
                  flops=[r.train_flops for r in runs], benchmark="sim")


@pytest.fixture
def truths() -> dict[str, dict[str, float]]:
    """Known parameters of the hypothesis laws over :func:`small_inputs`."""
    base = {"S0": 0.3, "A_N": 0.3, "alpha_N": 0.45, "G_tool_diversity": 0.12, "alpha_tool_diversity": 0.6,
            "G_task_count": 0.10, "alpha_task_count": 0.5}
    return {
        "additive": {**base, "H_repair_rate": 0.06, "beta_repair_rate": 1.0, "H_support_depth": 0.05,
                     "beta_support_depth": 1.5},
        "multiplicative": {**base, "H_repair_rate": 0.5, "beta_repair_rate": 1.0, "H_support_depth": 0.4,
                           "beta_support_depth": 1.5},
    }


@pytest.fixture
def sim() -> SimpleNamespace:
    """The helpers above, as a fixture (test modules cannot import conftest under importlib mode)."""
    return SimpleNamespace(design_runs=design_runs, simulated_points=simulated_points, small_inputs=small_inputs,
                           chinchilla_csv=chinchilla_csv, datablations_csv=datablations_csv, LEVELS=LEVELS, SIZES=SIZES)
