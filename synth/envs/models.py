"""Contracts of the executable-environment branch (ASTRA RL branch): pydantic only.

An :class:`EnvSample` mirrors one row of the exported ``envs.jsonl`` artifact (see :mod:`synth.envs.io` for
the on-disk schema). It deliberately keeps tool schemas and tool sources as two *lists*, exactly as they are
serialised, so that a defective artifact (two tools with one name, a schema without source) loads as it is and
is rejected by :func:`synth.envs.validate.check_sample` instead of being silently repaired by a dict merge.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["SCHEMA_VERSION", "QANode", "ToolSource", "Distractor", "Target", "EnvSample", "SandboxLimits",
           "CallOutcome", "SandboxRun", "CheckResult", "DistractorSpec", "Tier", "Structure", "Phase"]

SCHEMA_VERSION = "toolscale-env/1"
"""Value of the ``schema`` field of every artifact row this code writes."""

Tier = Literal["high", "medium", "low"]
Structure = Literal["single-hop", "multi-hop", "parallel-multi-hop"]

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class QANode(BaseModel):
    """One sub-question of the QA dependency graph."""

    model_config = _FROZEN

    id: str
    """Node id, unique within the sample (e.g. ``"q1"``)."""
    question: str
    """The atomic sub-question in natural language."""
    answer: str | None = None
    """Its answer as a canonical string (numbers without trailing ``.0``); None is a defect the checks reject."""
    tool: str | None = None
    """Name of the tool that answers it; None for a reasoning-only node (aggregation)."""
    arguments: dict[str, Any] | None = None
    """The golden call's arguments (tool nodes only)."""
    depends_on: list[str] = Field(default_factory=list)
    """Ids of the nodes whose answers this node needs (the DAG's incoming edges)."""
    mode: Literal["serial", "parallel"] = "serial"
    """``parallel``: no dependency on a sibling branch, may run concurrently; ``serial``: needs a prior answer."""


class ToolSource(BaseModel):
    """Executable Python source of one tool: it defines a function named like the tool."""

    model_config = _FROZEN

    name: str
    """Tool name; the source must define a top-level function of this name."""
    source: str
    """Python source (standard library only); the function returns a JSON-serialisable value."""


class Distractor(BaseModel):
    """An irrelevant tool mixed into the tool list, with its similarity tier."""

    model_config = _FROZEN

    name: str
    """Tool name (its schema is in ``EnvSample.tools``)."""
    tier: Tier
    """``high`` (similarity > 0.85), ``medium`` (0.4-0.85) or ``low`` (< 0.4)."""
    similarity: float
    """Max cosine similarity (0-1) to a gold tool, TF-IDF over character n-grams of name, description, params."""


class Target(BaseModel):
    """A reward target: the golden call of one tool-needing sub-question and the answer it must produce."""

    model_config = _FROZEN

    node: str
    """Id of the sub-question node."""
    tool: str
    """Tool name of the golden call."""
    arguments: dict[str, Any]
    """Arguments of the golden call."""
    answer: str
    """Canonical answer string that the tool's output must contain (as a value, see ``reward.answer_in_output``)."""


class EnvSample(BaseModel):
    """One executable environment: a prompt, tools (schemas + sources), a QA graph and its targets."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    schema_: str = Field(default=SCHEMA_VERSION, alias="schema")
    """Artifact schema version (``toolscale-env/1``)."""
    env_id: str
    """Stable id of the sample (unique within a file)."""
    domain: str = ""
    """Bundled server domain the facts come from (``""`` for hand-written samples)."""
    seed: int = 0
    """Seed the sample was generated with (database seed and sampling seed)."""
    prompt: str
    """The user query the policy sees (targets are never shown)."""
    structure: Structure = "multi-hop"
    """Shape of the dependency graph."""
    hop_budget: int = 0
    """H: the hop budget the graph was generated under (number of tool hops on its longest path <= H)."""
    main_question: str = ""
    """The main (multi-hop) question."""
    main_answer: str | None = None
    """Answer of the main question (canonical string)."""
    nodes: list[QANode]
    """Sub-questions with their dependencies."""
    tools: list[dict[str, Any]]
    """OpenAI tool schemas ``{type: function, function: {name, description, parameters}}``, distractors included."""
    tool_sources: list[ToolSource]
    """One executable source per tool schema (same names)."""
    distractors: list[Distractor] = Field(default_factory=list)
    """Which of ``tools`` are distractors, with their tier."""
    targets: list[Target]
    """Reward targets, one per tool-needing node."""
    max_turns: int = 32
    """Maximum number of tool calls in an episode."""
    meta: dict[str, Any] = Field(default_factory=dict)
    """Free-form provenance (db_id, generator, tables used...)."""

    def tool_names(self) -> list[str]:
        """Names of ``tools`` in order (duplicates kept: the validator reports them)."""
        return [str((t.get("function") or {}).get("name", "")) for t in self.tools]


class SandboxLimits(BaseModel):
    """Resource limits of one sandbox run; every number finite and positive (a ``ValidationError`` if not)."""

    model_config = _FROZEN

    cpu_s: float = Field(default=5.0, gt=0, le=86400, allow_inf_nan=False)
    """CPU-time limit of each call's process (seconds, RLIMIT_CPU)."""
    memory_mb: int = Field(default=512, ge=64, le=1 << 20)
    """Address-space limit of each call's process (MiB, RLIMIT_AS)."""
    wall_s: float = Field(default=10.0, gt=0, le=86400, allow_inf_nan=False)
    """Wall-clock limit of the whole run (seconds); the caller kills the jail's process group past it."""
    file_kb: int = Field(default=1024, ge=1, le=1 << 24)
    """Largest file the child may write (KiB, RLIMIT_FSIZE)."""
    output_chars: int = Field(default=65536, ge=1, le=1 << 24)
    """Longest observation a call may return (characters); longer ones are a failed call."""
    output_kb: int = Field(default=1024, ge=1, le=1 << 20)
    """Most bytes the caller reads from the jail (KiB, per call and for the whole run): past it the jail is
    killed and the run fails with ``output_limit``."""
    max_processes: int = Field(default=16, ge=2, le=4096)
    """Most processes (threads included) the jailed uid may have at once (RLIMIT_NPROC): a fork bomb stops
    there. Counted for uid 65534 across the machine, so concurrent sandboxes share it."""
    work_mb: int = Field(default=16, ge=1, le=1 << 16)
    """Size of the empty tmpfs work directory, the only writable place in the jail (MiB)."""
    isolation: Literal["namespaces", "insecure"] = "namespaces"
    """``namespaces``: bubblewrap's jail (:mod:`synth.envs.jail`), refused with an error where it cannot be set
    up; ``insecure``: a plain child process as the caller's user with only rlimits and an audit hook, for
    debugging generated code only (it can read your files and reach your network)."""


