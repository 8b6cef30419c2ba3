"""The environment API: multi-turn episodes over one validated sample (pinned interface 11).

>>> env = Environment(sample)                       # doctest: +SKIP
>>> prompt = env.reset()                            # the user query
>>> obs = env.step({"name": "get_order_by_order_id", "arguments": {"order_id": "OR-1042"}})
>>> env.done, env.reward()                          # F1 of targets hit and calls made

Each call runs the sample's tool source in :mod:`synth.envs.sandbox` (a fresh process; tools share no state
between calls, samples share nothing). Validated tools are deterministic, so repeated identical calls are
answered from a per-episode cache (they still count as calls). Bad calls (unknown tool, arguments that are not
a JSON object, a tool error, a sandbox limit) return an error observation and count as calls; they never raise.
An episode ends after ``max_turns`` calls (32) or :meth:`Environment.finish`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from synth.envs.errors import EpisodeError
from synth.envs.models import EnvSample, SandboxLimits
from synth.envs.reward import f1_reward, match_targets
from synth.envs.sandbox import run_calls

__all__ = ["Environment", "normalize_call"]


def normalize_call(tool_call: Mapping[str, Any]) -> tuple[str, dict[str, Any] | None, str]:
    """``(name, arguments or None, problem)`` from ``{name, arguments}`` or the OpenAI ``{function: {...}}``
    shape; arguments may be a dict or a JSON string. ``problem`` is empty when the call is well-formed."""
    if not isinstance(tool_call, Mapping):
        return "", None, f"a tool call must be an object with name and arguments, got {type(tool_call).__name__}"
    fn = tool_call.get("function") if isinstance(tool_call.get("function"), Mapping) else tool_call
    name = fn.get("name")
    if not isinstance(name, str) or not name:
        return "", None, "a tool call needs a non-empty string 'name'"
    args = fn.get("arguments", {})
    if args is None:
        args = {}
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError as err:
            return name, None, f"arguments of {name} are not valid JSON ({err.msg})"
    if not isinstance(args, dict):
        return name, None, f"arguments of {name} must be a JSON object, got {type(args).__name__}"
    return name, args, ""


class Environment:
    """One episode's state over an :class:`EnvSample`.

    Parameters
    ----------
    sample : EnvSample
        A validated sample (``toolscale envs check`` passes it).
    limits : SandboxLimits, optional
        Limits of each tool run.
    max_turns : int, optional
        Most tool calls per episode (default: the sample's ``max_turns``, 32).
    cache : dict, optional
        Observations shared across episodes of this sample (call key -> observation). Validated tools are
        deterministic, so many episodes of one sample (a GRPO group) run each distinct call once.
    """

    def __init__(self, sample: EnvSample, *, limits: SandboxLimits | None = None, max_turns: int | None = None,
                 cache: dict[str, str] | None = None):
        self.sample = sample
        self.limits = limits or SandboxLimits()
        self.max_turns = int(max_turns or sample.max_turns)
        self._shared = cache
        self._sources = {}
        for s in sample.tool_sources:
            self._sources.setdefault(s.name, s.source)
        self._names = set(sample.tool_names())
        self.reset()

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The OpenAI tool schemas offered to the policy (distractors included)."""
        return list(self.sample.tools)

    def reset(self) -> str:
        """Start a new episode; returns the prompt (the user query)."""
        self.calls: list[tuple[str, str, dict[str, Any]]] = []
        self.answer: str | None = None
        self._finished = False
        self._cache: dict[str, str] = {}
        return self.sample.prompt

    @property
    def done(self) -> bool:
        """True after ``max_turns`` calls or :meth:`finish`."""
        return self._finished or len(self.calls) >= self.max_turns

    @property
    def turns(self) -> int:
        """Tool calls made so far."""
        return len(self.calls)

    def step(self, tool_call: Mapping[str, Any]) -> str:
        """Execute one tool call ``{name, arguments}``; returns the observation (tool output or an error)."""
        return self.step_many([tool_call])[0]

    def step_many(self, tool_calls: Sequence[Mapping[str, Any]]) -> list[str]:
        """Execute several calls in order (one sandbox process for all new ones); observations in order.

        Equivalent to repeated :meth:`step` because tools are stateless; calls beyond ``max_turns`` raise.
        """
        if self._finished:
            raise EpisodeError("the episode is over (finish() was called); call reset() to start again")
        if len(self.calls) + len(tool_calls) > self.max_turns:
            raise EpisodeError(f"the episode allows {self.max_turns} tool calls; {len(self.calls)} made, "
                               f"{len(tool_calls)} more requested")
        parsed = [normalize_call(c) for c in tool_calls]
        if self._shared:  # what other episodes of this sample already observed
            self._cache.update(self._shared)
        pending: dict[str, dict[str, Any]] = {}
        for name, args, problem in parsed:
            if problem or name not in self._names:
                continue
            key = _key(name, args)
            if key not in self._cache and key not in pending:
                pending[key] = {"name": name, "arguments": args}
        if pending:
            keys = list(pending)
            self._run(keys, pending)
        out = []
        for name, args, problem in parsed:
            if problem:
                obs = json.dumps({"error": problem})
            elif name not in self._names:
                obs = json.dumps({"error": f"unknown tool {name!r}; available: {sorted(self._names)}"})
            else:
                obs = self._cache[_key(name, args)]
            self.calls.append((name, obs, args or {}))
            out.append(obs)
        return out

    def _run(self, keys: list[str], pending: dict[str, dict[str, Any]]) -> None:
        run = run_calls(self._sources, [pending[k] for k in keys], limits=self.limits)
        if run.failed and len(keys) > 1:  # find the call that broke the batch; the others still get answers
            for k in keys:
                self._run([k], pending)
            return
        if run.failed:
            self._cache[keys[0]] = json.dumps({"error": f"tool failed: {run.reason()}"})
            return
        for k, outcome in zip(keys, run.calls, strict=True):
            self._cache[k] = outcome.output if outcome.ok else json.dumps({"error": outcome.output})
            if self._shared is not None:  # a sandbox failure (a limit) is never shared: it may be transient
                self._shared[k] = self._cache[k]

    def finish(self, answer: str | None = None) -> None:
        """End the episode (optionally recording the final answer)."""
        self.answer = answer
        self._finished = True

    def hits(self) -> int:
        """Targets hit so far (each at most once)."""
        return sum(h is not None for h in match_targets(self.sample.targets, self.calls))

    def reward(self) -> float:
        """F1 of targets hit and calls made: ``2 hit / (targets + calls)`` (see :mod:`synth.envs.reward`)."""
        return f1_reward(self.hits(), len(self.sample.targets), len(self.calls))

    def golden_calls(self) -> list[dict[str, Any]]:
        """The targets' calls in a dependency order (what a perfect policy calls)."""
        from synth.envs.validate import golden_calls

        return [c for _, c, _ in golden_calls(self.sample)]


def _key(name: str, args: dict[str, Any] | None) -> str:
    return name + "\x00" + json.dumps(args or {}, sort_keys=True, ensure_ascii=False, default=str)
