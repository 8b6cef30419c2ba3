"""The synthesis roles behind small Protocols, with the offline template versions as defaults.

ASTRA's SFT branch has four LLM roles; :class:`Roles` bundles one implementation of each:

``task_writer`` (:class:`TaskWriter`)
    writes the user query of a planned task and gates it (``gate -> None`` passes, else the reason);
    template: :func:`synth.tasks.render_query` and :class:`RuleTaskGate`'s rules;
``policy`` (:class:`Policy`)
    writes the assistant turns and tool calls of one trajectory against a backend;
    template: the scripted policy :func:`synth.rollout.execute`;
``emulator``
    a factory ``docs -> Backend`` for document-only tools; template :class:`synth.backends.EmulatorBackend`;
``judge`` (:class:`synth.judge.Judge`)
    scores the seven dimensions; template :class:`synth.judge.RuleJudge`.

The LLM versions (:mod:`synth.llm_roles`) satisfy the same Protocols over any chat client with
``chat(role, messages, tools=None)``.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from synth.backends import Backend, EmulatorBackend
from synth.judge import Judge, RuleJudge
from synth.models import ToolDoc
from synth.plans import Plan, ServerSpec, render_intent
from synth.rollout import Trace, execute
from synth.tasks import render_query

__all__ = ["MAX_QUERY_CHARS", "TaskWriter", "Policy", "TemplateTaskWriter", "ScriptedPolicy", "Roles"]

MAX_QUERY_CHARS = 900
"""Longest user query accepted by the task gate, in characters."""


class TaskWriter(Protocol):
    """Writes and gates the user query of a planned task."""

    def write(self, plan: Plan, spec: ServerSpec, rng: random.Random) -> tuple[str, list[str]]:
        """``(query, augmentations applied)`` for ``plan`` (values of query-bound arguments stated)."""
        ...

    def gate(self, plan: Plan, spec: ServerSpec) -> str | None:
        """None if the task passes the task gates, else the reason (counted as ``task_gate:REASON``)."""
        ...


class Policy(Protocol):
    """Writes one trajectory: assistant turns and tool calls, executed against ``backend``."""

    def rollout(self, plan: Plan, spec: ServerSpec, backend: Backend, rng: random.Random,
                error_rate: float) -> Trace:
        """The conversation of ``plan``; tool errors injected with probability ``error_rate`` per call."""
        ...


def rule_gate(plan: Plan) -> str | None:
    """ASTRA's task checks, rule-based: *question quality*: a query of at most :data:`MAX_QUERY_CHARS`
    characters; *tool-use necessity*: at least one visible call."""
    if len(plan.query) > MAX_QUERY_CHARS:
        return "query_too_long"
    if all(c.hidden for c in plan.calls):
        return "no_tool_needed"
    return None


class TemplateTaskWriter:
    """The offline task writer: intents filled with the plan's values, seeded template augmentation."""

    name = "template"

    def write(self, plan: Plan, spec: ServerSpec, rng: random.Random) -> tuple[str, list[str]]:
        return render_query(plan, spec, rng)

    def gate(self, plan: Plan, spec: ServerSpec) -> str | None:
        return rule_gate(plan)


class ScriptedPolicy:
    """The offline policy: the plan's calls turn by turn, template rationales and answer."""

    name = "template"

    def rollout(self, plan: Plan, spec: ServerSpec, backend: Backend, rng: random.Random,
                error_rate: float) -> Trace:
        phrases = {c.tool: render_intent(spec.intents.get(c.tool, c.tool.replace("_", " ")), lambda p: ("ref", None))
                   for c in plan.calls}
        return execute(plan, backend, rng, error_rate, phrases=phrases)


@dataclass(frozen=True)
class Roles:
    """One implementation per role; the defaults are the offline templates."""

    task_writer: TaskWriter = field(default_factory=TemplateTaskWriter)
    """Writes and gates queries."""
    policy: Policy = field(default_factory=ScriptedPolicy)
    """Writes trajectories."""
    emulator: Callable[[list[ToolDoc]], Backend] = EmulatorBackend
    """Builds the backend of document-only tools from their documents."""
    judge: Judge = field(default_factory=RuleJudge)
    """Scores trajectories (fail-closed through :func:`synth.judge.judge_trajectory`)."""
    chain_check: Callable[[Plan, ServerSpec], str | None] | None = None
    """ASTRA's LLM chain-coherence check (:class:`synth.chaincheck.LLMChainCheck`); None offline, where the
    rules of :func:`synth.chaincheck.chain_problem` alone apply."""

    def names(self) -> dict[str, str]:
        """``{role: implementation name}`` (``template`` or ``llm``), for the manifest."""
        def nm(x: object) -> str:
            return str(getattr(x, "name", type(x).__name__))
        return {"task_writer": nm(self.task_writer), "policy": nm(self.policy),
                "emulator": "template" if self.emulator is EmulatorBackend else nm(self.emulator),
                "judge": nm(self.judge)}
