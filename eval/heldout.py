"""Items of the held-out benchmarks, built from the bundled servers reserved for evaluation.

``heldout-calls`` (:func:`build_heldout_calls`): single-step requests to the servers of
``synth.servers.db.HELDOUT_DOMAINS`` (never seen in training data). Each user request names every
argument value (taken from a seeded database, so the call is valid: it is executed once with
``synth.servers.catalog.call_tool`` and dropped if the server rejects it); the model is offered all
of the domain's tools and must pick the right one (BFCL category ``multiple``), or two calls for
a two-part request (``parallel``), or no call at all when the request belongs to another held-out
domain whose tools are not offered (``irrelevance``). Matching is BFCL's AST match.

``heldout-env`` (:func:`load_heldout_env`): multi-turn episodes in ``synth.envs`` executable
environments built from the held-out domains. ``indist-env`` (:func:`load_indist_env`): the same on the training
domains, over databases no training run draws.

Both are deterministic: the same code version gives the same items (the benchmark version is
bumped when this module changes them).
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import random
import re
from collections.abc import Sequence
from typing import Any

from eval.errors import BenchmarkDataError
from eval.models import CallItem, EnvItem

__all__ = ["build_heldout_calls", "load_heldout_calls", "load_heldout_servers", "load_indist_calls",
           "load_valid_calls", "VALID_DB_SEED_BASE", "item_key", "shared_items",
           "HELDOUT_DB_SEED_BASE", "load_heldout_env", "system_message", "items_digest", "CALLS_PER_DOMAIN",
           "PARALLEL_PER_DOMAIN", "IRRELEVANT_PER_DOMAIN", "ENV_EPISODES", "BENCHMARK_SEED", "load_indist_env",
           "INDIST_ENV_MIX"]

CALLS_PER_DOMAIN = 48
"""Single-call items per held-out domain (category ``multiple``)."""
PARALLEL_PER_DOMAIN = 12
"""Two-call items per held-out domain (category ``parallel``)."""
IRRELEVANT_PER_DOMAIN = 16
"""No-call items per held-out domain (category ``irrelevance``)."""
ENV_EPISODES = 40
"""Episodes of ``heldout-env``."""
BENCHMARK_SEED = 20_260_101
"""Seed of the benchmark's own sampling (fixed: part of the benchmark's definition)."""
HELDOUT_DB_SEED_BASE = 9_000_000
"""Database seeds of ``indist-calls`` and ``heldout-servers`` start here: training datasets draw seeds
``run_seed * 1000 + i`` (``synth.servers.db.db_instances``), so no run with a seed below 9000 sees them."""
VALID_DB_SEED_BASE = 9_100_000
"""Database seeds of ``valid-calls`` start here: disjoint from the test benchmarks' (``HELDOUT_DB_SEED_BASE`` +
0..5) and from every training run's."""

_TEMPLATES = ("Please {intent}.", "Can you {intent}?", "I need to {intent}.", "{Intent}, please.",
              "Could you {intent} for me?")
_N_DB_SEEDS = 6
_PLACEHOLDER = re.compile(r"\{(\w+)(?:\|([^}]*))?\}")


def _import_synth() -> tuple[Any, Any]:
    try:
        from synth.servers import catalog, db
    except ImportError as err:
        raise BenchmarkDataError(f"heldout-calls needs synth.servers (bundled servers): {err}") from None
    return catalog, db


def system_message(domain: str) -> dict[str, str]:
    """The system turn synthesised training conversations open with (``synth.rollout.system_prompt``),
    so evaluation prompts have the training data's shape."""
    try:
        from synth import system_prompt

        text = system_prompt(domain)
    except ImportError:  # pragma: no cover - synth is part of this checkout
        text = f"You are a careful assistant with access to the {domain} tools."
    return {"role": "system", "content": text}


