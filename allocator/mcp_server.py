"""``toolscale serve-mcp``: the allocator as MCP tools over stdio, so an agent can ask directly.

Tools: ``allocate(budget, benchmark, experiment?, model_size?, unit?)``,
``next_runs(budget, benchmark, runs, experiment?, max_cost?, model_size?, unit?)``,
``list_benchmarks()``, ``fit_summary(benchmark, experiment?)``. Each opens the
registry read-only for the call (allocations asked over MCP are not stored).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from toolscale.config import ExperimentConfig
from toolscale.errors import ToolscaleError

__all__ = ["build_server"]


def _user_errors(fn: Callable) -> Callable:
    """Report a ToolscaleError's one-line message to the client (other exceptions stay crashes)."""
    from mcp.server.mcpserver.exceptions import ToolError

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ToolscaleError as err:
            raise ToolError(str(err)) from None

    return wrapper


def build_server(registry: str, config: ExperimentConfig | None = None):
    """An ``MCPServer`` answering from the registry at ``registry``."""
    from mcp.server.mcpserver import MCPServer

    from allocator.service import benchmarks_with_fits, fit_summary_of, load_fit, plan_allocation, resolve_experiment
    from grid import Registry

    server = MCPServer("toolscale-allocator", instructions="Ask how to spend a synthetic-data budget: "
                       "new tools, new tasks, new databases, or better supervision.")

    @server.tool()
    @_user_errors
    def allocate(budget: float, benchmark: str, experiment: str | None = None, model_size: str | None = None,
                 unit: str | None = None) -> dict[str, Any]:
        """Best spend of `budget` per data axis for `benchmark`, with the predicted score, its interval,
        and the comparison with a diversity-only allocation."""
        report = plan_allocation(registry, budget=budget, benchmark=benchmark, experiment=experiment,
                                    model_size=model_size, unit=unit, config=config, save=False, redraws=10)
        return report.model_dump(mode="json")

    @server.tool()
    @_user_errors
    def next_runs(budget: float, benchmark: str, runs: int, experiment: str | None = None,
                  max_cost: float | None = None, model_size: str | None = None,
                  unit: str | None = None) -> dict[str, Any]:
        """The `runs` new runs (recipe x model size x tokens) that make the allocation at `budget` surest per
        unit of training cost, with their cost and the expected gain-interval width and regret after them
        (the same object as `toolscale next --json`)."""
        from allocator.next_service import propose_next_runs

        return propose_next_runs(registry, budget=budget, benchmark=benchmark, runs=runs, experiment=experiment,
                                 max_cost=max_cost, model_size=model_size, unit=unit,
                                 config=config).model_dump(mode="json")

    @server.tool()
    @_user_errors
    def list_benchmarks() -> dict[str, list[str]]:
        """Benchmarks that have a fitted law, with the experiments they were fitted on."""
        with Registry(registry, read_only=True) as reg:
            return benchmarks_with_fits(reg)

    @server.tool()
    @_user_errors
    def fit_summary(benchmark: str, experiment: str | None = None) -> dict[str, Any]:
        """The newest fit for `benchmark`: law, parameters with intervals, held-out error and predictions,
        the interaction verdict (the same object as `toolscale fit --json`)."""
        with Registry(registry, read_only=True) as reg:
            exp = resolve_experiment(reg, benchmark, experiment)
            fit_id, fit = load_fit(reg, exp, benchmark)
        return fit_summary_of(fit, fit_id).model_dump(mode="json")

    return server
