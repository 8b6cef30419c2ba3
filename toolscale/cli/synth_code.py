"""``toolscale synth`` for the code domain: a recipe with ``domain = "code"`` (``synth.code``)."""

from __future__ import annotations

import argparse
from typing import Any

from toolscale.cli._common import emit_json, print_table
from toolscale.errors import UsageError

__all__ = ["EXAMPLE_CODE_RECIPE", "is_code_recipe", "synth_code"]

EXAMPLE_CODE_RECIPE = """\
# toolscale synthesis recipe of the CODE domain: the knobs of one grid point (synth/code/).
# Build with:  toolscale synth --recipe THIS_FILE --out data/code0
domain = "code"

# ---- grid axes ------------------------------------------------------------
tool_diversity = 16     # distinct library APIs the tasks call (68 for training; 10 more are held out)
task_count = 128        # modules synthesised (before the jail filters)
db_diversity = 2        # repositories (names, spec layout, code conventions)
spec_dependency = 0.5   # probability that a later function's spec depends on an earlier one, 0..1
repair_rate = 0.0       # share of non-derivable edits (written without reading the spec) re-synthesised, 0..1
support_depth = 1       # specs read this many turns ahead of their writes, 1..6
seed = 0                # same recipe + seed -> byte-identical dataset

# ---- settings ---------------------------------------------------------------
defect_rate = 0.3       # probability a function is written without its spec being read
error_rate = 0.2        # probability a first draft fails a test that run_tests shows (then fixed)
backend = "emulator"    # workspace tools in-process, or "live": over the stdio MCP server (tests always jailed)
"""
"""The documented code recipe (``toolscale synth --example-recipe --domain code``)."""


def is_code_recipe(data: dict[str, Any]) -> bool:
    """Whether a parsed recipe file is a code-domain recipe (``domain = "code"``, flat or under ``[recipe]``)."""
    inner = data.get("recipe") if isinstance(data.get("recipe"), dict) else data
    return inner.get("domain") == "code"


def synth_code(args: argparse.Namespace, data: dict[str, Any], sets: dict[str, Any]) -> int:
    """Build a code dataset from the recipe ``data`` with ``--set`` overrides ``sets``; print or emit its manifest."""
    from synth.code.dataset import build_code_dataset
    from synth.code.models import CodeRecipe
    from synth.errors import RecipeError

    if args.server or args.with_collected or args.llm_cache or args.strict:
        flag = next(f for f, on in (("--server", args.server), ("--with-collected", args.with_collected),
                                    ("--llm-cache", args.llm_cache), ("--strict", args.strict)) if on)
        raise UsageError(f"{flag} is a tool-domain option; {args.recipe} is a code-domain recipe")
    knobs = dict(data.get("recipe") if isinstance(data.get("recipe"), dict) else data)
    knobs.pop("domain", None)
    seed = knobs.pop("seed", 0)
    knobs.update(sets)
    seed = args.seed if args.seed is not None else sets.pop("seed", seed)
    knobs.pop("seed", None)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise RecipeError(f"{args.recipe}: seed must be an integer, got {seed!r}")
    try:
        recipe = CodeRecipe.from_axes(knobs, seed=seed)
    except RecipeError as err:
        raise RecipeError(f"{args.recipe}: {err}") from None
    manifest = build_code_dataset(recipe, args.out)
    if args.json:
        emit_json(manifest)
        return 0
    rows = [{"axis": k, "requested": v, "measured": manifest.measured.get(k)} for k, v in manifest.requested.items()]
    print_table(rows, title=f"code dataset {manifest.dataset_id} -> {args.out}")
    c, m = manifest.counts, manifest.measured
    print(f"{c['accepted']} trajectories kept of {c['tasks']} tasks ({c['rejected']} rejected), {c['tool_calls']} "
          f"tool calls, {c['tests']} hidden tests run in the jail; golden pass rate {m['golden_pass_rate']:.0%}; "
          f"derivable edits {m['derivable_share']:.0%}; rejected tasks and reasons in {args.out}/rejected.jsonl")
    return 0