class CallOutcome(BaseModel):
    """Result of one tool call inside the sandbox."""

    model_config = _FROZEN

    name: str
    """Tool called."""
    ok: bool
    """False when the tool raised, is unknown, or returned a non-JSON value."""
    output: str
    """The observation: the returned string, or the return value as JSON (sorted keys); the error text if not ok."""
    stdout: str = ""
    """What the tool printed (captured, truncated to 4 KiB)."""


class SandboxRun(BaseModel):
    """Result of one sandbox process (a batch of calls)."""

    model_config = _FROZEN

    status: Literal["ok", "cpu_limit", "memory_limit", "wall_limit", "output_limit", "violation", "crashed"]
    """``ok`` when the process finished within limits without a policy violation."""
    isolation: str
    """Which isolation applied: ``namespaces`` (the bubblewrap jail) or ``insecure`` (none)."""
    calls: list[CallOutcome] = Field(default_factory=list)
    """One outcome per requested call, in order (empty when the process died)."""
    violations: list[str] = Field(default_factory=list)
    """Policy violations seen by the audit hook (network, file write outside the work dir, process spawn, native
    code): a tripwire that fails the run; the jail, not the hook, is what stops them."""
    detail: str = ""
    """One line on a failure (signal, stderr tail)."""
    wall_s: float = 0.0
    """Wall-clock time of the run (seconds)."""

    @property
    def failed(self) -> bool:
        """True unless the run finished within limits with no violation."""
        return self.status != "ok"

    def reason(self) -> str:
        """One line saying why the run failed (empty when it did not)."""
        if not self.failed:
            return ""
        text = {"cpu_limit": "CPU-time limit exceeded", "memory_limit": "memory limit exceeded",
                "wall_limit": "wall-clock limit exceeded",
                "output_limit": "output limit exceeded", "crashed": "sandbox process crashed",
                "violation": "sandbox policy violation"}[self.status]
        extra = "; ".join(self.violations) or self.detail
        return f"{text}: {extra}" if extra else text


class CheckResult(BaseModel):
    """Verdict of the artifact check on one row."""

    model_config = _FROZEN

    row: int
    """1-based line number in the JSONL file."""
    env_id: str
    """The row's env_id (``"?"`` when the row does not parse)."""
    ok: bool
    """True only when every check passed."""
    reasons: list[str] = Field(default_factory=list)
    """Why the row was rejected (one line each)."""
    isolation: str = ""
    """Isolation the replay ran under (``namespaces`` / ``insecure``; empty when not replayed)."""
    replay_s: float = 0.0
    """Wall-clock seconds spent replaying the row's golden calls (both runs)."""


class DistractorSpec(BaseModel):
    """How many irrelevant tools of each similarity tier to mix into an environment."""

    model_config = _FROZEN

    high: int = Field(default=1, ge=0)
    """Distractors with similarity > 0.85 to a gold tool (count)."""
    medium: int = Field(default=2, ge=0)
    """Distractors with similarity in [0.4, 0.85] (count)."""
    low: int = Field(default=2, ge=0)
    """Distractors with similarity < 0.4 (count)."""

    def counts(self) -> dict[str, int]:
        """``{tier: count}``."""
        return {"high": self.high, "medium": self.medium, "low": self.low}


class Phase(BaseModel):
    """One phase of an environment curriculum (:mod:`synth.envs.curriculum`)."""

    model_config = _FROZEN

    name: str
    """Phase name (``single-hop``, ``multi-hop``, ``parallel``)."""
    structures: list[Structure] | None = None
    """Shapes drawn in this phase (None: the generator's default mix)."""
    hop_budget: int = Field(default=3, ge=1)
    """H, most tool hops on any path."""
    distractors: DistractorSpec = Field(default_factory=DistractorSpec)
    """Irrelevant tools per similarity tier."""
