"""Knobs -> dataset: the SFT trajectory dataset of one grid point (pinned interface 6).

:func:`synthesize` is the pure core (recipe in, rows and manifest out); :func:`build_dataset` writes
``DIR/train.jsonl``, ``DIR/rejected.jsonl`` (every rejected task with its reasons) and
``DIR/manifest.json`` atomically (a failure leaves earlier files untouched). When the recipe configures
LLM roles (``[llm.<role>]``), :func:`build_dataset` opens one :class:`~synth.llm.client.LLMClient` with
the response cache, checks every endpoint first (an endpoint that is down fails in seconds, before
anything is written), the configured roles get their LLM versions (:func:`synth.llm_roles.llm_roles`),
and the manifest's ``llm`` key holds requests, tokens and dollars per role.

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
    final conversation (:mod:`synth.provenance`), not from the plan;
``transform_rate``
    each argument is shown only transformed with this probability (:mod:`synth.transforms`); an action
    whose only unmatched arguments are shown transformed stays derivable (``meta.transformed_calls``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import random
import re
import threading
from collections import Counter, defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from synth.backends import Backend, InProcessBackend, RoutingBackend
from synth.errors import RecipeError, SynthError
from synth.judge import Judge
from synth.measure import summarize
from synth.models import STRUCTURES, Manifest, Recipe, ToolDoc
from synth.narratives import Document, LLMCoherence, NarrativeSource, narrative_documents, rule_coherence
from synth.plans import ServerSpec
from synth.roles import Roles
from synth.selection import bundled_spec, document_spec, select_tools
from synth.servers.db import make_database
from synth.taskplan import ChainPools, TaskSet, chain_pools, plan_tasks, server_specs
from synth.userservers import UserServers
from synth.trajectories import Accepted, Tally, roll_out, write_task
from toolscale.files import atomic_write_bytes

__all__ = ["SYNTH_VERSION", "select_tools", "bundled_spec", "document_spec", "synthesize", "build_dataset",
           "dataset_id", "approx_tokens", "SynthResult", "Progress", "open_llm"]

SYNTH_VERSION = "2"
"""Version of the output format and synthesis logic (part of the dataset id)."""

Progress = Callable[[int, int], None]
"""``progress(done, total)``, called after each task."""

_TOK = re.compile(r"\w+|[^\w\s]")


def approx_tokens(text: str) -> int:
    """Approximate token count: words and punctuation marks (a tokenizer-free proxy)."""
    return len(_TOK.findall(text))


def dataset_id(recipe: Recipe, extra: str = "") -> str:
    """Content hash of the recipe, the synthesis version and any extra tool documents (16 hex digits)."""
    blob = json.dumps({"recipe": recipe.identity(), "v": SYNTH_VERSION, "extra": extra}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


class SynthResult:
    """Rows (JSON lines, in task order), rejected rows (:class:`~synth.models.RejectedRow` JSON lines, in
    task order), the gated mid-training documents and the manifest of one synthesis."""

    def __init__(self, rows: list[str], manifest: Manifest, narratives: list[Document],
                 rejected: list[str] | None = None):
        self.rows = rows
        self.manifest = manifest
        self.narratives = narratives
        self.rejected = rejected or []


def _make_backend(recipe: Recipe, extra_docs: list[ToolDoc], backend: Backend | None, roles: Roles) -> RoutingBackend:
    emulator = roles.emulator(extra_docs) if extra_docs else None
    if backend is not None:
        return RoutingBackend(backend, emulator)
    if recipe.backend == "live":
        from synth.live import LiveBackend
        return RoutingBackend(LiveBackend(), emulator)
    return RoutingBackend(InProcessBackend(), emulator)


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


def _default_roles(recipe: Recipe, judge: Judge | None, llm: Any) -> Roles:
    if llm is not None:
        from synth.llm_roles import llm_roles

        roles = llm_roles(llm, llm.roles, max_turns=recipe.max_turns)
    else:
        roles = Roles()
    if judge is not None:
        roles = dataclasses.replace(roles, judge=judge)
    return roles


MAX_SERVER_THREADS = 8
"""Servers rolled out at once when an LLM role is configured (each server's tasks stay in order)."""


def _threads(roles: Roles, be: RoutingBackend, n_groups: int) -> int:
    """Servers to run at once: one unless an LLM role waits on an endpoint and every backend is one whose
    state is per server (in-process bundled servers; the user's servers; the per-thread emulators)."""
    if "llm" not in roles.names().values() or not isinstance(be.bundled, InProcessBackend):
        return 1
    return max(1, min(n_groups, MAX_SERVER_THREADS))


def _run_tasks(recipe: Recipe, specs: dict[str, ServerSpec], tasks: TaskSet, be: RoutingBackend, roles: Roles,
               progress: Progress | None) -> tuple[list[Accepted], list[NarrativeSource], Tally]:
    """Phases 4 and 5 over every planned task, grouped by server and instance (one database each).

    Each server's tasks run in order in one thread, so tool state, the novelty gate and a dead server
    stay per server; with LLM roles up to :data:`MAX_SERVER_THREADS` servers run at once (their requests
    overlap at the endpoint). Results are merged in server order: the output does not depend on timing.
    """
    order = sorted(tasks.slots, key=lambda t: (t.server, t.instance, t.index))
    groups = [list(g) for _, g in itertools.groupby(order, key=lambda t: t.server)]
    tools_json = {s: json.dumps([d.to_openai() for d in specs[s].docs.values()]) for s in specs}
    lock = threading.Lock()
    done = [0]

    def tick() -> None:
        if progress is not None:
            with lock:
                done[0] += 1
                progress(done[0], len(order))

    def run(group: list) -> tuple[list[Accepted], list[NarrativeSource], Tally]:
        return _run_server(recipe, specs, group, be, roles, tools_json, tick)

    n = _threads(roles, be, len(groups))
    if n == 1:
        parts = [run(g) for g in groups]
    else:
        with ThreadPoolExecutor(n, thread_name_prefix="synth-server") as pool:
            parts = list(pool.map(run, groups))
    tally = Tally()
    accepted: list[Accepted] = []
    judged: list[NarrativeSource] = []
    for acc, seen, part in parts:
        accepted += acc
        judged += seen
        tally.merge(part)
    accepted.sort(key=lambda a: a.index)
    return accepted, judged, tally


def _run_server(recipe: Recipe, specs: dict[str, ServerSpec], group: list, be: RoutingBackend, roles: Roles,
                tools_json: dict[str, str], tick: Callable[[], None]
                ) -> tuple[list[Accepted], list[NarrativeSource], Tally]:
    """The tasks of one server, in order (one pristine database per instance)."""
    tally = Tally()
    pristine: dict[tuple, dict] = {}
    accepted: list[Accepted] = []
    judged: list[NarrativeSource] = []
    for slot in group:
        tick()
        if (slot.server, slot.instance) in tally.dead:
            tally.reject(slot.index, slot.server, "rollout", "server_error",
                         "an earlier task of this database instance found its server dead")
            continue
        spec = specs[slot.server]
        key = (slot.server, *slot.instance)
        if key not in pristine:
            pristine[key] = make_database(slot.server, *slot.instance) if spec.kind == "bundled" else {}
        plan = write_task(recipe, slot, spec, pristine[key], random.Random(f"{recipe.seed}:task:{slot.index}"),
                          roles, tally)
        if plan is None:
            continue
        be.begin(plan.task_id)
        acc, seen = roll_out(recipe, slot, plan, spec, be, roles, tools_json[slot.server], tally)
        if seen is not None:
            judged.append(seen)
        if acc is not None:
            accepted.append(acc)
    return accepted, judged, tally


def _manifest(recipe: Recipe, specs: dict[str, ServerSpec], pools: ChainPools, tasks: TaskSet,
              accepted: list[Accepted], tally: Tally, extra_docs: list[ToolDoc], roles: Roles, llm: Any) -> Manifest:
    """Phase 6: what was asked for and what the accepted trajectories measure to be."""
    stats = getattr(roles.judge, "stats", None)
    judge_stats = stats() if callable(stats) else {}
    metas = [a.meta for a in accepted]
    judged = tally.stats["trajectories"]
    measured, counts = summarize(metas, [a.trace for a in accepted], [p for a in accepted for p in a.prov],
                                 [a.hops for a in accepted], judged=judged, approx_tokens=approx_tokens)
    counts = {"tasks": recipe.task_count, "tasks_planned": len(tasks.slots), "walks": pools.n_walks,
              "chains_kept": sum(len(p) for p in pools.pools.values()), **counts,
              "rejected": sum(tally.rejections.values()), "defects_planned": tally.stats["defects_planned"],
              "defects_repaired": tally.stats["defects_repaired"], **dict(tasks.notes)}
    struct = Counter(m["structure"] for m in metas)
    chain_sigs = Counter(m["signature"] for m in metas)
    extra_hash = hashlib.sha256(json.dumps([d.model_dump(mode="json") for d in extra_docs],
                                           sort_keys=True).encode()).hexdigest() if extra_docs else ""
    servers = sorted(specs)
    return Manifest(
        dataset_id=dataset_id(recipe, extra_hash), synth_version=SYNTH_VERSION, recipe=recipe,
        requested=recipe.axes(), measured={k: round(v, 6) for k, v in measured.items()}, counts=counts,
        structure_counts={s: struct.get(s, 0) for s in STRUCTURES}, chain_signatures=dict(sorted(chain_sigs.items())),
        dropped_chains=dict(sorted(pools.dropped.items())), rejections=dict(sorted(tally.rejections.items())),
        judge_failure_rate=tally.judge_failures / judged if judged else 0.0,
        judge_fallback_rate=float(judge_stats.get("fallback_rate", 0.0)), roles=roles.names(), servers=servers,
        tools=sorted(f"{s}.{t}" for s in servers for t in specs[s].docs),
        db_ids=sorted({m["db_id"] for m in metas}), files={},
        llm=llm.usage(accepted=len(accepted)) if llm is not None else {})


def synthesize(recipe: Recipe, *, extra_docs: list[ToolDoc] | None = None, judge: Judge | None = None,
               backend: Backend | None = None, progress: Progress | None = None,
               roles: Roles | None = None, user_servers: UserServers | None = None,
               llm: Any = None) -> SynthResult:
    """Build the dataset of one grid point in memory (the core of :func:`build_dataset`).

    Phases: server views (:func:`synth.taskplan.server_specs`), chain pools (:func:`~synth.taskplan.chain_pools`),
    task slots (:func:`~synth.taskplan.plan_tasks`), then per task the query (:func:`synth.trajectories.write_task`)
    and the judged rollout (:func:`~synth.trajectories.roll_out`), and the manifest.

    Parameters
    ----------
    recipe : Recipe
        The knobs. ``recipe.servers`` are started, collected and executed live (one session each, for
        this call) unless ``user_servers`` is given.
    extra_docs : list of ToolDoc, optional
        Document-only tools (e.g. collected or imported from ASTRA's ``mcp_servers.jsonl``), rolled out
        against the emulator role.
    judge : Judge, optional
        Overrides ``roles.judge``; default :class:`~synth.judge.RuleJudge` (or the rubric judge when
        ``llm`` has the ``judge`` role).
    backend : Backend, optional
        Backend for bundled servers (default: in-process, or live stdio when ``recipe.backend == "live"``).
    progress : Progress, optional
        Called as ``progress(done, total)`` after each task.
    roles : Roles, optional
        Task writer, policy, emulator and judge (default: the LLM version of each role ``llm`` has,
        the offline template of the others).
    user_servers : UserServers, optional
        The user's servers, already open (a job that synthesises more than once keeps one session each).
    llm : LLMClient, optional
        The client of the recipe's LLM roles (:func:`open_llm`); its usage goes to ``manifest.llm``.
    """
    if roles is None:
        roles = _default_roles(recipe, judge, llm)
    elif judge is not None:
        roles = dataclasses.replace(roles, judge=judge)
    own = UserServers(recipe.servers, arg_values=recipe.arg_values).open() \
        if recipe.servers and user_servers is None else None
    live = user_servers or own
    try:
        return _synthesize(recipe, list(extra_docs or []), backend, progress, roles, live, llm)
    finally:
        if own is not None:
            own.close()


def _synthesize(recipe: Recipe, extra_docs: list[ToolDoc], backend: Backend | None, progress: Progress | None,
                roles: Roles, live: UserServers | None, llm: Any) -> SynthResult:
    live_docs = live.docs() if live is not None else {}
    extra_docs = [d for d in extra_docs if d.server not in live_docs]  # a live server beats its stored docs
    by_server: dict[str, list[ToolDoc]] = defaultdict(list)
    for d in extra_docs:
        by_server[d.server].append(d)
    specs = server_specs(recipe, {**by_server, **live_docs}, live=set(live_docs), user=live)
    pools = chain_pools(recipe, specs)
    tasks = plan_tasks(recipe, pools)
    emulated = dict(getattr(live, "emulated", {}) or {})
    doc_only = [d for s in sorted(by_server) for d in document_spec(s, by_server[s]).docs.values()]
    doc_only += [d for s in sorted(emulated) if s in specs for d in specs[s].docs.values() if d.name in emulated[s]]
    be = _make_backend(recipe, doc_only, backend, roles)
    be.live, be.live_servers, be.emulated_tools = live, frozenset(live_docs), emulated
    try:
        accepted, judged, tally = _run_tasks(recipe, specs, tasks, be, roles, progress)
    finally:
        be.close()
    documents: list[Document] = []
    corpus = None
    if recipe.narratives:
        client = getattr(roles.judge, "client", None)  # the LLM judge scores coherence too, when there is one
        coherence = LLMCoherence(client) if client is not None else rule_coherence
        documents, corpus = narrative_documents(specs, pools.pools, judged, min_judge=recipe.narrative_min_judge,
                                                min_coherence=recipe.narrative_min_coherence,
                                                approx_tokens=approx_tokens, coherence=coherence)
    hashed = extra_docs + [d for s in sorted(live_docs) for d in live_docs[s]]
    warnings = list(getattr(live, "warnings", []) or []) + _idle_servers(live_docs, specs, accepted, tally)
    manifest = _manifest(recipe, specs, pools, tasks, accepted, tally, hashed, roles, llm)  # after the corpus:
    # the coherence gate's requests are counted too
    names = {**manifest.roles, "emulator": manifest.roles["emulator"] if be.emulator_calls else "unused"}
    manifest = manifest.model_copy(update={"corpus": corpus, "warnings": warnings, "roles": names,
                                           "role_stats": _role_stats(roles, be)})
    return SynthResult([a.row for a in accepted], manifest, documents,
                       [r for _, r in sorted(tally.rejected, key=lambda x: x[0])])


def _idle_servers(live_docs: dict[str, list[ToolDoc]], specs: dict[str, ServerSpec], accepted: list[Accepted],
                  tally: Tally) -> list[str]:
    """One warning per user server that was started but contributed no kept trajectory, with why."""
    out = []
    kept = {a.meta["server"] for a in accepted}
    for name in sorted(live_docs):
        if name in kept:
            continue
        if name not in specs:
            why = "none of its tools fit in tool_diversity"
        else:
            mine = [json.loads(r) for _, r in tally.rejected if json.loads(r)["server"] == name]
            why = ("no task could be planned on its tools" if not mine else
                   "its tasks were all rejected (" + ", ".join(sorted({x["reasons"][0] for x in mine})) + ")")
        out.append(f"server {name} contributed no task: {why}")
    return out


def _role_stats(roles: Roles, be: RoutingBackend) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {"emulator": {"calls": be.emulator_calls}}
    for role in ("task_writer", "judge"):
        stats = getattr(getattr(roles, role), "stats", None)
        if callable(stats):
            out[role] = stats()
    check = roles.chain_check
    if check is not None:
        out["chain_check"] = {"requests": getattr(check, "requests", 0), "rejected": getattr(check, "rejected", 0)}
    return out


def _write_atomic(path: Path, text: str) -> str:
    """Publish ``text`` at ``path`` (:func:`toolscale.files.atomic_write_bytes`); returns its SHA-256."""
    data = text.encode()
    atomic_write_bytes(path, data)
    return hashlib.sha256(data).hexdigest()


def build_dataset(recipe: Recipe, out_dir: str | Path, *, extra_docs: list[ToolDoc] | None = None,
                  judge: Judge | None = None, backend: Backend | None = None, progress: Progress | None = None,
                  roles: Roles | None = None, user_servers: UserServers | None = None, llm: Any = None,
                  llm_cache: Any = None, strict: bool = False) -> Manifest:
    """Synthesise the dataset of one grid point and write it to ``out_dir`` (pinned interface 6).

    Writes ``train.jsonl`` (one trajectory row per line, pinned interface 1), ``rejected.jsonl`` (one
    :class:`~synth.models.RejectedRow` per rejected task), ``manifest.json`` and, when
    ``recipe.narratives``, ``narratives.jsonl`` (documents with kind, server and signature) and
    ``corpus.jsonl`` (one ``{"text"}`` per line, the continued-pretraining corpus). Files are replaced atomically only after synthesis
    succeeded, so a failure loses nothing already there. Same recipe and seed: byte-identical files
    (with LLM roles: when the replies come from the response cache).

    ``llm`` is an open client for the recipe's roles; None opens one (:func:`open_llm`, with
    ``llm_cache``) when the recipe has roles, checks its endpoints before synthesis, and closes it.
    With ``strict``, a user server that contributed no task (a warning otherwise) is an error
    (:class:`~synth.errors.RecipeError`) and nothing is written.

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
        result = synthesize(recipe, extra_docs=extra_docs, judge=judge, backend=backend, progress=progress,
                            roles=roles, user_servers=user_servers, llm=llm)
    finally:
        if own and llm is not None:
            llm.close()
    idle = [w for w in result.manifest.warnings if "contributed no task" in w]
    if strict and idle:
        raise RecipeError(f"--strict: {idle[0]}" + (f" (and {len(idle) - 1} more)" if len(idle) > 1 else ""))
    try:
        out.mkdir(parents=True, exist_ok=True)
        files = {"train.jsonl": _write_atomic(out / "train.jsonl", "".join(r + "\n" for r in result.rows)),
                 "rejected.jsonl": _write_atomic(out / "rejected.jsonl", "".join(r + "\n" for r in result.rejected))}
        if recipe.narratives:
            files["narratives.jsonl"] = _write_atomic(out / "narratives.jsonl",
                                                      "".join(d.json_line() + "\n" for d in result.narratives))
            files["corpus.jsonl"] = _write_atomic(out / "corpus.jsonl", "".join(
                json.dumps({"text": d.text}, ensure_ascii=False) + "\n" for d in result.narratives))
        manifest = result.manifest.model_copy(update={"files": files})
        _write_atomic(out / "manifest.json", json.dumps(manifest.model_dump(mode="json"), indent=2, sort_keys=True)
                      + "\n")
    except OSError as err:
        raise SynthError(f"cannot write the dataset to {str(out)!r}: {err.strerror or err}") from None
    return manifest