def _value(param: Any, tool: Any, db: dict[str, list[dict]], row: dict[str, Any], rng: random.Random,
           db_module: Any) -> Any:
    """A value the user can state for ``param``: from the chosen row, a referenced table, or its source spec."""
    source = getattr(param, "source", "row") or ""
    col = getattr(param, "col", param.name)
    if source.startswith("int:"):
        lo, hi = (int(x) for x in source.split(":")[1:3])
        return rng.randint(lo, hi)
    if source.startswith("choice:"):
        return rng.choice(source.split(":", 1)[1].split("|"))
    if source.startswith("col:"):
        table, column = source[4:].split(".")
        return rng.choice(db[table])[column]
    if source == "names":
        return f"{rng.choice(db_module.FIRST)} {rng.choice(db_module.LAST)}"
    for p_name, table, column in getattr(tool, "refs", ()):
        if p_name == param.name:
            return rng.choice(db[table])[column]
    return row.get(col)


def _request(tool: Any, args: dict[str, Any]) -> str:
    """The user's words for one call: the tool's intent phrase with the values filled in.

    Intents hold ``{param}`` or ``{param|reference phrase}`` placeholders; synth's own renderer
    (``ToolDef.phrase``) fills them as in training queries, with a plain fallback.
    """
    if hasattr(tool, "phrase"):
        return tool.phrase(args)
    intent = getattr(tool, "intent", "") or f"use {tool.name}"
    return _PLACEHOLDER.sub(lambda m: str(args.get(m.group(1), m.group(2) or m.group(1))), intent)


def _sentence(parts: list[str], rng: random.Random) -> str:
    intent = " and ".join(parts)
    return rng.choice(_TEMPLATES).format(intent=intent, Intent=intent[:1].upper() + intent[1:])


def _sample_call(domain: str, catalog: Any, db_module: Any, rng: random.Random,
                 db_seed_base: int = 0) -> tuple[Any, dict[str, Any], str] | None:
    """(tool def, arguments, request phrase) of one valid call, or None when the server rejects it."""
    tool = rng.choice(catalog.SERVERS[domain].tools)
    db = db_module.make_database(domain, db_seed_base + rng.randrange(_N_DB_SEEDS), rng.randrange(db_module.N_VARIANTS))
    rows = db.get(tool.table) or [{}]
    row = rng.choice(rows)
    args = {}
    placeholders = getattr(tool, "intent", "")
    for p in tool.params:
        if not p.required and "{" + p.name + "}" not in placeholders:
            continue
        v = _value(p, tool, db, row, rng, db_module)
        if v is None:
            return None
        args[p.name] = v
    try:
        catalog.call_tool(domain, copy.deepcopy(db), tool.name, args)
    except Exception:  # noqa: BLE001 - synth.errors.ToolCallError, or any rejection: not an item
        return None
    return tool, args, _request(tool, args)


def _answer(tool: Any, args: dict[str, Any]) -> dict[str, dict[str, list[Any]]]:
    """BFCL possible-answer form; optional parameters not asked for may be omitted only."""
    expected: dict[str, list[Any]] = {k: [v] for k, v in args.items()}
    for p in tool.params:
        if p.name not in expected:
            expected[p.name] = [""]
    return {tool.name: expected}


