"""RL environments of the code domain: an episode in a task's workspace, rewarded by the hidden tests.

:class:`CodeEnvironment` has the interface of :class:`synth.envs.api.Environment` (``reset``, ``step``,
``step_many``, ``done``, ``turns``, ``finish``, ``reward``, ``golden_calls``, ``tools``): the policy
calls the four workspace tools; ``run_tests`` and the reward run the hidden tests in the jail.

The reward is F1-style, the tool domain's trade-off of coverage against calls made (seed 000, Q4)::

    R = tests passed by the module at the end / tests           (how much of the task is done)
    P = min(1, golden calls / calls made)                         (how economically)
    F1 = 2 P R / (P + R)          (0 when nothing passes)

so the golden episode earns 1, an episode that passes every test in twice the golden calls earns 2/3,
and one that passes half the tests in the golden number of calls earns 2/3 too. A bad call (unknown
tool, arguments that are not an object, a path outside the workspace) returns an error observation and
counts as a call; it never raises.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from synth.code.models import CodeRecipe, CodeTask, SuiteResult
from synth.code.render import module_path, repo_files, tests_source
from synth.code.tasks import plan_tasks
from synth.code.trajectory import TOOLS_JSON, EpisodePlan, roll_out, system_prompt, user_prompt
from synth.code.workspace import SuiteCache, Workspace
from synth.envs.errors import EpisodeError

__all__ = ["CodeEnvSample", "CodeEnvironment", "code_reward", "build_code_envs", "dump_code_envs", "load_code_envs",
           "CODE_ENV_SCHEMA"]

CODE_ENV_SCHEMA = "toolscale-code-env/1"
"""The ``schema`` of every code environment row."""


class CodeEnvSample(BaseModel):
    """One code environment: the task (specs and hidden tests), the prompt, and the golden calls."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    schema_: str = Field(default=CODE_ENV_SCHEMA, alias="schema")
    """Row schema."""
    env_id: str
    """Stable id."""
    system: str
    """The system turn."""
    prompt: str
    """The user's request."""
    task: CodeTask
    """The task: functions with specs, hidden tests, repository conventions."""
    golden_calls: list[dict[str, Any]]
    """The golden episode's calls ``{name, arguments}`` (every spec read, no bug)."""
    max_turns: int = 32
    """Most tool calls in an episode."""

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The four workspace tools' schemas."""
        return json.loads(TOOLS_JSON)


def code_reward(suite: SuiteResult, calls: int, golden: int) -> float:
    """F1 of the tests passed and the call economy (module docstring). 0 when nothing passes or nothing ran.

    >>> code_reward(SuiteResult(passed=4, total=4), calls=6, golden=6)
    1.0
    >>> round(code_reward(SuiteResult(passed=4, total=4), calls=12, golden=6), 3)
    0.667
    """
    if suite.total == 0 or suite.passed == 0 or calls == 0:
        return 0.0
    recall = suite.passed / suite.total
    precision = min(1.0, golden / calls)
    return 2.0 * precision * recall / (precision + recall)


class CodeEnvironment:
    """One episode's state over a :class:`CodeEnvSample` (see the module docstring)."""

    def __init__(self, sample: CodeEnvSample, *, limits: Any = None, max_turns: int | None = None):
        self.sample = sample
        self.limits = limits
        self.max_turns = int(max_turns or sample.max_turns)
        self.reset()

    @property
    def tools(self) -> list[dict[str, Any]]:
        """Tool schemas offered to the policy."""
        return self.sample.tools

    def reset(self) -> str:
        """Start a new episode on a fresh workspace; returns the prompt."""
        t = self.sample.task
        self.workspace = Workspace(repo_files(t), {module_path(t): (t.module, tests_source(t))},
                                   suites=SuiteCache(limits=self.limits))
        self.calls: list[tuple[str, str, dict[str, Any]]] = []
        self.answer: str | None = None
        self._finished = False
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
        """Execute one call ``{name, arguments}`` (or the OpenAI shape); returns the observation."""
        return self.step_many([tool_call])[0]

    def step_many(self, tool_calls: Sequence[Mapping[str, Any]]) -> list[str]:
        """Execute calls in order; observations in order (calls past ``max_turns`` raise :class:`EpisodeError`)."""
        from synth.envs.api import normalize_call

        if self._finished:
            raise EpisodeError("the episode is over (finish() was called); call reset() to start again")
        if len(self.calls) + len(tool_calls) > self.max_turns:
            raise EpisodeError(f"the episode allows {self.max_turns} tool calls; {len(self.calls)} made, "
                               f"{len(tool_calls)} more requested")
        out = []
        for call in tool_calls:
            name, args, problem = normalize_call(call)
            obs = f"error: {problem}" if problem else self.workspace.call(name, args or {})
            self.calls.append((name, obs, args or {}))
            out.append(obs)
        return out

    def finish(self, answer: str | None = None) -> None:
        """End the episode (optionally recording the final answer)."""
        self.answer = answer
        self._finished = True

    def tests(self) -> SuiteResult:
        """The hidden tests of the module as it is now (run in the jail)."""
        return self.workspace.suite(module_path(self.sample.task))

    def reward(self) -> float:
        """:func:`code_reward` of the module now and the calls made."""
        return code_reward(self.tests(), len(self.calls), len(self.sample.golden_calls))

    def golden_calls(self) -> list[dict[str, Any]]:
        """The golden episode's calls."""
        return [dict(c) for c in self.sample.golden_calls]


def _golden(task: CodeTask) -> list[dict[str, Any]]:
    plan = EpisodePlan(task=task, depth=1, skipped=frozenset(), repaired=frozenset(), buggy=None, ask=task.seed % 4)
    calls: list[dict[str, Any]] = []

    def record(tool: str, args: dict[str, Any]) -> str:
        calls.append({"name": tool, "arguments": args})
        return ""

    roll_out(plan, record, lambda _s: SuiteResult(passed=1, total=1))
    return calls


def build_code_envs(n: int, *, seed: int = 0, tool_diversity: int = 40, spec_dependency: float = 0.5,
                    db_diversity: int = 2) -> list[CodeEnvSample]:
    """``n`` environments of training APIs (a code recipe's first ``n`` testable tasks, run seed ``seed``)."""
    recipe = CodeRecipe(tool_diversity=tool_diversity, task_count=n, db_diversity=db_diversity,
                        spec_dependency=spec_dependency, seed=seed)
    out = []
    for p in plan_tasks(recipe, id_prefix="code-env"):
        if p.task is None:
            continue
        ask = p.task.seed % 4
        out.append(CodeEnvSample(env_id=p.task.task_id, system=system_prompt(p.task.repo),
                                 prompt=user_prompt(p.task, ask), task=p.task, golden_calls=_golden(p.task)))
    return out


def dump_code_envs(samples: Sequence[CodeEnvSample], path: str | Path) -> None:
    """Write samples as JSON lines."""
    from toolscale.files import atomic_write_text

    atomic_write_text(path, "".join(s.model_dump_json(by_alias=True) + "\n" for s in samples))


def load_code_envs(path: str | Path) -> list[CodeEnvSample]:
    """Read samples written by :func:`dump_code_envs`."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return [CodeEnvSample.model_validate_json(line) for line in lines if line.strip()]
