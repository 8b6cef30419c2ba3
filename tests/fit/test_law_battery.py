"""Every registered law recovers a known truth from simulated data (one seed; a contract battery).

The battery is parametrized over ``known_laws()``, so a newly registered form joins it without a
new test. Each law gets a truth (its start grid's centre, or realistic values where the form's
scale needs them), a seeded design over its inputs, 0.2% noise, and one fit. It must converge,
predict the truth within a few noise SDs on the design and one rung above it, and recover the
parameters that such a design identifies: the exponents of model size and tokens, and every
diversity axis's amplitude and exponent. A quality axis at three levels pins its *effect* (the
score or loss between its lowest and highest level), not its amplitude and curvature separately,
so the battery checks that effect instead of the two parameters.
"""

from __future__ import annotations

import numpy as np
import pytest

from fit.fitting import fit_law
from fit.laws import Law, get_law, known_laws
from fit.models import LawInput, Points

NOISE = 0.002
"""Noise SD: relative for a loss (multiplicative), score points for a score."""

LOSS_INPUTS = (LawInput(name="N", kind="size", ref=2000.0), LawInput(name="D", kind="tokens", ref=4000.0),
               LawInput(name="tool_diversity", kind="diversity", ref=4.0),
               LawInput(name="repair_rate", kind="quality", lo=0.0, hi=1.0))
SCORE_INPUTS = (LawInput(name="N", kind="size", ref=2000.0),
                LawInput(name="tool_diversity", kind="diversity", ref=4.0),
                LawInput(name="task_count", kind="diversity", ref=64.0),
                LawInput(name="repair_rate", kind="quality", lo=0.0, hi=1.0))
LEVELS = {"tool_diversity": (2.0, 4.0, 8.0, 16.0, 32.0), "task_count": (16.0, 64.0, 256.0),
          "repair_rate": (0.0, 0.5, 1.0)}
TWO_STEP = {"E": 1.7, "A": 400.0, "alpha": 0.34, "B": 1500.0, "beta": 0.3, "lo": 0.05, "hi": 0.85, "k": 3.0,
            "L0": 2.4}
"""A public-ladder-like truth (N 1e7-1e10, D 1e9-1e12) for the two-step law's loss stage."""


def _law(name: str) -> Law:
    for inputs in (LOSS_INPUTS, SCORE_INPUTS, None):
        try:
            return get_law(name, inputs)
        except Exception:
            continue
    raise AssertionError(f"law {name!r} takes none of the battery's input sets")


def _truth(law: Law) -> dict[str, float]:
    """The centre of each parameter's start grid (geometric for log-space parameters)."""
    if law.name == "two_step":
        return dict(TWO_STEP)
    out = {}
    for k, grid in law.start_grid.items():
        lo, hi = min(grid), max(grid)
        out[k] = float(np.sqrt(lo * hi)) if k in law.log_params and lo > 0 else (lo + hi) / 2
    return out


def _design(law: Law, rng: np.random.Generator, scale: float = 1.0) -> dict[str, np.ndarray]:
    """Four sizes (x ``scale``) x 40 random recipes; tokens at 2-60 per parameter where the law reads D."""
    if law.name == "sigmoid":
        return {"L": np.linspace(0.5, 3.5, 60)}
    if law.name == "two_step":
        n = np.repeat(np.geomspace(1e7, 1e10, 5), 5) * scale
        return {"N": n, "D": np.tile(np.geomspace(1e9, 1e12, 5), 5) * scale}
    rows = []
    for n in (2e3, 6e3, 2e4, 6e4):
        for _ in range(40):
            row = {"N": n * scale}
            if "D" in law.axes:
                row["D"] = n * scale * rng.choice([2.0, 6.0, 20.0, 60.0])
            row.update({a: float(rng.choice(LEVELS[a])) for a in law.axes if a in LEVELS})
            rows.append(row)
    return {k: np.array([r[k] for r in rows]) for k in rows[0]}


def _simulate(law: Law, truth: dict[str, float], X: dict[str, np.ndarray],
              rng: np.random.Generator) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Noisy observations, and the inputs the fit sees (a two-step law also observes its loss)."""
    if law.stages is not None:
        first, second, mid = law.stages
        loss = first.predict({k: truth[k] for k in first.param_names}, X) * np.exp(rng.normal(0, NOISE, X["N"].size))
        y = second.predict({k: truth[k] for k in second.param_names}, {mid: loss})
        return y + rng.normal(0, NOISE, y.size), {**X, mid: loss}
    y = law.predict(truth, X)
    noisy = y * np.exp(rng.normal(0, NOISE, y.size)) if law.target == "loss" else y + rng.normal(0, NOISE, y.size)
    return noisy, X


def _error(law: Law, pred: np.ndarray, true: np.ndarray) -> float:
    """Largest error: relative for a loss, in score points for a score."""
    return float(np.max(np.abs(pred / true - 1.0) if law.target == "loss" else np.abs(pred - true)))


def _identified(law: Law) -> list[str]:
    """Parameters the battery's design pins down: size and token exponents, diversity amplitudes and exponents."""
    names = [p for p in ("alpha", "alpha_N", "beta") if p in law.param_names]
    for inp in law.inputs:
        if inp.kind == "diversity":
            names += [p for p in law.param_names if p.endswith("_" + inp.name) and not p.startswith(("R_", "U"))
                      and law.name not in ("effective_unique", "chinchilla_unique", "chinchilla_overfit")]
    return names


@pytest.mark.parametrize("name", known_laws())
def test_every_registered_law_recovers_its_truth(name):
    law = _law(name)
    truth = _truth(law)
    rng = np.random.default_rng(0)
    X = _design(law, rng)
    y, seen = _simulate(law, truth, X, rng)
    fit = fit_law(Points(inputs={k: v.tolist() for k, v in seen.items()}, y=y.tolist(), target=law.target), law,
                  n_starts=4, max_grid=512)
    assert fit.converged, fit.message
    # the fitted curve is the truth's, within a few noise SDs, on the design and one rung above it
    assert _error(law, law.predict(fit.params, X), law.predict(truth, X)) < 4 * NOISE
    if law.name != "sigmoid":
        up = _design(law, np.random.default_rng(1), scale=3.0)
        assert _error(law, law.predict(fit.params, up), law.predict(truth, up)) < 8 * NOISE
    for p in _identified(law):
        assert fit.params[p] == pytest.approx(truth[p], rel=0.12), p
    # a quality axis at three levels identifies its effect between its lowest and highest level
    for inp in law.inputs:
        if inp.kind == "quality" and law.stages is None:
            ref = {k: np.full(2, v[0]) for k, v in X.items()}
            ref[inp.name] = np.array([inp.lo, inp.hi])
            want, got = law.predict(truth, ref), law.predict(fit.params, ref)
            assert got[1] - got[0] == pytest.approx(want[1] - want[0], rel=0.15, abs=4 * NOISE), inp.name


def test_the_battery_covers_every_registered_law():
    """A law that no input set of the battery can build would silently drop out of the parametrization."""
    assert {_law(n).name for n in known_laws()} == set(known_laws())
