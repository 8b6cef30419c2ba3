"""Multi-turn episodes of ``env`` benchmarks in ``synth.envs`` executable environments.

A policy (a backend's ``generate``, or the gold policy that replays the golden calls) plays all
episodes in lockstep, one batched request per turn: its well-formed calls run in the environment
(``Environment.step_many``), the observations go back as ``tool`` turns, and a turn without a call
(or with a malformed attempt) ends the episode. The reward is the environment's F1
(``synth.envs.reward.f1_reward``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from eval.heldout import system_message
from eval.models import ChatRequest, EnvItem
from eval.parsing import format_tool_call, parse_output

__all__ = ["Policy", "run_episodes", "golden_calls", "gold_policy", "reference_trajectory"]

Policy = Callable[[list[ChatRequest], list[int]], list[str]]
"""Completions for the active episodes' requests, given each one's token budget."""


def run_episodes(items: Sequence[EnvItem], policy: Policy, limits: Sequence[int]) -> list[float]:
    """Play every episode to its end, all of them in lockstep (one batched policy call per turn).

    A turn's well-formed calls run in order (``Environment.step_many``, cut at the episode's call
    budget); a turn without a call, or with a malformed attempt, ends the episode.
    """
    from synth import Environment
    from synth.envs.models import EnvSample

    envs = [Environment(EnvSample.model_validate(it.sample)) for it in items]
    convs: list[list[dict[str, Any]]] = [[system_message(env.sample.domain or "bundled"),
                                          {"role": "user", "content": env.reset()}] for env in envs]
    active = list(range(len(envs)))
    while active:
        texts = policy([ChatRequest(messages=convs[i], tools=envs[i].tools) for i in active],
                       [limits[i] for i in active])
        still = []
        for i, text in zip(active, texts, strict=True):
            env = envs[i]
            parsed = parse_output(text)
            if not parsed.calls or parsed.malformed:
                env.finish(parsed.content or None)
                continue
            calls = parsed.calls[:env.max_turns - env.turns]
            ids = [f"call_{env.turns + k + 1}" for k in range(len(calls))]
            convs[i].append({"role": "assistant", "content": parsed.content, "tool_calls": [
                {"id": cid, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for cid, c in zip(ids, calls, strict=True)]})
            observations = env.step_many([{"name": c.name, "arguments": c.arguments} for c in calls])
            for cid, c, obs in zip(ids, calls, observations, strict=True):
                convs[i].append({"role": "tool", "tool_call_id": cid, "name": c.name, "content": obs})
            if not env.done:
                still.append(i)
        active = still
    return [float(env.reward()) for env in envs]


def golden_calls(item: EnvItem) -> list[dict[str, Any]]:
    """The episode's golden calls ``{name, arguments}`` in a dependency order (what a perfect policy calls)."""
    from synth import Environment
    from synth.envs.models import EnvSample

    return Environment(EnvSample.model_validate(item.sample)).golden_calls()


def gold_policy(items: Sequence[EnvItem]) -> Policy:
    """A policy that issues each episode's golden calls (dependency order), one per turn, then answers."""
    plans = {_key(it.sample.get("tools"), it.sample.get("prompt")): [format_tool_call(c) for c in golden_calls(it)]
             for it in items}

    def policy(requests: list[ChatRequest], limits: list[int]) -> list[str]:
        out = []
        for r in requests:
            prompt = next((m.get("content") for m in r.messages if m.get("role") == "user"), None)
            plan = plans.get(_key(r.tools, prompt), [])
            turn = sum(1 for m in r.messages if m.get("role") == "assistant")
            out.append(plan[turn] if turn < len(plan) else "Done.")
        return out

    return policy


def _key(tools: Any, prompt: Any) -> str:
    return json.dumps([tools, prompt], sort_keys=True, default=str)


def reference_trajectory(item: EnvItem) -> ChatRequest:
    """Prompt, the golden calls with their observations, and the main answer: the conversation to score."""
    from synth import Environment
    from synth.envs.models import EnvSample

    env = Environment(EnvSample.model_validate(item.sample))
    messages: list[dict[str, Any]] = [system_message(env.sample.domain or "bundled"),
                                      {"role": "user", "content": env.reset()}]
    calls = env.golden_calls()
    observations = env.step_many(calls) if calls else []
    for k, (call, obs) in enumerate(zip(calls, observations, strict=True), 1):
        messages.append({"role": "assistant", "content": "", "tool_calls": [
            {"id": f"call_{k}", "type": "function", "function": {"name": call["name"], "arguments": call["arguments"]}}]})
        messages.append({"role": "tool", "tool_call_id": f"call_{k}", "name": call["name"], "content": obs})
    messages.append({"role": "assistant", "content": str(item.sample.get("main_answer") or "Done.")})
    return ChatRequest(messages=messages, tools=item.sample.get("tools"))
