"""Simulation: results drawn from a known law over a real design (for recovery tests and the demo).

:func:`simulate_results` is pure (planned runs + truth -> runs with metrics). The
``toolscale simulate`` command builds the config's real design with
``grid.design.build_design`` and stores the results with
``Registry.import_runs(..., simulated=True, source="simulated")``, so every report
built from them says they are simulated.

The built-in truth (:func:`builtin_truth`) is documented here:

- law ``multiplicative`` (or ``additive`` with ``hypothesis="additive"``) over the
  config's model size, diversity and quality axes;
- ``S0 = 0.35``, ``A_N = 0.25``, ``alpha_N = 0.40`` (size normalised by the smallest rung; the
  lowest mean score is 0.10, so clipping at 0 rarely bites);
- every diversity axis ``G = 0.10``, ``alpha = 0.60`` (level normalised by the axis minimum);
- every quality axis ``beta = 1.0`` and ``H = 0.40`` (multiplicative: up to +20% of the
  diversity gain per axis) or ``H = 0.05`` (additive: up to 2.5 score points per axis);
- Gaussian noise ``SD = 0.015`` score points (a benchmark of ~1,000 items), scores clipped to [0, 1].
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from fit.errors import FitInputError
from fit.laws import Law, get_law
from fit.models import LawInput, Truth

if TYPE_CHECKING:
    from grid.models import RunRecord, RunSpec

__all__ = ["builtin_truth", "load_truth", "simulate_results", "simulate_experiment", "law_inputs_for_config",
           "DEFAULT_NOISE_SD"]

DEFAULT_NOISE_SD = 0.015


def law_inputs_for_config(config: Any) -> tuple[LawInput, ...]:
    """Law inputs of an :class:`toolscale.config.ExperimentConfig`: N by the smallest rung, then each axis."""
    n_min = min(m.approx_params for m in config.ladder)
    inputs = [LawInput(name="N", kind="size", ref=n_min)]
    for a in config.axes:
        if a.kind == "quality":
            inputs.append(LawInput(name=a.name, kind="quality", lo=a.min, hi=a.max))
        else:
            inputs.append(LawInput(name=a.name, kind="diversity", ref=a.min))
    return tuple(inputs)


def builtin_truth(inputs: Sequence[LawInput], hypothesis: str = "multiplicative", *,
                  noise_sd: float = DEFAULT_NOISE_SD, benchmark: str = "simulated") -> Truth:
    """The documented default truth (module docstring) for the given law inputs."""
    if hypothesis not in ("additive", "multiplicative"):
        raise FitInputError(f"hypothesis must be 'additive' or 'multiplicative', got {hypothesis!r}")
    law = get_law(hypothesis, inputs)
    params: dict[str, float] = {"S0": 0.35, "A_N": 0.25, "alpha_N": 0.40}
    for inp in law.inputs:
        if inp.kind == "diversity":
            params[f"G_{inp.name}"] = 0.10
            params[f"alpha_{inp.name}"] = 0.60
        elif inp.kind == "quality":
            params[f"H_{inp.name}"] = 0.40 if hypothesis == "multiplicative" else 0.05
            params[f"beta_{inp.name}"] = 1.0
    return Truth(law=hypothesis, params=params, noise_sd=noise_sd, benchmark=benchmark,
                 description=f"built-in {hypothesis} truth (fit/simulate.py)")


def load_truth(path: str | Path) -> Truth:
    """Read a truth TOML: ``law = "..."``, ``noise_sd``, ``benchmark``, and a ``[params]`` table."""
    from toolscale.config import read_toml

    p = Path(path)
    data = read_toml(p, kind="truth", error=FitInputError)
    try:
        return Truth.model_validate({"description": f"from {p}", **data})
    except Exception as err:  # pydantic ValidationError -> one line
        first = str(err).splitlines()
        raise FitInputError(f"{p}: not a truth file ({'; '.join(first[:3])}); expected law, [params], "
                            "optional noise_sd and benchmark") from None


def simulate_results(runs: Sequence[RunSpec | RunRecord], truth: Truth, law: Law, *, seed: int = 0,
                     noise_sd: float | None = None) -> list[float]:
    """One simulated value per planned run: ``law(truth.params, X) + N(0, sd)``, scores clipped to [0, 1].

    ``runs`` are :class:`grid.models.RunSpec` (or records) with ``model_params``,
    ``train_tokens``, ``train_flops`` and a recipe holding every axis the law reads.
    Loss laws get multiplicative log-normal noise instead.
    """
    missing = [p for p in law.param_names if p not in truth.params]
    if missing:
        raise FitInputError(f"truth for law {law.name!r} lacks parameters {', '.join(missing)}")
    X: dict[str, list[float]] = {a: [] for a in law.axes}
    for r in runs:
        for a in law.axes:
            v = {"N": r.model_params, "D": r.train_tokens, "C": r.train_flops}.get(a, r.recipe.get(a))
            if v is None:
                raise FitInputError(f"run {r.run_id} has no value for {a!r}, which the truth law reads")
            X[a].append(float(v))
    mean = law.predict(truth.params, {k: np.asarray(v) for k, v in X.items()})
    sd = truth.noise_sd if noise_sd is None else noise_sd
    rng = np.random.default_rng(seed)
    eps = rng.normal(0.0, sd, size=mean.shape)
    if law.target == "loss":
        return [float(v) for v in mean * np.exp(eps)]
    return [float(v) for v in np.clip(mean + eps, 0.0, 1.0)]


def simulate_experiment(registry: Any, config: Any, experiment: str, *, truth_path: str | Path | None = None,
                        hypothesis: str = "multiplicative", noise_sd: float | None = None,
                        benchmark: str | None = None, seed: int = 0, replace: bool = False) -> dict[str, Any]:
    """The edge of ``toolscale simulate``: build the config's real design, draw results, store them.

    Simulating another design (another config's grid) into an existing experiment is refused. Simulating
    again with other results (another seed, truth or noise) is refused, naming the changed scores, unless
    ``replace``: then the new values overwrite the old ones (kept in
    ``run_history``) and the experiment's fits are marked stale. The same simulation again changes nothing.

    Every run keeps the design's recipe, planned N, D, FLOPs and split; it is renamed into
    ``experiment`` (run ids recomputed) and stored with ``source="simulated"`` in an
    experiment flagged ``simulated``, with the config (so fits know the axis kinds).
    Returns a summary dict (runs, held-out runs, truth).
    """
    from grid import build_design
    from grid.models import MetricResult, run_id_for

    if not experiment or not experiment.replace("-", "").replace("_", "").replace(".", "").isalnum():
        raise FitInputError(f"experiment name must be letters, digits, '-', '_' or '.', got {experiment!r}")
    existing = {e.name: e for e in registry.experiments()}
    if experiment in existing and not existing[experiment].simulated:
        raise FitInputError(f"experiment {experiment!r} holds real runs; simulate into a new experiment name")
    inputs = law_inputs_for_config(config)
    truth = load_truth(truth_path) if truth_path else builtin_truth(inputs, hypothesis)
    if benchmark:
        truth = truth.model_copy(update={"benchmark": benchmark})
    if noise_sd is not None:
        truth = truth.model_copy(update={"noise_sd": noise_sd})
    generic = get_law(truth.law)
    axis_law = any(i.kind in ("diversity", "quality") for i in generic.inputs)
    law = get_law(truth.law, inputs) if axis_law else generic  # N/D laws read the design's N and D as they are
    metric = truth.metric or ("loss" if law.target == "loss" else "score")
    design = build_design(config)
    if experiment in existing:
        stored = sorted({r.design_version for r in registry.runs(experiment)})
        other = [v for v in stored if v != design.version]
        if other:
            raise FitInputError(f"experiment {experiment!r} was simulated from design {', '.join(other)}; this config "
                                f"makes design {design.version} (another grid): simulate it into a new experiment "
                                "name (one experiment holds one design, so a fit never pools two)")
    runs = []
    for r in design.runs:
        rid = run_id_for(experiment, design.version, r.recipe, r.model_size, r.seed, r.token_multiplier)
        runs.append(r.model_copy(update={"run_id": rid, "experiment": experiment,
                                         "metadata": {**r.metadata, "simulated": True, "truth_law": truth.law}}))
    values = simulate_results(runs, truth, law, seed=seed)
    metrics = [[MetricResult(benchmark=truth.benchmark, metric=metric, score=v,
                             higher_is_better=law.target == "score", version="simulated")] for v in values]
    new = registry.import_runs(experiment, [a.name for a in config.axes], runs, metrics, simulated=True,
                               source="simulated", on_conflict="replace" if replace else "refuse",
                               config=config.model_dump(mode="json"))
    return {"experiment": experiment, "simulated": True, "runs": len(runs), "new_runs": new, "metric": metric,
            "heldout": sum(r.split == "heldout" for r in runs), "design_version": design.version,
            "truth": truth.model_dump(mode="json")}
