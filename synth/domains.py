"""Task domains as plugins: what a run's dataset is made of, behind one interface every stage uses.

``[experiment] domain`` picks one. A :class:`Domain` says which recipe knobs (grid axes) it takes, how a
run's axis levels and ``[synth]`` settings become its recipe, how that recipe becomes a dataset folder
(``train.jsonl`` rows of pinned interface 1, ``rejected.jsonl``, ``manifest.json``), how many distinct
tools its ``tool_diversity`` axis can draw, and its default benchmarks. Probing, training, evaluation,
the grid, the fit and the allocator then work unchanged on either domain's datasets.

``tools``
    tool calls over MCP servers (:mod:`synth.dataset`); ``tool_diversity`` counts tools,
    ``db_diversity`` database instances.
``code``
    code agents writing small Python modules from specs (:mod:`synth.code`); ``tool_diversity`` counts
    library APIs, ``db_diversity`` repositories, and ``spec_dependency`` is its quality axis.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from synth.errors import RecipeError
from toolscale.config import DOMAIN_BENCHMARKS, DOMAIN_KNOBS, DOMAINS

__all__ = ["Domain", "DOMAINS", "get_domain", "domain_of", "CODE_SETTINGS"]

CODE_SETTINGS: tuple[str, ...] = ("error_rate", "defect_rate", "backend")
"""``[synth]`` settings the code domain reads (the others are the tool domain's)."""


@dataclass(frozen=True)
class Domain:
    """One task domain (see the module docstring)."""

    name: str
    """``tools`` or ``code``."""
    knobs: tuple[str, ...]
    """Recipe fields that may be grid axes."""
    benchmarks: tuple[str, ...]
    """Its two fixed benchmarks (in-distribution first)."""

    def recipe(self, levels: Mapping[str, Any], seed: int, synth: Any = None) -> Any:
        """The recipe of axis ``levels`` (stage axes left out by the caller) with the ``[synth]`` settings."""
        settings = synth.model_dump() if synth is not None else {}
        if self.name == "code":
            from synth.code.models import CodeRecipe

            picked = {k: v for k, v in settings.items() if k in CODE_SETTINGS}
            return CodeRecipe.from_axes(dict(levels), seed=seed, **picked)
        from synth.models import Recipe

        picked = {k: v for k, v in settings.items() if k in Recipe.model_fields}
        return Recipe.from_axes(dict(levels), seed=seed, **picked)

    def build(self, recipe: Any, folder: str | Path) -> Any:
        """Synthesise ``recipe``'s dataset into ``folder``; returns its manifest."""
        if self.name == "code":
            from synth.code.dataset import build_code_dataset

            return build_code_dataset(recipe, folder)
        from synth.dataset import build_dataset

        return build_dataset(recipe, folder)

    def tool_capacity(self, config: Any) -> int:
        """Distinct tools ``tool_diversity`` can draw for ``config`` (training APIs for ``code``); raises
        :class:`~synth.errors.RecipeError` naming the count when the axis asks for more."""
        axis = next((a for a in config.axes if a.name == "tool_diversity"), None)
        if self.name == "code":
            from synth.code.catalog import training_apis

            n = len(training_apis())
            if axis is not None and int(round(axis.max)) > n:
                raise RecipeError(f"axis tool_diversity max = {int(round(axis.max))} exceeds the {n} library APIs "
                                  f"the code domain can draw for training; set max <= {n}")
            return n
        from synth.capacity import bundled_tool_count, check_tool_levels

        if axis is None:
            return bundled_tool_count(config.synth.heldout_servers)
        return check_tool_levels(axis.max, config.synth.heldout_servers, config.synth.servers)


_DOMAINS = {name: Domain(name, DOMAIN_KNOBS[name], DOMAIN_BENCHMARKS[name]) for name in DOMAINS}


def get_domain(name: str) -> Domain:
    """The domain called ``name``; :class:`~synth.errors.RecipeError` naming the known ones otherwise."""
    try:
        return _DOMAINS[name]
    except KeyError:
        close = difflib.get_close_matches(str(name), list(_DOMAINS), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise RecipeError(f"unknown domain {name!r}{hint}; known: {', '.join(DOMAINS)}") from None


def domain_of(config: Any) -> Domain:
    """The domain of an experiment config (``[experiment] domain``)."""
    return get_domain(getattr(config.experiment, "domain", "tools"))
