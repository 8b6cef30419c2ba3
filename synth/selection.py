"""Which servers and tools a recipe draws from, and the synthesis view of each server.

``tool_diversity = T`` takes T tools of the training servers; each server's tools come in graph order from
its entry tools (so a subset can still form chains), the servers in a seeded order. ``tool_spread`` says how:

* ``servers`` (the default): whole servers first, the first T tools of the servers in order, so 4 tools are
  4 tools of one server;
* ``stratified``: one tool of each server in turn (round robin), so every level with T >= servers covers
  every training server, and a benchmark spread over the servers has the same servers in reach at every
  level: the axis measures diversity, not coverage.

A larger T is a superset of a smaller one for the same seed, either way.
"""

from __future__ import annotations

import json
import random

from synth.errors import RecipeError
from synth.models import Recipe, ToolDoc
from synth.plans import ServerSpec
from synth.servers import catalog
from synth.servers.db import DOMAINS, HELDOUT_DOMAINS

__all__ = ["training_domains", "graph_order", "bundled_spec", "document_spec", "user_spec", "user_intent",
           "select_tools"]


def training_domains(recipe: Recipe) -> list[str]:
    """The bundled domains a recipe may draw from (held-out ones excluded unless allowed)."""
    heldout = tuple(recipe.heldout_servers) or HELDOUT_DOMAINS
    for d in heldout:
        if d not in DOMAINS:
            raise RecipeError(f"unknown held-out server {d!r}; expected some of {', '.join(DOMAINS)}")
    if recipe.domains is None:
        return [d for d in DOMAINS if recipe.include_heldout or d not in heldout]
    for d in recipe.domains:
        if d not in DOMAINS:
            raise RecipeError(f"unknown domain {d!r} in recipe.domains; expected some of {', '.join(DOMAINS)}")
        if d in heldout and not recipe.include_heldout:
            raise RecipeError(f"domain {d!r} is held out for evaluation; set include_heldout = true only for "
                              "evaluation sets")
    return list(dict.fromkeys(recipe.domains))


def graph_order(spec: ServerSpec) -> list[str]:
    """The order in which a server's tools are taken: every prefix can form verified chains.

    A tool is *ready* when each required argument comes from the query or from a tool already taken.
    Among ready tools, one fed by the most recently taken tool comes first (extending a chain), then
    entry tools (starting a new one), ties by name; tools never ready come last.
    """
    order: list[str] = []
    remaining = sorted(spec.docs)
    while remaining:
        def ready(t: str) -> bool:
            src = spec.sources.get(t, {})
            return all(p in src or any(spec.supplier_field(a, t, p) for a in order) for p in spec.docs[t].required)

        cands = [t for t in remaining if ready(t)]
        if not cands:
            order += remaining
            break
        pick = None
        for last in reversed(order):
            fed = [t for t in cands if spec.graph.has_edge(last, t) and t not in spec.entries]
            if fed:
                pick = fed[0]
                break
        if pick is None:
            entries = [t for t in cands if t in spec.entries]
            pick = (entries or cands)[0]
        order.append(pick)
        remaining.remove(pick)
    return order


def bundled_spec(domain: str, tools: list[str] | None = None) -> ServerSpec:
    """The synthesis view of a bundled server (optionally restricted to ``tools``)."""
    server = catalog.SERVERS[domain]
    keep = [t for t in server.tools if tools is None or t.name in tools]
    docs = {t.name: t.doc(domain) for t in keep}
    sources: dict[str, dict[str, str]] = {}
    for t in keep:
        src = {}
        for p in t.params:
            if p.required and p.source is not None:
                src[p.name] = f"row:{t.table}.{p.col}" if p.source == "row" else p.source
        sources[t.name] = src
    from synth.phrasing import intents_for

    return ServerSpec(domain, docs, sources, {t.name: t.intent for t in keep}, kind="bundled",
                      phrasings={t.name: intents_for(domain, t.name, t.intent) for t in keep})


def document_spec(server: str, docs: list[ToolDoc], values: dict[str, list] | None = None,
                  kind: str = "document") -> ServerSpec:
    """The synthesis view of a document-only server (tools known only from their documents).

    Output fields missing from a document are inferred: a tool outputs ``X_id`` when another tool
    requires ``X_id`` and the tool's name or description mentions ``X``. A required parameter can come
    from the query unless it is such an inferred id (then only an earlier output can supply it); its
    value is drawn from ``values[param]`` when given (the recipe's ``arg_values``), else generated from
    its type. ``kind`` is ``document`` (emulated) or ``live`` (a user server, executed).
    """
    by_name = {d.name: d for d in docs}
    ids = {p for d in docs for p in d.required if p.endswith("_id")}
    inferred: dict[str, ToolDoc] = {}
    for d in docs:
        if d.output_fields:
            inferred[d.name] = d
            continue
        text = (d.name + " " + d.description).lower()
        outs = sorted(i for i in ids if i[:-3] and i[:-3] in text and i not in d.required)
        inferred[d.name] = d.model_copy(update={"output_fields": outs or ["result"]})
    produced = {f for d in inferred.values() for f in d.output_fields}
    sources: dict[str, dict[str, str]] = {}
    intents: dict[str, str] = {}
    for name, d in by_name.items():
        props = d.parameters.get("properties", {})
        src = {}
        for p in d.required:
            if p.endswith("_id") and p in produced:
                continue
            spec = props.get(p, {}) if isinstance(props.get(p), dict) else {}
            typ = spec.get("type", "string")
            if "enum" in spec and spec["enum"]:
                typ = "enum=" + "|".join(str(x) for x in spec["enum"])
            src[p] = f"pick:{json.dumps(values[p])}" if values and values.get(p) else f"gen:{typ}:{p}"
        sources[name] = src
        ph = " and ".join(f"{p.replace('_', ' ')} {{{p}|that {p.replace('_', ' ')}}}" for p in d.required)
        intents[name] = f"use {name} ({d.description.rstrip('.').lower()[:80]})" + (f" with {ph}" if ph else "")
    return ServerSpec(server, inferred, sources, intents, kind=kind)


