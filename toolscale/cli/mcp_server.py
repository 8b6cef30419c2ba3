"""``toolscale serve-mcp``: the allocator as MCP tools over stdio, so an agent can ask directly.

Tools: ``allocate``, ``next_runs``, ``predict``, ``list_benchmarks``, ``list_experiments``, ``list_fits`` and
``fit_summary``. Each opens the registry read-only for the call (allocations asked over MCP are not stored).
``allocate`` and ``next_runs`` build the same :class:`allocator.models.AllocationQuery` as the CLI and call the
same functions (:mod:`pipeline.allocate`, :mod:`pipeline.next_runs`), so they answer what ``allocate --json`` and
``next --json`` print.
The planning tools take an optional ``config`` path (an experiment config, TOML) for experiments of imported
runs, whose registry row holds no config; the server's own ``--config`` is the default. The server reports the
package version.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from toolscale.config import ExperimentConfig
from toolscale.errors import ToolscaleError

__all__ = ["build_server", "MCP_REDRAWS", "mcp_words"]

MCP_REDRAWS = 10
"""Draws the ``allocate`` tool re-solves for the spend ranges and the regret (``allocate`` re-solves 30; an
agent's question is answered sooner). With a fit of at most this many draws the two answers are the same."""


def mcp_words(message: str) -> str:
    """A CLI message in the tools' words: a flag ``--model-size`` becomes the parameter ``model_size``."""
    import re

    return re.sub(r"(?<![\w-])--([a-z][a-z0-9-]*)", lambda m: m.group(1).replace("-", "_"), message)


def _user_errors(fn: Callable) -> Callable:
    """Report a ToolscaleError's one-line message to the client, flags named as parameters (other exceptions stay
    crashes)."""
    from mcp.server.mcpserver.exceptions import ToolError

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ToolscaleError as err:
            raise ToolError(mcp_words(str(err))) from None

    return wrapper


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("toolscale")
    except PackageNotFoundError:
        from toolscale import __version__

        return __version__


def build_server(registry: str, config: ExperimentConfig | None = None):
    """An ``MCPServer`` answering from the registry at ``registry``."""
    import inspect

    from mcp.server.mcpserver import MCPServer

    from toolscale.config import load_config

    kwargs: dict[str, Any] = {"instructions": "Ask how to spend a synthetic-data budget: new tools, new tasks, "
                                              "new databases, or better supervision."}
    if "version" in inspect.signature(MCPServer.__init__).parameters:
        kwargs["version"] = _version()
    server = MCPServer("toolscale-allocator", **kwargs)

    def cfg(path: str | None) -> ExperimentConfig | None:
        return load_config(path) if path else config

    _plan_tools(server, registry, cfg)
    _next_tools(server, registry, cfg)
    _fit_tools(server, registry)
    return server


def _plan_tools(server: Any, registry: str, cfg: Callable[[str | None], ExperimentConfig | None]) -> None:
    """``allocate`` and ``predict``."""
    from allocator.models import AllocationQuery
    from grid import Registry
    from pipeline.allocate import load_fit, plan_allocation, resolve_experiment

    @server.tool()
    @_user_errors
    def allocate(budget: float, benchmark: str, experiment: str | None = None, model_size: str | None = None,
                 tokens: str | None = None, unit: str | None = None, fit_id: str | None = None,
                 extrapolate: float | None = None, config: str | None = None) -> dict[str, Any]:
        """Best spend of `budget` per data axis for `benchmark`, with the predicted score, its predictive
        interval, the model size and tokens planned for, unspent budget and caps, and the comparison with a
        diversity-only allocation. `config`: an experiment config path (needed for imported runs)."""
        query = AllocationQuery.of(registry=registry, budget=budget, benchmark=benchmark, experiment=experiment,
                                   model_size=model_size, tokens=tokens, unit=unit, config=cfg(config),
                                   redraws=MCP_REDRAWS, fit_id=fit_id, extrapolate=extrapolate)
        return plan_allocation(query, save=False).model_dump(mode="json")

    @server.tool()
    @_user_errors
    def predict(benchmark: str, at: list[dict[str, float]], experiment: str | None = None,
                fit_id: str | None = None, level: float = 0.9, config: str | None = None) -> dict[str, Any]:
        """Predict `benchmark` at points `at` (each a dict such as {"model_size": 1.3e10, "train_tokens": 5e12,
        "tool_diversity": 64}) from the newest fit (or `fit_id`), with intervals and how far each input lies
        outside the fitted range (the same object as `toolscale predict --json`)."""
        from allocator.planning import predict_from_fit

        aliases = {"model_size": "N", "model_params": "N", "params": "N", "train_tokens": "D", "tokens": "D"}
        points = [{aliases.get(k, k): float(v) for k, v in p.items()} for p in at]
        with Registry(registry, read_only=True) as reg:
            exp = resolve_experiment(reg, benchmark, experiment)
            fid, fit = load_fit(reg, exp, benchmark, fit_id=fit_id)
        c = cfg(config)
        units = {a.name: a.unit for a in c.axes} if c is not None else {}
        return predict_from_fit(fit, points, fit_id=fid, units=units, level=level).model_dump(mode="json")


def _next_tools(server: Any, registry: str, cfg: Callable[[str | None], ExperimentConfig | None]) -> None:
    """``next_runs``."""

    @server.tool()
    @_user_errors
    def next_runs(budget: float, benchmark: str, runs: int, experiment: str | None = None,
                  max_cost: float | None = None, model_size: str | None = None,
                  unit: str | None = None, fit_id: str | None = None, config: str | None = None) -> dict[str, Any]:
        """The `runs` new runs (recipe x model size x tokens) that make the allocation at `budget` surest per
        unit of training cost, with their cost and the expected gain-interval width and regret after them
        (the same object as `toolscale next --json`), from the newest fit (or `fit_id`)."""
        from allocator.models import AllocationQuery
        from pipeline.next_runs import propose_next_runs

        query = AllocationQuery.of(registry=registry, budget=budget, benchmark=benchmark, unit=unit,
                                   experiment=experiment, model_size=model_size, config=cfg(config),
                                   fit_id=fit_id)
        return propose_next_runs(query, runs=runs, max_cost=max_cost).model_dump(mode="json")


def _fit_tools(server: Any, registry: str) -> None:
    """``list_benchmarks``, ``list_experiments``, ``list_fits`` and ``fit_summary``."""
    from grid import Registry
    from pipeline.allocate import benchmarks_with_fits

    @server.tool()
    @_user_errors
    def list_benchmarks() -> dict[str, list[str]]:
        """Benchmarks that have a fitted law, with the experiments they were fitted on."""
        with Registry(registry, read_only=True) as reg:
            return benchmarks_with_fits(reg)

    @server.tool()
    @_user_errors
    def list_experiments() -> list[dict[str, Any]]:
        """Experiments in the registry: name, kind (designed, imported, simulated), axes and runs by state."""
        with Registry(registry, read_only=True) as reg:
            counts = reg.status_counts()
            return [{"name": e.name, "kind": reg.experiment_kind(e.name), "axes": list(e.axes or []),
                     "runs": counts.get(e.name, {})} for e in reg.experiments()]

    @server.tool()
    @_user_errors
    def list_fits(experiment: str | None = None, benchmark: str | None = None) -> list[dict[str, Any]]:
        """Stored fits, newest first: id, experiment, benchmark, law, runs, held-out error, stale or current."""
        from fit.models import FitResult, fit_warnings

        with Registry(registry, read_only=True) as reg:
            rows = reg.fits(experiment, benchmark)
        out = []
        for r in rows:
            f = FitResult.model_validate(r.payload)
            out.append({"fit_id": r.fit_id, "experiment": r.experiment, "benchmark": r.benchmark, "metric": r.metric,
                        "law": r.law, "n_points": r.n_points, "heldout_mae": f.heldout.mae if f.heldout else None,
                        "warnings": fit_warnings(f), "stale_reason": r.stale_reason,
                        "created_at": r.created_at.isoformat()})
        return out

    @server.tool()
    @_user_errors
    def fit_summary(benchmark: str, experiment: str | None = None, fit_id: str | None = None) -> dict[str, Any]:
        """A fit (the newest for `benchmark`, or `fit_id`): law, formula, parameters with intervals, held-out
        error and predictions, warnings, the interaction verdict and the decision accuracies (the same object as
        `toolscale fit --json`, built by the same function)."""
        from pipeline.fit import stored_summary

        return stored_summary(registry, benchmark, experiment=experiment, fit_id=fit_id).model_dump(mode="json")
