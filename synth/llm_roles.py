"""The :class:`~synth.roles.Roles` of a synthesis from the configured LLM roles.

A role named in ``enabled`` (the keys of ``[synth.llm]`` / a recipe's ``[llm]``) gets its LLM version
over ``client``; the others keep their offline templates:

==============  =========================================  =======================================
role            LLM version                                 template
==============  =========================================  =======================================
task_writer     :class:`synth.writer.LLMTaskWriter`,       :class:`synth.roles.TemplateTaskWriter`
                and the chain check                        (rule chain checks only)
                :class:`synth.chaincheck.LLMChainCheck`
policy          :class:`synth.policy.LLMPolicy`            :class:`synth.roles.ScriptedPolicy`
emulator        :class:`synth.emulator.LLMEmulator`        :class:`synth.backends.EmulatorBackend`
judge           :class:`synth.rubric.RubricJudge`          :class:`synth.judge.RuleJudge`
==============  =========================================  =======================================
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial

from synth.chaincheck import LLMChainCheck
from synth.chat_client import ChatClient
from synth.emulator import LLMEmulator
from synth.policy import MAX_TURNS, LLMPolicy
from synth.roles import Roles
from synth.rubric import RubricJudge
from synth.writer import LLMTaskWriter

__all__ = ["ROLE_NAMES", "llm_roles"]

ROLE_NAMES: tuple[str, ...] = ("task_writer", "policy", "emulator", "judge")
"""The synthesis roles an LLM can play."""


class _EmulatorFactory:
    """``docs -> LLMEmulator`` (named, so the manifest records ``llm``)."""

    name = "llm"

    def __init__(self, client: ChatClient):
        self._make = partial(LLMEmulator, client)

    def __call__(self, docs):  # noqa: ANN001, ANN204 - matches Roles.emulator
        return self._make(docs)


def llm_roles(client: ChatClient, enabled: Iterable[str], *, max_turns: int = MAX_TURNS,
              gate_threshold: int = 3) -> Roles:
    """Roles with the LLM version for each name in ``enabled`` (see the module docstring).

    Raises ValueError for a name that is not a role.
    """
    names = set(enabled)
    unknown = sorted(names - set(ROLE_NAMES))
    if unknown:
        raise ValueError(f"unknown LLM role {unknown[0]!r}; expected one of {', '.join(ROLE_NAMES)}")
    base = Roles()
    return Roles(
        task_writer=LLMTaskWriter(client, threshold=gate_threshold) if "task_writer" in names else base.task_writer,
        policy=LLMPolicy(client, max_turns=max_turns) if "policy" in names else base.policy,
        emulator=_EmulatorFactory(client) if "emulator" in names else base.emulator,
        judge=RubricJudge(client) if "judge" in names else base.judge,
        chain_check=LLMChainCheck(client, role="task_writer", threshold=gate_threshold) if "task_writer" in names
        else None)