def build_heldout_calls(*, calls_per_domain: int = CALLS_PER_DOMAIN, parallel_per_domain: int = PARALLEL_PER_DOMAIN,
                        irrelevant_per_domain: int = IRRELEVANT_PER_DOMAIN, seed: int = BENCHMARK_SEED,
                        domains: tuple[str, ...] | None = None, db_seed_base: int = 0,
                        id_prefix: str = "heldout") -> list[CallItem]:
    """The ``heldout-calls`` items (deterministic for fixed arguments).

    Parameters
    ----------
    calls_per_domain, parallel_per_domain, irrelevant_per_domain : int
        Items of each category per domain.
    seed : int
        Sampling seed (the benchmark uses :data:`BENCHMARK_SEED`).
    domains : tuple of str or None
        Server domains; default ``HELDOUT_DOMAINS``. Irrelevance items need at least two.
    db_seed_base : int
        Added to the database seeds the values are drawn from (0-5): :data:`HELDOUT_DB_SEED_BASE` gives
        databases no training run draws from (training seeds are ``run_seed * 1000 + i``).
    id_prefix : str
        Item ids are ``<prefix>-<domain>-<n>``.
    """
    catalog, db_module = _import_synth()
    domains = tuple(domains or db_module.HELDOUT_DOMAINS)
    unknown = [d for d in domains if d not in catalog.SERVERS]
    if unknown:
        raise BenchmarkDataError(f"unknown server domain {unknown[0]!r}; expected one of {', '.join(catalog.SERVERS)}")
    items: list[CallItem] = []
    for domain in domains:
        rng = random.Random(f"{seed}:{domain}")
        functions = [d.to_openai()["function"] for d in catalog.tool_docs(domain)]

        seen: set[str] = set()

        def draw() -> tuple[Any, dict[str, Any], str]:
            for _ in range(200):
                got = _sample_call(domain, catalog, db_module, rng, db_seed_base)  # noqa: B023 - rng of this domain
                key = json.dumps([got[0].name, got[1]], sort_keys=True, default=str) if got else ""
                if got and key not in seen:  # noqa: B023
                    seen.add(key)  # noqa: B023
                    return got
            raise BenchmarkDataError(f"server {domain!r}: no new valid call found in 200 draws")

        for n in range(calls_per_domain):
            tool, args, phrase = draw()
            items.append(CallItem(id=f"{id_prefix}-{domain}-{n}", category="multiple", source=domain,
                                  messages=[system_message(domain), {"role": "user", "content": _sentence([phrase], rng)}],
                                  functions=functions, ground_truth=[_answer(tool, args)]))
        for n in range(parallel_per_domain):
            (t1, a1, p1), (t2, a2, p2) = draw(), draw()
            if (t1.name, a1) == (t2.name, a2):
                continue
            items.append(CallItem(id=f"{id_prefix}-{domain}-par{n}", category="parallel", source=domain,
                                  messages=[system_message(domain),
                                            {"role": "user", "content": _sentence([p1, p2], rng)}],
                                  functions=functions, ground_truth=[_answer(t1, a1), _answer(t2, a2)]))
        others = [d for d in domains if d != domain]
        for n in range(irrelevant_per_domain if others else 0):
            other = others[n % len(others)]
            got = None
            for _ in range(100):
                got = _sample_call(other, catalog, db_module, rng, db_seed_base)
                if got:
                    break
            if not got:
                raise BenchmarkDataError(f"server {other!r}: no valid call found in 100 draws")
            items.append(CallItem(id=f"{id_prefix}-{domain}-irr{n}", category="irrelevance", source=domain,
                                  messages=[system_message(domain),
                                            {"role": "user", "content": _sentence([got[2]], rng)}],
                                  functions=functions, ground_truth=[]))
    return items


@functools.cache
def _heldout_calls() -> tuple[CallItem, ...]:
    return tuple(build_heldout_calls())


def load_heldout_calls() -> list[CallItem]:
    """The registered ``heldout-calls`` items (loader of :mod:`eval.benchmarks`); built once per process."""
    return list(_heldout_calls())


@functools.cache
def _heldout_servers() -> tuple[CallItem, ...]:
    return tuple(build_heldout_calls(calls_per_domain=84, parallel_per_domain=16, irrelevant_per_domain=16,
                                     db_seed_base=HELDOUT_DB_SEED_BASE, id_prefix="hs"))


def load_heldout_servers() -> list[CallItem]:
    """``heldout-servers``: 200 call items (84 single, 16 two-call per server) and 32 irrelevance items on the
    two held-out servers, on databases no training run draws from (the proxy protocol's held-out benchmark)."""
    return list(_heldout_servers())


@functools.cache
def _indist_calls() -> tuple[CallItem, ...]:
    _, db_module = _import_synth()
    return tuple(build_heldout_calls(calls_per_domain=26, parallel_per_domain=6, irrelevant_per_domain=2,
                                     domains=tuple(db_module.TRAIN_DOMAINS), db_seed_base=HELDOUT_DB_SEED_BASE,
                                     seed=BENCHMARK_SEED + 1, id_prefix="indist"))


def load_indist_calls() -> list[CallItem]:
    """``indist-calls``: 256 new call items (26 single, 6 two-call per server) and 16 irrelevance items on the
    eight training servers, on databases no training run draws from (the protocol's in-distribution benchmark)."""
    return list(_indist_calls())


@functools.cache
def _valid_calls() -> tuple[CallItem, ...]:
    _, db_module = _import_synth()
    drawn = build_heldout_calls(calls_per_domain=12, parallel_per_domain=4, irrelevant_per_domain=0,
                                domains=tuple(db_module.TRAIN_DOMAINS), db_seed_base=VALID_DB_SEED_BASE,
                                seed=BENCHMARK_SEED + 2, id_prefix="valid")
    test = {item_key(it) for it in (*_indist_calls(), *_heldout_servers())}
    return tuple(it for it in drawn if item_key(it) not in test)


