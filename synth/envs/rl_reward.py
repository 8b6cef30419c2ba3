"""A TRL GRPO reward function over executable environments, and the matching dataset rows.

The train helper wires it as ``GRPOTrainer(reward_funcs=[make_reward_fn(samples)], train_dataset=rows)``
with ``rows = grpo_rows(samples)``. TRL calls a reward function as ``f(prompts=..., completions=...,
completion_ids=..., **columns)`` where every extra dataset column arrives as a list aligned with the
completions; here the ``env_id`` column selects the environment of each completion.

Each completion's tool calls are extracted (:func:`extract_tool_calls`: assistant ``tool_calls`` of a
conversational completion, and ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` blocks of the
pinned chat format in text), replayed in a fresh :class:`synth.envs.api.Environment` (at most ``max_turns``
calls, all in one sandbox process), and scored with the F1 reward. Because validated tools are deterministic,
the replay gives the same observations a multi-turn rollout saw.

:class:`TRLToolEnv` is the alternative for TRL's experimental ``environment_factory`` (multi-turn rollouts with
tool execution during generation): one generic ``call_tool(name, arguments)`` tool dispatching to the
sample's tools, and ``get_reward()``.

The trainer (``train.grpo``, ``train.rollout``) reaches this branch only through this module: it re-exports
:class:`Environment`, the curriculum (:mod:`synth.envs.curriculum`) and :func:`partial_credit`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from synth.envs.api import Environment
from synth.envs.curriculum import CURRICULUM, FLAT, build_curriculum, phase_of, phases_of
from synth.envs.errors import EnvError
from synth.envs.models import EnvSample, SandboxLimits
from synth.envs.reward import partial_credit

__all__ = ["extract_tool_calls", "make_reward_fn", "grpo_rows", "sft_system_prompt", "TRLToolEnv", "SYSTEM_PROMPT",
           "Environment", "build_curriculum", "phase_of", "phases_of", "partial_credit", "CURRICULUM", "FLAT"]
# Environment, the curriculum and partial credit are re-exported: this module is what the trainer (train/) uses

SYSTEM_PROMPT = ("You are a tool-using assistant. Call tools with <tool_call>{\"name\": ..., \"arguments\": "
                 "{...}}</tool_call>; use each tool output before the next call; finish with a plain answer.")

_BLOCK = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)


def extract_tool_calls(completion: Any) -> list[dict[str, Any]]:
    """Tool calls of one completion, in order, as ``{"name", "arguments"}`` (arguments dict or raw string).

    Accepts a string (``<tool_call>`` blocks), or a list of chat messages (assistant ``tool_calls`` entries and
    ``<tool_call>`` blocks in assistant content). Unparseable blocks, and calls whose name is not a string, become
    calls named ``""`` so that they still count as (wasted) calls.
    """
    calls: list[dict[str, Any]] = []
    if isinstance(completion, str):
        return _from_text(completion)
    if isinstance(completion, Mapping):
        completion = [completion]
    for msg in completion or []:
        if not isinstance(msg, Mapping) or msg.get("role", "assistant") != "assistant":
            continue
        for tc in msg.get("tool_calls") or []:
            fn = tc.get("function", tc) if isinstance(tc, Mapping) else {}
            name = fn.get("name") or ""
            calls.append({"name": name if isinstance(name, str) else "", "arguments": fn.get("arguments", {})})
        content = msg.get("content")
        if isinstance(content, str):
            calls += _from_text(content)
        elif isinstance(content, list):
            for part in content:
                if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                    calls += _from_text(part["text"])
    return calls


def _from_text(text: str) -> list[dict[str, Any]]:
    out = []
    for block in _BLOCK.findall(text):
        try:
            obj = json.loads(block)
        except json.JSONDecodeError:
            out.append({"name": "", "arguments": block})
            continue
        if isinstance(obj, Mapping) and isinstance(obj.get("name") or "", str):
            out.append({"name": obj.get("name") or "", "arguments": obj.get("arguments", {})})
        else:
            out.append({"name": "", "arguments": block})
    return out


def make_reward_fn(samples: Sequence[EnvSample], *, column: str = "env_id",
                   limits: SandboxLimits | None = None) -> Callable[..., list[float]]:
    """A TRL reward function ``(prompts, completions, **kwargs) -> list[float]`` (F1 per completion).

    Parameters
    ----------
    samples : the environments of the training set
    column : dataset column naming each row's environment (default ``env_id``)
    limits : sandbox limits for the replays

    Completions whose ``env_id`` is unknown raise :class:`EnvError` (a wiring bug, not a bad rollout); a
    completion with no tool call scores 0 (or 1 for an environment without targets).
    """
    index = {s.env_id: s for s in samples}
    if len(index) != len(samples):
        raise EnvError("make_reward_fn: env_id values are not unique")

    def envs_f1_reward(prompts: Sequence[Any] | None = None, completions: Sequence[Any] = (),
                       **kwargs: Any) -> list[float]:
        ids = kwargs.get(column)
        if ids is None or len(ids) != len(completions):
            raise EnvError(f"envs reward: expected a {column!r} column with one value per completion "
                           f"({len(completions)}), got {None if ids is None else len(ids)}")
        rewards = []
        for completion, env_id in zip(completions, ids, strict=True):
            sample = index.get(env_id)
            if sample is None:
                raise EnvError(f"envs reward: unknown env_id {env_id!r}")
            env = Environment(sample, limits=limits)
            env.reset()
            calls = extract_tool_calls(completion)[: env.max_turns]
            if calls:
                env.step_many(calls)
            rewards.append(env.reward())
        return rewards

    return envs_f1_reward


def grpo_rows(samples: Sequence[EnvSample], *, system_prompt: str | None = None) -> list[dict[str, Any]]:
    """Dataset rows for GRPO: conversational ``prompt``, ``env_id`` and the tool schemas as a JSON string.

    The system turn is ``system_prompt``, or by default the one synthesised SFT conversations and the ``env``
    benchmarks open with (``synth.rollout.system_prompt`` of the sample's domain), so RL prompts have the shape
    the policy was trained and is evaluated on.
    """
    return [{"prompt": [{"role": "system", "content": system_prompt or sft_system_prompt(s)},
                        {"role": "user", "content": s.prompt}],
             "env_id": s.env_id, "tools": json.dumps(s.tools, ensure_ascii=False)} for s in samples]


def sft_system_prompt(sample: EnvSample) -> str:
    """The system prompt of SFT data and evaluation for the sample's domain (``bundled`` without one)."""
    from synth.rollout import system_prompt

    return system_prompt(sample.domain or "bundled")


class TRLToolEnv:
    """An ``environment_factory`` environment for TRL's GRPOTrainer (experimental API there).

    ``reset(**row)`` selects the sample by the row's ``env_id``; the policy calls the single tool
    :meth:`call_tool`; :meth:`get_reward` returns the F1 reward of the rollout.
    """

    samples: dict[str, EnvSample] = {}
    """Class-level index env_id -> sample; set it with :meth:`with_samples` before building the trainer."""

    def __init__(self) -> None:
        self.env: Environment | None = None

    @classmethod
    def with_samples(cls, samples: Sequence[EnvSample]) -> type[TRLToolEnv]:
        """A subclass bound to ``samples`` (pass it as ``environment_factory``)."""
        return type("BoundTRLToolEnv", (cls,), {"samples": {s.env_id: s for s in samples}})

    def reset(self, **row: Any) -> str | None:
        env_id = row.get("env_id")
        if env_id is None:  # the trainer probes one instance at construction
            self.env = None
            return None
        if env_id not in self.samples:
            raise EnvError(f"TRLToolEnv: unknown env_id {env_id!r}")
        self.env = Environment(self.samples[env_id])
        self.env.reset()
        names = ", ".join(t["function"]["name"] for t in self.env.tools)
        return f"\nTools available through call_tool: {names}."

    def call_tool(self, name: str, arguments: str) -> str:
        """Call one of the environment's tools.

        Args:
            name: the tool's name.
            arguments: the tool's arguments as a JSON object string.
        """
        if self.env is None:
            return json.dumps({"error": "no environment selected"})
        if self.env.done:
            return json.dumps({"error": f"turn limit of {self.env.max_turns} tool calls reached"})
        return self.env.step({"name": name, "arguments": arguments})

    def get_reward(self) -> float:
        return 0.0 if self.env is None else self.env.reward()