def _per_server(order: list[str], sizes: dict[str, int], total: int, spread: str) -> dict[str, int]:
    """Tools taken from each server (in ``order``): whole servers first, or round robin (``stratified``)."""
    counts = {n: 0 for n in order}
    if spread == "stratified":
        left = total
        while left > 0:
            for n in order:
                if left > 0 and counts[n] < sizes[n]:
                    counts[n] += 1
                    left -= 1
        return counts
    for n in order:
        take = min(sizes[n], total - sum(counts.values()))
        if take <= 0:
            break
        counts[n] = take
    return counts


def _imperative(description: str) -> str:
    """The first clause of a tool description as a request (``Switches branches`` -> ``switch branches``)."""
    text = description.strip().split(". ")[0].rstrip(".")
    words = text.split()
    if not words:
        return "use the tool"
    w = words[0].lower()
    if w.endswith("es") and len(w) > 4 and w[-3] in "sxhz":
        w = w[:-2]
    elif w.endswith("s") and not w.endswith("ss") and len(w) > 3:
        w = w[:-1]
    return " ".join([w, *words[1:]])


def user_intent(doc: ToolDoc) -> str:
    """A request phrase for a user tool from its description, never its name: ``list Git branches for repo
    path {repo_path|that repo path} and branch type {branch_type|that branch type}``."""
    def ref(p: str) -> str:
        noun = p.replace("_", " ").removesuffix(" name").removesuffix(" id")
        return f"{{{p}|that {noun}}}"
    ph = " and ".join(f"{p.replace('_', ' ')} {ref(p)}" for p in doc.required)
    return _imperative(doc.description) + (f" for {ph}" if ph else "")


def user_spec(server: str, docs: list[ToolDoc], arg_values: dict[str, list], command: str,
              observed: dict[str, list]) -> ServerSpec:
    """The synthesis view of a live user server: output fields as declared or observed, edges by
    :func:`synth.observe.user_match`, query values only from given or observed values
    (:func:`synth.observe.value_sources`; a parameter without any can only come from an earlier output)."""
    from synth.observe import creates, given_values, value_sources

    by_name = {d.name: d for d in docs}
    sources = {n: value_sources(d, arg_values, command, observed) for n, d in by_name.items()}
    intents = {n: user_intent(d) for n, d in by_name.items()}
    no_refs = frozenset((n, p) for n, d in by_name.items() for p in d.required
                        if given_values(d, p, arg_values, command) or (creates(d) and p.endswith("_name")))
    spec = ServerSpec(server, by_name, sources, intents, kind="live", no_refs=no_refs)
    return spec


def select_tools(recipe: Recipe, extra_specs: dict[str, ServerSpec] | None = None) -> dict[str, ServerSpec]:
    """The servers and tools a recipe draws from (see the module docstring)."""
    specs = {d: bundled_spec(d) for d in training_domains(recipe)}
    specs.update(extra_specs or {})
    total = sum(len(s.docs) for s in specs.values())
    if recipe.tool_diversity > total:
        raise RecipeError(f"tool_diversity = {recipe.tool_diversity} exceeds the {total} tools available on "
                          f"{len(specs)} training servers; use at most {total} or add servers")
    order = sorted(s for s in specs if specs[s].kind == "bundled")
    random.Random(f"toolscale-tools:{recipe.seed}").shuffle(order)
    order = sorted(s for s in specs if specs[s].kind != "bundled") + order  # the user's servers first
    counts = _per_server(order, {n: len(specs[n].docs) for n in order}, recipe.tool_diversity,
                         getattr(recipe, "tool_spread", "servers"))
    chosen: dict[str, ServerSpec] = {}
    for name in order:
        if not counts.get(name):
            continue
        spec = specs[name]
        tools = graph_order(spec)[:counts[name]]
        if spec.kind == "bundled":
            chosen[name] = bundled_spec(name, tools)
        else:
            chosen[name] = ServerSpec(name, {t: spec.docs[t] for t in tools},
                                      {t: spec.sources[t] for t in tools}, {t: spec.intents[t] for t in tools},
                                      kind=spec.kind, phrasings={t: spec.phrasings[t] for t in tools
                                                                 if t in spec.phrasings}, no_refs=spec.no_refs)
    return chosen
