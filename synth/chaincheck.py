"""Chains that make sense: entity rules on bindings, no use after destruction, and ASTRA's LLM coherence check.

Rule checks (:func:`chain_problem`, applied to every chain before it can become a task; a failing chain is
dropped and counted under its reason in the manifest's ``dropped_chains``):

``entity_mismatch:TOOL.PARAM``
    an id flows into a parameter of another entity (``order_id`` into ``product_id``: the entity of an id
    name is its noun without ``from_``/``to_``/``base_``/``_id``), or a parameter matched only through its
    description (``approver_id`` <- "the employee's ``manager_id``") is fed by a call that shares no
    ancestor with the step's other inputs (the manager of another employee than the leave's);
``destructive_then_use:A>B``
    a write step B takes (directly, or through a shared supplier) the entity a destructive step A
    destroyed earlier: "cancel that order, then re-order it", "delete that file, then share it". Reading
    the entity afterwards (checking the cancelled order) is allowed.

A step's effect comes from its tool's annotations or name (:func:`synth.observe.effect`).

:class:`LLMChainCheck` is ASTRA's chain-coherence step when an LLM is configured: the model reads the
tools' documents and the planned steps with their data flows and scores 1-5 whether they form one task a
real user would ask for; below ``threshold`` the task is rejected (``chain:incoherent``), a reply without a
score rejects it too (``chain:gate_error``, fail-closed). Its requests count under its role in the
manifest.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from synth.observe import effect

__all__ = ["entity", "chain_problem", "side_entities", "LLMChainCheck"]

_GENERIC_ENTITY = {"", "id"}


def entity(name: str) -> str:
    """The entity an id-like name refers to (``from_account_id`` -> ``account``); "" for a non-id name."""
    if not name.endswith("_id"):
        return ""
    noun = name[:-3]
    for pre in ("from_", "to_", "base_", "source_", "target_", "new_", "old_", "parent_"):
        noun = noun.removeprefix(pre)
    return noun


def _ancestors(steps: list[Any], i: int) -> set[int]:
    out: set[int] = set()
    todo = [j for j in steps[i].refs()]
    while todo:
        j = todo.pop()
        if j not in out:
            out.add(j)
            todo += list(steps[j].refs())
    return out


def _entity_problem(spec: Any, steps: list[Any]) -> str | None:
    for i, s in enumerate(steps):
        refs = [(p, a) for p, a in s.args if a[0] == "ref"]
        for p, a in refs:
            ef, ep = entity(a[2]), entity(p)
            if ef not in _GENERIC_ENTITY and ep not in _GENERIC_ENTITY and ef != ep and not _described(spec, s.tool, p, a[2]):
                return f"entity_mismatch:{s.tool}.{p}"
        for p, a in refs:
            if not _described(spec, s.tool, p, a[2]):
                continue
            others = [b[1] for q, b in refs if q != p]
            lineage = _ancestors(steps, a[1]) | {a[1]}
            if others and not any((_ancestors(steps, j) | {j}) & lineage for j in others):
                return f"entity_mismatch:{s.tool}.{p}"
    return None


def _described(spec: Any, tool: str, param: str, field: str) -> bool:
    """Whether ``field`` fills ``param`` only because the parameter's description names it."""
    if field == param or param.endswith("_" + field) or field.endswith("_" + param):
        return False
    desc = spec.docs[tool].parameters.get("properties", {}).get(param, {})
    return isinstance(desc, dict) and field in str(desc.get("description", ""))


def _destruction_problem(spec: Any, steps: list[Any]) -> str | None:
    effects = [effect(spec.docs[s.tool]) for s in steps]
    for i, s in enumerate(steps):
        if effects[i] != "destructive":
            continue
        touched = {i} | set(s.refs())
        for j in range(i + 1, len(steps)):
            if effects[j] == "read":
                continue
            if (_ancestors(steps, j) | set(steps[j].refs())) & touched:
                return f"destructive_then_use:{s.tool}>{steps[j].tool}"
    return None


def chain_problem(spec: Any, steps: list[Any] | tuple[Any, ...]) -> str | None:
    """The first rule a chain's bound steps break (see the module docstring), or None."""
    steps = list(steps)
    return _entity_problem(spec, steps) or _destruction_problem(spec, steps)


def side_entities(spec: Any, tool: str) -> set[str]:
    """The entities a tool takes or returns (by its id-like parameter and output names)."""
    doc = spec.docs[tool]
    names = list(doc.parameters.get("properties", {})) + list(doc.output_fields)
    return {entity(n) for n in names} - _GENERIC_ENTITY


_PROMPT = ("Tools of the {server} service:\n{docs}\n\nPlanned steps, in order, with where each argument comes "
           "from:\n{steps}\n\nDo these steps make one coherent task a real user would ask for (each step uses "
           "what earlier steps returned sensibly, nothing contradicts an earlier step, e.g. using something "
           "already deleted or cancelled)? Score 1-5: 1 = incoherent, 5 = entirely coherent.\n"
           'Reply with JSON only: {{"score": N}} where N is 1, 2, 3, 4 or 5.')


class LLMChainCheck:
    """ASTRA's chain-coherence check on a chat model (see the module docstring); one request per distinct
    chain (the verdict is remembered)."""

    name = "llm"

    def __init__(self, client: Any, role: str = "task_writer", threshold: int = 3):
        self.client, self.role, self.threshold = client, role, threshold
        self._seen: dict[str, str | None] = {}
        self._lock = threading.Lock()
        self.requests = 0
        """Chains sent to the model."""
        self.rejected = 0
        """Chains it rejected (below threshold or unscored)."""

    def prompt(self, plan: Any, spec: Any) -> str:
        """The request for one plan's chain."""
        tools = list(dict.fromkeys(c.tool for c in plan.ordered()))
        docs = json.dumps([spec.docs[t].to_openai()["function"] for t in tools if t in spec.docs], ensure_ascii=False)
        lines = []
        for n, c in enumerate(plan.ordered(), 1):
            src = [f"{p} from step {a[1] + 1}'s {a[2]}" if a[0] == "ref" else f"{p} given by the user"
                   for p, a in sorted(c.args.items())]
            lines.append(f"{n}. {c.tool}" + (f" ({'; '.join(src)})" if src else ""))
        return _PROMPT.format(server=plan.server, docs=docs, steps="\n".join(lines))

    def __call__(self, plan: Any, spec: Any) -> str | None:
        """None if the chain passes, else ``chain:incoherent`` or ``chain:gate_error``."""
        from synth.chat_client import parse_score, sample_reason

        key = json.dumps([(c.tool, sorted((p, a[0], a[1] if a[0] == "ref" else "") for p, a in c.args.items()))
                          for c in plan.ordered()])
        with self._lock:
            if key in self._seen:
                return self._seen[key]
        text = self.prompt(plan, spec)
        try:
            reply = self.client.chat(self.role, [{"role": "user", "content": text}])
            score, _ = parse_score(reply.content or "")
            verdict = None if score >= self.threshold else "chain:incoherent"
        except Exception as err:  # noqa: BLE001 - a check that fails never passes a chain
            if sample_reason(err) is None and not isinstance(err, ValueError):
                raise
            verdict = "chain:gate_error"
        with self._lock:
            self._seen[key] = verdict
            self.requests += 1
            self.rejected += verdict is not None
        return verdict
