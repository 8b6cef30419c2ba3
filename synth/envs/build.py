"""Build validated executable environments from the bundled servers' databases.

Pipeline per sample: seeded database -> QA dependency graph (:mod:`synth.envs.generate`) -> one lookup tool per
tool-needing node (:mod:`synth.envs.compile`) -> merge similar tools, unique names -> distractors in three
similarity tiers (:mod:`synth.envs.distractors`) -> :class:`EnvSample` -> serialise and validate the serialised
row (:func:`synth.envs.validate.check_sample` on the row parsed back from JSON, as a consumer would see it).
Rejected samples are dropped with their reasons and replaced by new draws (up to ``3 n + 10`` draws).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Collection, Sequence
from typing import Any

from synth.envs.compile import merge_tools
from synth.envs.distractors import candidate_pool, pick_distractors
from synth.envs.generate import DbProfile, profile_database, sample_plan
from synth.envs.io import parse_row, sample_to_row
from synth.envs.models import (CheckResult, Distractor, DistractorSpec, EnvSample, SandboxLimits,
                               Structure)
from toolscale.errors import UsageError

__all__ = ["build_envs", "build_envs_report", "assemble"]

_STRUCTURES: tuple[Structure, ...] = ("multi-hop", "parallel-multi-hop")


def _spec(distractors: DistractorSpec | dict[str, int] | None) -> DistractorSpec:
    if distractors is None:
        return DistractorSpec(high=0, medium=0, low=0)
    if isinstance(distractors, DistractorSpec):
        return distractors
    if isinstance(distractors, dict):
        unknown = sorted(set(distractors) - {"high", "medium", "low"})
        if unknown:
            raise UsageError(f"distractors: unknown tier(s) {unknown}; expected high, medium, low")
        return DistractorSpec(**distractors)
    raise UsageError(f"distractors must be a DistractorSpec or a dict of tier counts, got {distractors!r}")


def assemble(plan, *, env_id: str, domain: str, seed: int, hop_budget: int, db_id: str,
             distractor_items: Sequence[tuple[Any, str, float]] = (), shortfall: dict[str, int] | None = None,
             rng: random.Random | None = None, max_turns: int = 32) -> EnvSample:
    """Turn a :class:`synth.envs.generate.QAPlan` into an :class:`EnvSample` (merging its tools)."""
    order = [n.id for n in plan.nodes if n.id in plan.tools]
    merged, names = merge_tools([plan.tools[i] for i in order])
    rename = dict(zip(order, names, strict=True))
    nodes = [n.model_copy(update={"tool": rename[n.id]}) if n.id in rename else n for n in plan.nodes]
    schemas = [t.schema() for t in merged] + [c.schema for c, _, _ in distractor_items]
    sources = [t.source() for t in merged] + [c.source for c, _, _ in distractor_items]
    perm = list(range(len(schemas)))
    (rng or random.Random(env_id)).shuffle(perm)
    targets = [{"node": n.id, "tool": n.tool, "arguments": n.arguments, "answer": n.answer}
               for n in nodes if n.tool is not None]
    return EnvSample(
        env_id=env_id, domain=domain, seed=seed, prompt=plan.prompt, structure=plan.structure,
        hop_budget=hop_budget, main_question=plan.main_question, main_answer=plan.main_answer, nodes=nodes,
        tools=[schemas[i] for i in perm], tool_sources=[sources[i] for i in perm],
        distractors=[Distractor(name=c.name, tier=tier, similarity=sim) for c, tier, sim in distractor_items],
        targets=targets, max_turns=max_turns,
        meta={"db_id": db_id, "generator": "synth.envs.generate/fk-chains", "tables": plan.tables,
              "merged_tools": len(order) - len(merged), "distractor_shortfall": shortfall or {},
              "distractor_origins": {c.name: c.origin for c, _, _ in distractor_items}})


def build_envs_report(n: int, seed: int = 0, domains: Sequence[str] | None = None,
                      distractors: DistractorSpec | dict[str, int] | None = DistractorSpec(), *,
                      hop_budget: int = 3, validate: bool = True, limits: SandboxLimits | None = None,
                      progress: Callable[[int], None] | None = None, structures: Sequence[Structure] | None = None,
                      id_prefix: str = "", exclude_prompts: Collection[str] = (),
                      ) -> tuple[list[EnvSample], list[CheckResult]]:
    """Like :func:`build_envs`, also returning the check results of the rejected draws.

    ``progress(k)`` is called with the number of accepted samples after each acceptance. ``structures``
    restricts the shapes drawn (default: multi-hop or parallel, single-hop where a database offers neither);
    ``id_prefix`` starts every ``env_id`` (and seeds a separate draw stream); a draw whose prompt is in
    ``exclude_prompts`` or repeats an accepted one is skipped (no two samples ask the same question).
    """
    from synth.servers.db import DOMAINS, N_VARIANTS, TRAIN_DOMAINS, db_id, make_database

    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise UsageError(f"n must be a non-negative integer, got {n!r}")
    if hop_budget < 1:
        raise UsageError(f"hop_budget must be >= 1, got {hop_budget}")
    domains = list(domains) if domains else list(TRAIN_DOMAINS)
    bad = [d for d in domains if d not in DOMAINS]
    if bad:
        raise UsageError(f"unknown domain(s) {bad}; expected some of {list(DOMAINS)}")
    spec = _spec(distractors)
    dbs: dict[tuple[str, int], dict] = {}
    profiles: dict[tuple[str, int], DbProfile] = {}

    def db(domain: str, variant: int) -> dict:
        key = (domain, variant % N_VARIANTS)
        if key not in dbs:
            dbs[key] = make_database(domain, seed, key[1])
            profiles[key] = profile_database(dbs[key])
        return dbs[key]

    shapes = _shapes(structures, hop_budget)
    seen = set(exclude_prompts)
    accepted: list[EnvSample] = []
    rejected: list[CheckResult] = []
    draw = 0
    while len(accepted) < n and draw < 3 * n + 10:
        i = draw
        draw += 1
        rng = random.Random(f"toolscale-envs:{seed}:{id_prefix}{i}")
        domain = domains[i % len(domains)]
        variant = rng.randrange(N_VARIANTS)
        data = db(domain, variant)
        structure = shapes[rng.randrange(len(shapes))] if hop_budget >= 2 or structures else "single-hop"
        fallback = [s for s in shapes if s != structure] + (["single-hop"] if structures is None else [])
        plan = None
        for shape in (structure, *fallback):
            plan = sample_plan(data, domain, rng, hop_budget=hop_budget, structure=shape,
                               profile=profiles[(domain, variant % N_VARIANTS)])
            if plan is not None:
                break
        if plan is None or plan.prompt in seen:
            continue
        seen.add(plan.prompt)
        env_id = f"{id_prefix}{domain}-s{seed}-{i:05d}"
        items, short = [], {}
        if any(spec.counts().values()):
            order = [nid for nid in (n.id for n in plan.nodes) if nid in plan.tools]
            gold, _ = merge_tools([plan.tools[k] for k in order])
            pool = candidate_pool({d: db(d, variant) for d in DOMAINS}, gold=gold,
                                  archives={domain: db(domain, variant + 1)})
            items, short = pick_distractors([t.schema() for t in gold], pool, spec.counts(), rng)
        sample = assemble(plan, env_id=env_id, domain=domain, seed=seed, hop_budget=hop_budget,
                          db_id=db_id(domain, seed, variant), distractor_items=items, shortfall=short, rng=rng)
        if validate:
            from synth.envs.validate import check_sample

            row = parse_row(json.loads(json.dumps(sample_to_row(sample))), len(accepted) + 1)
            result = check_sample(row, limits=limits, row=len(accepted) + 1)
            if not result.ok:
                rejected.append(result)
                continue
        accepted.append(sample)
        if progress:
            progress(len(accepted))
    return accepted, rejected


def _shapes(structures: Sequence[Structure] | None, hop_budget: int) -> list[Structure]:
    if structures is None:
        return list(_STRUCTURES)
    bad = [s for s in structures if s not in ("single-hop", *_STRUCTURES)]
    if bad or not structures:
        raise UsageError(f"structures must be some of single-hop, multi-hop, parallel-multi-hop; got "
                         f"{list(structures)!r}")
    if hop_budget < 2 and any(s != "single-hop" for s in structures):
        raise UsageError(f"structures {list(structures)} need hop_budget >= 2, got {hop_budget}")
    return list(dict.fromkeys(structures))


def build_envs(n: int, seed: int = 0, domains: Sequence[str] | None = None,
               distractors: DistractorSpec | dict[str, int] | None = DistractorSpec(), *,
               hop_budget: int = 3, validate: bool = True, limits: SandboxLimits | None = None,
               structures: Sequence[Structure] | None = None, id_prefix: str = "",
               exclude_prompts: Collection[str] = ()) -> list[EnvSample]:
    """Build ``n`` validated executable environments (pinned interface 11).

    Parameters
    ----------
    n : int
        Number of environments wanted (fewer only if the draws run out: see :func:`build_envs_report`).
    seed : int
        Database seed and sampling seed; the same arguments give the same samples.
    domains : sequence of str, optional
        Bundled server domains to draw from, round-robin (default: the training domains; pass
        ``synth.servers.db.HELDOUT_DOMAINS`` for held-out evaluation environments; domains whose schema
        has no foreign key yield single-hop samples).
    distractors : DistractorSpec or dict, optional
        Irrelevant tools per tier (default high=1, medium=2, low=2); None for none.
    hop_budget : int
        H, most tool hops on any path of a graph (default 3).
    validate : bool
        Replay every golden call of the serialised row in the sandbox and drop rejected samples (default True).
    structures, id_prefix, exclude_prompts
        As in :func:`build_envs_report`.
    """
    return build_envs_report(n, seed, domains, distractors, hop_budget=hop_budget, validate=validate,
                             limits=limits, structures=structures, id_prefix=id_prefix,
                             exclude_prompts=exclude_prompts)[0]
