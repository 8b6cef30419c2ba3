"""How many tools a config's synthesis can draw from, and the check of the ``tool_diversity`` axis.

``available = bundled training tools + tools of the user's servers``: the bundled count is every tool of
the bundled domains not held out (the config's ``[synth].heldout_servers``, else
:data:`synth.servers.db.HELDOUT_DOMAINS`); the user's servers are started and listed (one session each,
closed again) only when the bundled tools alone fall short of the axis maximum.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from synth.errors import RecipeError
from synth.models import Recipe
from synth.selection import bundled_spec, training_domains

__all__ = ["bundled_tool_count", "available_tools", "check_tool_levels"]


def bundled_tool_count(heldout_servers: Sequence[Any] = ()) -> int:
    """Tools of the bundled training domains (held-out ones excluded)."""
    recipe = Recipe(heldout_servers=list(heldout_servers))
    return sum(len(bundled_spec(d).docs) for d in training_domains(recipe))


def available_tools(heldout_servers: Sequence[Any] = (), servers: Sequence[str] = (),
                    timeout_s: float = 30.0) -> tuple[int, int]:
    """``(bundled training tools, tools of the user's servers)``; starts the servers to list them."""
    bundled = bundled_tool_count(heldout_servers)
    if not servers:
        return bundled, 0
    from synth.userservers import UserServers

    with UserServers(servers, timeout_s=timeout_s) as live:
        return bundled, sum(len(d) for d in live.docs().values())


def check_tool_levels(max_level: float, heldout_servers: Sequence[Any] = (), servers: Sequence[str] = (),
                      timeout_s: float = 30.0) -> int:
    """The available tool count; raises :class:`~synth.errors.RecipeError` naming it when the
    ``tool_diversity`` axis asks for more (the user's servers are only started when needed)."""
    need = int(round(max_level))
    bundled = bundled_tool_count(heldout_servers)
    if need <= bundled:
        return bundled
    bundled, user = available_tools(heldout_servers, servers, timeout_s)
    total = bundled + user
    if need > total:
        src = f"{bundled} bundled training tools" + (f" + {user} of [synth].servers" if servers else "")
        raise RecipeError(f"axis tool_diversity max = {need} exceeds the {total} tools available ({src}); "
                          f"set max <= {total} or add servers under [synth].servers")
    return total
