"""Knobs -> dataset: the SFT trajectory dataset of one grid point (pinned interface 6).

:func:`synthesize` is the pure core (recipe in, rows and manifest out); :func:`build_dataset` writes
``DIR/train.jsonl``, ``DIR/rejected.jsonl`` (every rejected task with its reasons) and
``DIR/manifest.json`` atomically (a failure leaves earlier files untouched). When the recipe configures
LLM roles (``[llm.<role>]``), :func:`build_dataset` opens one :class:`~synth.llm.client.LLMClient` with
the response cache, checks every endpoint first (an endpoint that is down fails in seconds, before
anything is written), and the manifest's ``llm`` key holds requests, tokens and dollars per role.

How each knob acts:

``tool_diversity``
    the first T tools of a seeded order of the training servers (servers in seeded order, tools in
    graph order from their entry tools), so more diversity is a superset of less;
``task_count``
    tasks synthesised (before the judge filters);
``db_diversity``
    database instances ``(seed, variant)`` per server, assigned round-robin to the server's tasks;
``coverage_quota``
    ``ceil(quota * task_count)`` tasks are reserved for each structure (chain, fan-in, fan-out,
    parallel); the rest follow the natural mix of random walks;
``support_depth``
    each task draws a target depth uniformly from ``1..support_depth`` and gets ``depth - 1`` side calls
    between one supplier and its consumer (:func:`synth.plans.deepen`);
``defect_rate`` / ``repair_rate``
    each action becomes non-derivable with probability ``defect_rate`` (a skipped lookup: its supplier
    runs hidden; or a memorised constant: the query omits its value); each such defect is re-synthesised
    (undone) with probability ``repair_rate``. Labels in ``meta`` come from the provenance check of the
    final conversation (:mod:`synth.provenance`), not from the plan.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from synth.backends import EmulatorBackend, InProcessBackend, RoutingBackend
from synth.errors import RecipeError, ServerError, SynthError
from synth.judge import LLMJudge, RuleJudge, judge_trajectory
from synth.measure import summarize
from synth.models import STRUCTURES, Manifest, Recipe, RejectedRow, ToolDoc
from synth.plans import (Call, Chain, Plan, ServerSpec, deepen, fan_in_chains, fan_out_chains, max_hops,
                         parallel_chains, sample_chains)
from synth.provenance import provenance
from synth.rollout import execute
from synth.selection import bundled_spec, document_spec, select_tools
from synth.servers import catalog
from synth.servers.db import db_id, db_instances, make_database
from synth.tasks import instantiate, render_query

__all__ = ["SYNTH_VERSION", "select_tools", "bundled_spec", "document_spec", "synthesize", "build_dataset",
           "dataset_id", "approx_tokens", "SynthResult", "open_llm"]

SYNTH_VERSION = "1"
"""Version of the output format and synthesis logic (part of the dataset id)."""

SERVER_TASK_SHARE = 0.15
"""Share of natural tasks generated from a server alone (one entry tool) rather than from a chain."""

JUDGE_TIMEOUT_S = 120.0
"""Seconds a non-default judge may take per trajectory before the sample is rejected."""

TASK_ATTEMPTS = 3
"""Draws of query values per task before a task that fails the task gate is rejected."""

MAX_QUERY_CHARS = 900
"""Longest user query accepted by the task gate, in characters."""

_TOK = re.compile(r"\w+|[^\w\s]")


def approx_tokens(text: str) -> int:
    """Approximate token count: words and punctuation marks (a tokenizer-free proxy)."""
    return len(_TOK.findall(text))


_LLM_OPERATIONAL = {"api_key_env", "concurrency", "timeout_s", "max_tries", "price_in", "price_out"}
"""LLM role settings that change how data is fetched or priced, not what it is (left out of the id)."""


def dataset_id(recipe: Recipe, extra: str = "") -> str:
    """Content hash of the recipe, the synthesis version and any extra tool documents (16 hex digits).

    Of the LLM roles only what shapes the data counts (``base_url``, ``model``, ``temperature``,
    ``max_tokens``); a recipe without roles hashes as before they existed.
    """
    data = recipe.model_dump(mode="json")
    llm = data.pop("llm")
    if llm:
        data["llm"] = {r: {k: v for k, v in spec.items() if k not in _LLM_OPERATIONAL} for r, spec in llm.items()}
    blob = json.dumps({"recipe": data, "v": SYNTH_VERSION, "extra": extra}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


class SynthResult:
    """Rows (JSON lines, in task order), rejected rows (:class:`~synth.models.RejectedRow` JSON lines, in
    task order), narratives (JSON lines) and the manifest of one synthesis."""

    def __init__(self, rows: list[str], manifest: Manifest, narratives: list[str], rejected: list[str] | None = None):
        self.rows = rows
        self.manifest = manifest
        self.narratives = narratives
        self.rejected = rejected or []


def _make_backend(recipe: Recipe, extra_docs: list[ToolDoc], backend: Any) -> RoutingBackend:
    emulator = EmulatorBackend(extra_docs) if extra_docs else None
    if backend is not None:
        return RoutingBackend(backend, emulator)
    if recipe.backend == "live":
        from synth.live import LiveBackend
        return RoutingBackend(LiveBackend(), emulator)
    return RoutingBackend(InProcessBackend(), emulator)


def _pick_defects(calls: list[Call], rng: random.Random, defect_rate: float, repair_rate: float) -> None:
    hidden_by: dict[int, int] = {}
    for c in calls:
        if rng.random() >= defect_rate:
            continue
        options = []
        refs = [a[1] for a in c.args.values() if a[0] == "ref"]
        for j in refs:
            sup = calls[j]
            if not sup.hidden and not sup.side and j not in hidden_by:
                options.append(("skipped_lookup", j))
        for p, a in sorted(c.args.items()):
            if a[0] == "q" and isinstance(a[1], str):
                options.append(("memorised_constant", p))
        if not options:
            continue
        kind, target = options[rng.randrange(len(options))]
        c.defect = kind
        repaired = rng.random() < repair_rate
        c.repaired = repaired
        if repaired:
            continue
        if kind == "skipped_lookup":
            calls[target].hidden = True
            hidden_by[target] = c.idx
        else:
            c.vague.add(target)


def open_llm(recipe: Recipe, cache: Any = None) -> Any:
    """An :class:`~synth.llm.client.LLMClient` for the recipe's roles (None when it has none).

    ``cache`` is a :class:`~synth.llm.cache.ResponseCache` or folder; None uses
    :func:`synth.llm.cache.default_cache_dir`. Raises ``LLMConfigError`` for a missing API key variable.
    """
    roles = recipe.llm_roles()
    if not roles:
        return None
    from synth.llm.cache import default_cache_dir
    from synth.llm.client import LLMClient

    return LLMClient(roles, cache=default_cache_dir() if cache is None else cache)


def synthesize(recipe: Recipe, *, extra_docs: list[ToolDoc] | None = None, judge: Any = None,
               backend: Any = None, progress: Any = None, llm: Any = None) -> SynthResult:
    """Build the dataset of one grid point in memory (the pure core of :func:`build_dataset`).

    Parameters
    ----------
    recipe : Recipe
        The knobs.
    extra_docs : list of ToolDoc, optional
        Document-only tools (e.g. collected or imported from ASTRA's ``mcp_servers.jsonl``), rolled out
        against the schema-driven emulator.
    judge : object, optional
        A judge with ``score(messages) -> {dimension: score}``; default :class:`~synth.judge.RuleJudge`
        (or :class:`~synth.judge.LLMJudge` when ``recipe.llm_url`` is set).
    backend : object, optional
        Backend for bundled servers (default: in-process, or live stdio when ``recipe.backend == "live"``).
    progress : callable, optional
        Called as ``progress(done, total)`` after each task.
    llm : LLMClient, optional
        The client of the recipe's LLM roles (:func:`open_llm`); its usage goes to ``manifest.llm``.
        A configured ``judge`` role replaces the rule judge (unless ``judge`` is given).
    """
    extra_docs = list(extra_docs or [])
    extra_specs: dict[str, ServerSpec] = {}
    by_server: dict[str, list[ToolDoc]] = defaultdict(list)
    for d in extra_docs:
        by_server[d.server].append(d)
    for s, docs in sorted(by_server.items()):
        if s in catalog.SERVERS:
            raise RecipeError(f"extra tool documents use the bundled server name {s!r}; rename the server")
        extra_specs[s] = document_spec(s, docs)
    specs = select_tools(recipe, extra_specs)
    if judge is None:
        judge = LLMJudge(llm) if llm is not None and llm.has("judge") else RuleJudge()
    seed = recipe.seed
    dropped: Counter[str] = Counter()
    pools: dict[str, list[Chain]] = {}
    n_walks_total = 0
    for name, spec in sorted(specs.items()):
        n_walks = 30 * len(spec.docs) * recipe.max_chain_len
        n_walks_total += n_walks
        pool = sample_chains(spec, random.Random(f"{seed}:pool:{name}"), recipe.max_chain_len, n_walks, dropped)
        deep = [c for c in pool if max_hops(c.steps, c.turns) > recipe.support_depth]
        dropped["exceeds_support_depth"] += len(deep)
        pools[name] = [c for c in pool if max_hops(c.steps, c.turns) <= recipe.support_depth]
    targeted: dict[tuple[str, str], list[Chain]] = {}

    def templates(server: str, structure: str) -> list[Chain]:
        key = (server, structure)
        if key not in targeted:
            spec, pool = specs[server], pools[server]
            if structure == "fan-out":
                cands = fan_out_chains(spec, pool)
            elif structure == "fan-in":
                cands = fan_in_chains(spec, pool)
            elif structure == "parallel":
                cands = parallel_chains(spec)
            else:
                cands = [c for c in pool if c.structure == "chain" and len(c.steps) >= 2]
            targeted[key] = [c for c in cands if max_hops(c.steps, c.turns) <= recipe.support_depth]
        return targeted[key]

    n = recipe.task_count
    per = min(math.ceil(recipe.coverage_quota * n), n // len(STRUCTURES)) if recipe.coverage_quota > 0 else 0
    slots = [s for s in STRUCTURES for _ in range(per)] + ["natural"] * (n - per * len(STRUCTURES))
    alloc_rng = random.Random(f"{seed}:alloc")
    alloc_rng.shuffle(slots)
    servers = sorted(specs)
    weights = [len(specs[s].docs) for s in servers]
    instances = db_instances(recipe.db_diversity, seed)
    server_counter: Counter[str] = Counter()
    notes: Counter[str] = Counter()

    tasks: list[tuple[int, str, Chain, str, tuple[int, int]]] = []
    for i, slot in enumerate(slots):
        server = alloc_rng.choices(servers, weights)[0]
        chain, kind = None, "chain"
        if slot != "natural":
            rot = servers[servers.index(server):] + servers[:servers.index(server)]
            for s in rot:
                cands = templates(s, slot)
                if cands:
                    server, chain = s, cands[alloc_rng.randrange(len(cands))]
                    break
            if chain is None:
                notes[f"quota_unavailable:{slot}"] += 1
        if chain is None:
            spec = specs[server]
            pool = pools[server]
            if spec.entries and (not pool or alloc_rng.random() < SERVER_TASK_SHARE):
                t = alloc_rng.choice(spec.entries)
                chain = sample_single(spec, t)
                kind = "server"
            elif pool:
                chain = pool[alloc_rng.randrange(len(pool))]
        if chain is None:
            notes["no_valid_chain"] += 1
            continue
        k = server_counter[server]
        server_counter[server] += 1
        tasks.append((i, server, chain, kind, instances[k % len(instances)]))

    be = _make_backend(recipe, [d for s in extra_specs.values() for d in s.docs.values()], backend)
    pristine: dict[tuple, dict] = {}
    results: dict[int, tuple[str, dict] | None] = {}
    rejections: Counter[str] = Counter()
    stats: Counter[str] = Counter()
    hops_max: list[int] = []
    judge_failures = 0
    dead: set[tuple[str, tuple[int, int]]] = set()
    order = sorted(tasks, key=lambda t: (t[1], t[4], t[0]))
    tools_json = {s: json.dumps([d.to_openai() for d in specs[s].docs.values()]) for s in servers}
    narr_src: list[tuple[int, Plan, Any, bool]] = []
    seen_queries: set[tuple[str, str]] = set()
    rejected: list[tuple[int, str]] = []

    def reject(i: int, server: str, stage: str, reason: str, detail: str | None = None, messages: Any = None,
               scores: dict[str, float] | None = None) -> None:
        rejections[reason] += 1
        rejected.append((i, RejectedRow(task_id=f"t{i:06d}", server=server, stage=stage, reasons=[reason],
                                        detail=detail, messages=messages, judge=scores or {}).model_dump_json()))

    try:
        for done, (i, server, chain, kind, inst) in enumerate(order, 1):
            if progress is not None:
                progress(done, len(order))
            if (server, inst) in dead:
                reject(i, server, "rollout", "server_error", "an earlier task of this database found the server dead")
                continue
            rng = random.Random(f"{seed}:task:{i}")
            spec = specs[server]
            depth = rng.randint(1, recipe.support_depth)
            n_steps = len(chain.steps)
            chain2, n_side = deepen(chain, spec, depth, rng)
            key = (server, *inst)
            if key not in pristine:
                pristine[key] = make_database(server, *inst) if spec.kind == "bundled" else {}
            plan = None
            for _attempt in range(TASK_ATTEMPTS):
                calls = instantiate(chain2, pristine[key], rng)
                if calls is None:
                    break
                for c in calls[n_steps:]:
                    c.side = True
                _pick_defects(calls, rng, recipe.defect_rate, recipe.repair_rate)
                cand = Plan(task_id=f"t{i:06d}", server=server,
                            db_id=db_id(server, *inst) if spec.kind == "bundled" else f"{server}:emulated:s{inst[0]}",
                            instance=inst, calls=calls, structure=chain.structure, signature=chain.signature,
                            task_kind=kind, seed=seed * 1_000_003 + i)
                cand.query, cand.augmentation = render_query(cand, spec, rng)
                reason = _task_gate(cand, seen_queries)
                if reason is None:
                    plan = cand
                    break
            if plan is None:
                reject(i, server, "task", "no_values" if calls is None else f"task_gate:{reason}")
                continue
            seen_queries.add((server, plan.query))
            try:
                trace = execute(plan, be, random.Random(f"{seed}:exec:{i}"), recipe.error_rate)
            except ServerError as err:
                reject(i, server, "rollout", "server_error", str(err)[:200])
                dead.add((server, inst))
                stats[f"server_error:{server}"] += 1
                continue
            stats["trajectories"] += 1
            prov = provenance(trace.messages)
            nonderiv = [p.call_id for p in prov if not p.derivable]
            repaired_ids = [cid for c in calls if c.repaired for cid in trace.ids_by_plan.get(c.idx, [])]
            repaired_ids = [cid for cid in repaired_ids if cid not in nonderiv]
            verdict = judge_trajectory(judge, trace.messages, recipe.judge_threshold,
                                       timeout_s=None if isinstance(judge, RuleJudge) else JUDGE_TIMEOUT_S)
            if verdict.judge_failed:
                judge_failures += 1
            stats["defects_planned"] += sum(c.defect is not None for c in calls)
            stats["defects_repaired"] += sum(c.repaired for c in calls)
            if not verdict.accepted:
                reject(i, server, "judge", verdict.reason or "rejected", messages=trace.messages,
                       scores=_scored(verdict))
                narr_src.append((i, plan, trace, False))
                continue
            hops = max((p.hops for p in prov), default=0)
            if hops > recipe.support_depth:
                # a skipped lookup can leave only an older observation holding the value
                reject(i, server, "filter", "exceeds_support_depth", f"support depth {hops} > {recipe.support_depth}",
                       messages=trace.messages, scores=_scored(verdict))
                continue
            meta = {"task_id": plan.task_id, "server": server, "db_id": plan.db_id,
                    "chain": [c.tool for c in plan.ordered()], "signature": plan.signature, "structure": plan.structure,
                    "nonderivable_calls": nonderiv, "repaired_calls": repaired_ids, "seed": plan.seed,
                    "support_depth": hops, "injected_errors": trace.injected,
                    "judge": {**{k: round(v, 4) for k, v in verdict.scores.items()}, "mean": round(verdict.mean, 4)},
                    "task_kind": kind, "augmentation": plan.augmentation}
            row = {"messages": trace.messages, "tools": tools_json[server], "meta": json.dumps(meta)}
            results[i] = (json.dumps(row, ensure_ascii=False), {"meta": meta, "prov": prov, "trace": trace})
            narr_src.append((i, plan, trace, True))
            hops_max.append(hops)
    finally:
        be.close()

    accepted = [results[i] for i in sorted(results)]
    rows = [r[0] for r in accepted]
    metas = [r[1]["meta"] for r in accepted]
    traces = [r[1]["trace"] for r in accepted]
    measured, counts = summarize(metas, traces, [p for r in accepted for p in r[1]["prov"]], hops_max,
                                 judged=stats["trajectories"], approx_tokens=approx_tokens)
    judged = stats["trajectories"]
    counts = {"tasks": n, "tasks_planned": len(tasks), "walks": n_walks_total,
              "chains_kept": sum(len(p) for p in pools.values()), **counts, "rejected": sum(rejections.values()),
              "defects_planned": stats["defects_planned"], "defects_repaired": stats["defects_repaired"],
              **dict(notes)}
    struct = Counter(m["structure"] for m in metas)
    chain_sigs = Counter(m["signature"] for m in metas)
    extra_hash = hashlib.sha256(json.dumps([d.model_dump(mode="json") for d in extra_docs],
                                           sort_keys=True).encode()).hexdigest() if extra_docs else ""
    manifest = Manifest(
        dataset_id=dataset_id(recipe, extra_hash), synth_version=SYNTH_VERSION, recipe=recipe,
        requested=recipe.axes(), measured={k: round(v, 6) for k, v in measured.items()}, counts=counts,
        structure_counts={s: struct.get(s, 0) for s in STRUCTURES}, chain_signatures=dict(sorted(chain_sigs.items())),
        dropped_chains=dict(sorted(dropped.items())), rejections=dict(sorted(rejections.items())),
        judge_failure_rate=judge_failures / judged if judged else 0.0, servers=servers,
        tools=sorted(f"{s}.{t}" for s in servers for t in specs[s].docs),
        db_ids=sorted({m["db_id"] for m in metas}), files={},
        llm=llm.usage(accepted=len(rows)) if llm is not None else {})
    narratives: list[str] = []
    if recipe.narratives:
        from synth.narratives import narrative_documents
        narratives = narrative_documents(specs, pools, sorted(narr_src, key=lambda x: x[0]))
    return SynthResult(rows, manifest, narratives, [r for _, r in sorted(rejected, key=lambda x: x[0])])


def _scored(verdict: Any) -> dict[str, float]:
    """A verdict's scores and mean, rounded as in accepted rows' ``meta.judge``."""
    if verdict.mean is None:
        return {}
    return {**{k: round(v, 4) for k, v in verdict.scores.items()}, "mean": round(verdict.mean, 4)}


def _task_gate(plan: Plan, seen: set[tuple[str, str]]) -> str | None:
    """ASTRA's task checks, rule-based: None if the task passes, else the reason.

    *question quality*: a query of at most :data:`MAX_QUERY_CHARS` characters; *tool-use necessity*:
    at least one visible call; *novelty*: no other task of the server has the same query.
    """
    if len(plan.query) > MAX_QUERY_CHARS:
        return "query_too_long"
    if all(c.hidden for c in plan.calls):
        return "no_tool_needed"
    if (plan.server, plan.query) in seen:
        return "duplicate_query"
    return None


def sample_single(spec: ServerSpec, tool: str) -> Chain:
    """A one-call chain of an entry tool (a server-only task)."""
    from synth.plans import Step, schedule
    step = Step(tool, tuple((p, ("q", spec.sources[tool][p])) for p in spec.docs[tool].required))
    return Chain(spec.name, (step,), "chain", schedule([step]))


def _write_atomic(path: Path, text: str) -> str:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    data = text.encode()
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return hashlib.sha256(data).hexdigest()


def build_dataset(recipe: Recipe, out_dir: str | Path, *, extra_docs: list[ToolDoc] | None = None,
                  judge: Any = None, backend: Any = None, progress: Any = None, llm: Any = None,
                  llm_cache: Any = None) -> Manifest:
    """Synthesise the dataset of one grid point and write it to ``out_dir`` (pinned interface 6).

    Writes ``train.jsonl`` (one trajectory row per line, pinned interface 1), ``rejected.jsonl`` (one
    :class:`~synth.models.RejectedRow` per rejected task), ``manifest.json`` and, when
    ``recipe.narratives``, ``narratives.jsonl``. Files are replaced atomically only after synthesis
    succeeded, so a failure loses nothing already there. Same recipe and seed: byte-identical files
    (with LLM roles: byte-identical when the replies come from the response cache).

    ``llm`` is an open client for the recipe's roles; None opens one (:func:`open_llm`, with
    ``llm_cache``) when the recipe has roles, checks its endpoints before synthesis, and closes it.

    Examples
    --------
    >>> import tempfile
    >>> m = build_dataset(Recipe(task_count=8, tool_diversity=6), tempfile.mkdtemp())
    >>> m.counts["tasks"]
    8
    """
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise RecipeError(f"output path {str(out)!r} exists and is not a directory")
    own = llm is None
    if own:
        llm = open_llm(recipe, llm_cache)
    try:
        if own and llm is not None:
            llm.check()
        result = synthesize(recipe, extra_docs=extra_docs, judge=judge, backend=backend, progress=progress, llm=llm)
    finally:
        if own and llm is not None:
            llm.close()
    try:
        out.mkdir(parents=True, exist_ok=True)
        files = {"train.jsonl": _write_atomic(out / "train.jsonl", "".join(r + "\n" for r in result.rows)),
                 "rejected.jsonl": _write_atomic(out / "rejected.jsonl", "".join(r + "\n" for r in result.rejected))}
        if recipe.narratives:
            files["narratives.jsonl"] = _write_atomic(out / "narratives.jsonl",
                                                      "".join(r + "\n" for r in result.narratives))
        manifest = result.manifest.model_copy(update={"files": files})
        _write_atomic(out / "manifest.json", json.dumps(manifest.model_dump(mode="json"), indent=2, sort_keys=True)
                      + "\n")
    except OSError as err:
        raise SynthError(f"cannot write the dataset to {str(out)!r}: {err.strerror or err}") from None
    return manifest