def load_valid_calls() -> list[CallItem]:
    """``valid-calls``: the validation split, call items (12 single, 4 two-call per server, before the filter) on
    the eight training servers, built like ``indist-calls`` from its own sampling seed on databases disjoint from
    both test benchmarks (:data:`VALID_DB_SEED_BASE`). A request whose values do not depend on the database can
    still come out equal to a test item: those are dropped (one is), so no item is shared. It chooses
    checkpoints and learning rates, so the test items never do; no irrelevance items (they carry no reference
    call to score)."""
    return list(_valid_calls())


def item_key(item: CallItem | EnvItem) -> str:
    """An item's content, ids aside (canonical JSON): two benchmarks share an item when their keys are equal."""
    data = item.model_dump(mode="json")
    data.pop("id", None)
    return json.dumps(data, sort_keys=True, ensure_ascii=False)


def shared_items(a: Sequence[CallItem | EnvItem], b: Sequence[CallItem | EnvItem]) -> int:
    """How many items of ``a`` have their content (:func:`item_key`) among ``b``'s."""
    keys = {item_key(it) for it in b}
    return sum(item_key(it) in keys for it in a)


def load_heldout_env(n: int = ENV_EPISODES, seed: int = BENCHMARK_SEED) -> list[EnvItem]:
    """``heldout-env`` episodes: ``synth.envs.build.build_envs`` on the held-out domains."""
    try:
        from synth import build_envs
        from synth import HELDOUT_DOMAINS
    except ImportError as err:
        raise BenchmarkDataError(f"heldout-env needs synth.envs (executable environments): {err}") from None
    samples = build_envs(n, seed, domains=HELDOUT_DOMAINS)
    return [EnvItem(id=s.env_id, sample=s.model_dump(mode="json", by_alias=True)) for s in samples]


INDIST_ENV_MIX = (("single-hop", 1, {"high": 0, "medium": 0, "low": 0}),
                  ("multi-hop", 3, {"high": 0, "medium": 0, "low": 0}),
                  ("parallel-multi-hop", 3, {"high": 1, "medium": 2, "low": 2}))
"""``indist-env``'s shapes: ``(structure, hop budget H, distractors per tier)``, equal shares in this order."""


def load_indist_env(n: int = ENV_EPISODES, seed: int = BENCHMARK_SEED + 1) -> list[EnvItem]:
    """``indist-env`` episodes: environments on the training domains over databases no training run draws
    (seed ``BENCHMARK_SEED + 1``), a fixed mix of single-hop, multi-hop and parallel-with-distractors shapes
    (:data:`INDIST_ENV_MIX`), for an RL stage's in-distribution gain; ``n`` split over the shapes in order."""
    try:
        from synth import build_envs
    except ImportError as err:
        raise BenchmarkDataError(f"indist-env needs synth.envs (executable environments): {err}") from None
    items: list[EnvItem] = []
    seen: set[str] = set()
    for k, (structure, hops, tiers) in enumerate(INDIST_ENV_MIX):
        count = n // len(INDIST_ENV_MIX) + (1 if k < n % len(INDIST_ENV_MIX) else 0)
        samples = build_envs(count, seed, distractors=tiers, hop_budget=hops, structures=[structure],
                             id_prefix=f"indist-{k}-", exclude_prompts=seen)
        seen |= {s.prompt for s in samples}
        items += [EnvItem(id=s.env_id, sample=s.model_dump(mode="json", by_alias=True)) for s in samples]
    return items


def items_digest(items: Sequence[CallItem | EnvItem]) -> str:
    """SHA-256 of the items' canonical JSON: changes exactly when the benchmark's content does.

    Tests pin the digest of ``heldout-calls``, so a change in the bundled servers or in this module
    is noticed and the benchmark's version bumped (``python -m eval.heldout`` prints the digest).
    """
    text = json.dumps([it.model_dump(mode="json") for it in items], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


if __name__ == "__main__":  # pragma: no cover - regenerate the pinned digest
    print(items_digest(load_heldout_calls()))
