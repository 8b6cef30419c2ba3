"""Recipe files: ``toolscale synth --recipe RECIPE.toml`` and the documented example recipe."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from synth.errors import RecipeError
from synth.models import Recipe

__all__ = ["EXAMPLE_RECIPE", "load_recipe", "parse_recipe"]

EXAMPLE_RECIPE = """\
# toolscale synthesis recipe: the knobs of one grid point.
# Build with:  toolscale synth --recipe THIS_FILE --out data/point0
# Keys may also sit under a [recipe] table (the [llm.<role>] tables beside it). Unknown keys are an error.

# ---- grid axes ------------------------------------------------------------
tool_diversity = 16     # distinct tools (APIs) drawn from, across servers (at most 50 bundled)
task_count = 128        # tasks synthesised (trajectories before the judge filters)
db_diversity = 2        # database instances (seed x schema variant) per server
repair_rate = 0.0       # share of non-derivable actions re-synthesised to be derivable, 0..1
coverage_quota = 0.0    # minimum share of each structure (chain, fan-in, fan-out, parallel), 0..0.25
support_depth = 2       # maximum assistant turns between a supporting observation and the action, 1..8
seed = 0                # same recipe + seed -> byte-identical dataset

# ---- settings (usually from the config's [synth] section) ------------------
error_rate = 0.2        # injected tool errors per call: timeout, unreachable, invalid argument
defect_rate = 0.3       # probability an action is made non-derivable (skipped lookup, memorised constant)
transform_rate = 0.0    # share of arguments shown only transformed (units, dates, case, sums...): still derivable
max_chain_len = 4       # longest random-walk chain, in calls
backend = "emulator"    # "emulator" (in-process tool logic) or "live" (stdio MCP servers, one per instance)
judge_threshold = 0.7   # minimum mean of the seven judge scores to keep a trajectory
# domains = ["travel", "banking"]   # restrict to these training domains (default: all but held-out)
narratives = false      # also write the mid-training corpus: narratives.jsonl and corpus.jsonl (seed 001)
narrative_min_judge = 0.7     # corpus judge gate: a document's trajectory needs this mean judge score
narrative_min_coherence = 4   # corpus coherence gate, 1..5
# llm_url = "http://localhost:8000/v1"   # optional OpenAI-compatible judge; never required
max_turns = 32          # most assistant turns of an LLM policy per trajectory (ASTRA: 32)

# ---- your own stdio MCP servers: collected and executed live, one session each per synthesis ----
# servers = ["python -m mcp_server_git --repository /data/repo"]
# arg_values = { repo_path = ["/data/repo"] }   # values tasks may state for your tools' arguments

# ---- LLM roles (optional; a role left out keeps its offline template) -------
# Any OpenAI-compatible endpoint: vLLM, SGLang, TGI, a hosted API, `toolscale serve-model DIR`.
# Roles: task_writer, policy, emulator, judge. The key is read from the variable api_key_env names.
# [llm.judge]
# base_url = "http://127.0.0.1:8000/v1"
# model = "Qwen/Qwen3-8B"
# api_key_env = "OPENAI_API_KEY"   # omit for a local server without a key
# temperature = 0.0
# max_tokens = 1024
# concurrency = 8                  # requests in flight for this role
# timeout_s = 60.0                 # per request; 429/5xx/timeouts are retried max_tries times
# max_tries = 4
# price_in = 0.0                   # dollars per 1M prompt tokens
# price_out = 0.0                  # dollars per 1M completion tokens
"""
"""The documented example printed by ``toolscale synth --example-recipe``."""


def parse_recipe(data: dict[str, Any], source: str = "recipe") -> Recipe:
    """A :class:`Recipe` from a mapping (flat, or under ``recipe``); one-line errors naming the bad key."""
    if "recipe" in data and isinstance(data["recipe"], dict):
        extra = [k for k in data if k not in ("recipe", "llm")]
        if extra:
            raise RecipeError(f"{source}: keys {extra} outside the [recipe] table")
        data = {**data["recipe"], **({"llm": data["llm"]} if "llm" in data else {})}
    data = dict(data)
    seed = data.pop("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise RecipeError(f"{source}: seed must be an integer, got {seed!r}")
    try:
        return Recipe.from_axes(data, seed=seed)
    except RecipeError as err:
        raise RecipeError(f"{source}: {err}") from None


def load_recipe(path: str | Path) -> Recipe:
    """Read a recipe TOML file."""
    from toolscale.config import read_toml

    data = read_toml(path, kind="recipe", error=RecipeError,
                     hint="; write one with `toolscale synth --example-recipe`")
    return parse_recipe(data, source=str(path))
