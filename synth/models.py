"""Contracts of the synthesis package: the ``[synth]`` settings (composed into :mod:`toolscale.config`), tool
documents, recipes, trajectory rows, judge verdicts, manifests.

Only pydantic and the standard library are imported here (plus the package's error classes, which are
plain exceptions), so the models can be used anywhere without pulling in the MCP SDK or networkx.
Third-party types (the MCP SDK's ``Tool``) are converted to :class:`ToolDoc` at one adapter,
:mod:`synth.collect`.
"""

from __future__ import annotations

import difflib
import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from synth.errors import RecipeError
from synth.llm.models import LLMUsage

__all__ = ["ToolDoc", "Recipe", "AXIS_KNOBS", "STRUCTURES", "JUDGE_DIMENSIONS", "Message", "TrajectoryMeta",
           "TrajectoryRow", "RejectedRow", "JudgeVerdict", "Quarantined", "CollectedServer", "CollectReport",
           "CorpusReport", "Manifest", "LLM_ROLES", "LLMRoleSpec", "UserServer", "SynthSpec", "check_llm_roles"]

STRUCTURES: tuple[str, ...] = ("chain", "fan-in", "fan-out", "parallel")
"""Dependency structures a task can have (the coverage quota applies to each)."""

JUDGE_DIMENSIONS: tuple[str, ...] = ("query_understanding", "query_planning", "tool_call_understanding",
                                     "tool_call_planning", "tool_call_success", "conciseness", "final_answer")
"""The seven trajectory-judge dimensions of ASTRA (seed 000, Q3), averaged with equal weights."""

AXIS_KNOBS: tuple[str, ...] = ("tool_diversity", "task_count", "db_diversity", "repair_rate", "coverage_quota",
                               "support_depth")
"""Recipe fields that are grid axes (the names used in ``[[axes]]`` of the experiment config)."""


_LATER_DEFAULTS: dict[str, Any] = {"transform_rate": 0.0, "servers": [], "arg_values": {}, "max_turns": 32,
                                   "llm": {}, "min_tools": 3, "tool_spread": "servers"}
"""Recipe knobs added after the first dataset ids, with their defaults (see :meth:`Recipe.identity`)."""

_LLM_OPERATIONAL = frozenset({"api_key_env", "concurrency", "timeout_s", "max_tries", "price_in", "price_out"})
"""LLM role settings that change how replies are fetched or priced, not what they are (not in dataset ids)."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class _Settings(BaseModel):
    """Base of the config sections declared here: frozen, no unknown keys, field docstrings as descriptions
    (the same settings as ``toolscale.config``'s base, which this module cannot import: the config imports it)."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


LLM_ROLES: tuple[str, ...] = ("task_writer", "policy", "emulator", "judge")
"""The LLM roles of synthesis; a role left out of ``[synth.llm]`` keeps its offline template."""


class LLMRoleSpec(_Settings):
    """One LLM role's endpoint (``[synth.llm.<role>]`` in a config, ``[llm.<role>]`` in a recipe).

    Any server that speaks OpenAI chat completions works (vLLM, SGLang, TGI, a hosted API,
    ``toolscale serve-model``). The API key is read from the environment variable named by
    ``api_key_env``, never from the file.
    """

    base_url: str = Field(pattern=r"^https?://[^\s/]+")
    """Endpoint root including the API prefix, e.g. ``http://127.0.0.1:8000/v1``."""
    model: str = Field(min_length=1)
    """Model name sent in each request (``/models`` must list it when the endpoint has that route)."""
    api_key_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """Environment variable holding the API key (sent as ``Authorization: Bearer``); None sends none."""
    temperature: float = Field(default=0.0, ge=0.0, le=2.0, strict=True, allow_inf_nan=False)
    """Sampling temperature (0 = greedy)."""
    max_tokens: int = Field(default=1024, ge=1, strict=True)
    """Most completion tokens per request, in tokens."""
    concurrency: int = Field(default=8, ge=1, strict=True)
    """Requests in flight at once for this role, in requests."""
    timeout_s: float = Field(default=60.0, gt=0.0, strict=True, allow_inf_nan=False)
    """Seconds one request may take before it is retried (then fails), in seconds."""
    max_tries: int = Field(default=4, ge=1, le=20, strict=True)
    """Attempts per request on 429, 5xx, timeouts and malformed replies (bounded), in attempts."""
    price_in: float = Field(default=0.0, ge=0.0, strict=True, allow_inf_nan=False)
    """Price of input (prompt) tokens, in dollars per 1M tokens."""
    price_out: float = Field(default=0.0, ge=0.0, strict=True, allow_inf_nan=False)
    """Price of output (completion) tokens, in dollars per 1M tokens."""


def check_llm_roles(roles: dict) -> dict:
    """Reject unknown role names with the valid ones (used by the config and the recipe)."""
    import difflib

    for name in roles:
        if name not in LLM_ROLES:
            close = difflib.get_close_matches(str(name), LLM_ROLES, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(f"unknown LLM role {name!r}{hint}; expected one of {', '.join(LLM_ROLES)}")
    return roles


class UserServer(_Settings):
    """One of your stdio MCP servers as a table (``[[synth.servers]]``); a plain string is ``command`` alone."""

    command: str = Field(min_length=1)
    """The command line (``"python -m mcp_server_git --repository /data/repo"``)."""
    scratch: str | None = Field(default=None, pattern=r"^copy:.+")
    """``"copy:PATH"``: copy PATH for each job and start the server on the copy (PATH, which must appear in
    ``command``, is never touched; results name PATH, not the copy). Write tools run only with it, or
    under ``emulate_writes``."""
    emulate_writes: bool = False
    """Play the server's write tools (not read-only by their MCP annotations or name) with the emulator
    instead of running them; without this or ``scratch`` they are left out, with a warning."""


class SynthSpec(_Settings):
    """Synthesis settings (``[synth]``): declared once, here; ``synth.models.Recipe`` is these settings plus the
    grid's axis knobs and a seed (it subclasses this model), so ``validate`` and a job accept the same values."""

    servers: list[str | UserServer] = Field(default_factory=list)
    """Your stdio MCP servers as command lines (``"python -m mcp_server_git --repository /data/repo"``):
    collected and executed live in ``synth`` and in every pipeline job (one session per server per job);
    their tools join the bundled ones for ``tool_diversity``."""
    arg_values: dict[str, list[str | int | float | bool]] = Field(default_factory=dict)
    """Values tasks may state for an argument of your servers' tools, by argument name
    (``{ repo_path = ["/data/repo"] }``); other arguments get generated values."""
    max_turns: int = Field(default=32, ge=1, le=256)
    """Most assistant turns of an LLM policy per trajectory (ASTRA: 32), in turns."""
    tool_spread: Literal["servers", "stratified"] = "servers"
    """How ``tool_diversity`` tools are drawn: ``servers`` (whole servers in a seeded order: a small level covers
    few servers) or ``stratified`` (one tool per server in turn: the tool axis then measures diversity, not
    which servers a benchmark's items fall on)."""
    min_tools: int = Field(default=3, ge=1)
    """Servers from the registry (``--with-collected``, ASTRA imports) with fewer usable tools are
    quarantined (ASTRA's pruning rule); servers you name in ``servers`` are never held to it."""
    heldout_servers: list[str] = Field(default_factory=list)
    """Bundled server names reserved for evaluation; empty uses the package default."""
    error_rate: float = Field(default=0.2, ge=0.0, le=1.0)
    """Probability that a tool call gets an injected error (timeout, unreachable, invalid argument)."""
    defect_rate: float = Field(default=0.3, ge=0.0, le=1.0)
    """Share of actions synthesised non-derivable before repair (makes quality a real axis)."""
    transform_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    """Share of arguments the visible history shows only transformed (``synth.transforms``); such actions
    stay derivable, exact-match provenance misses them."""
    max_chain_len: int = Field(default=4, ge=1, le=8)
    """Most tool calls in a task's plan (retries not counted), in calls."""
    backend: Literal["live", "emulator"] = "emulator"
    """Roll out against live stdio servers or the stateful emulator."""
    judge_threshold: float = Field(default=0.7, ge=0.0, le=1.0)
    """Minimum mean judge score a trajectory needs to be kept."""
    llm_url: str | None = None
    """Legacy LLM judge endpoint (model name ``judge``, no key); prefer ``[synth.llm.judge]``."""
    narratives: bool = False
    """Also write the mid-training corpus (``corpus.jsonl``, seed 001) with every dataset."""
    narrative_min_judge: float = Field(default=0.7, ge=0.0, le=1.0)
    """Corpus judge gate: minimum mean judge score of a document's trajectory."""
    narrative_min_coherence: int = Field(default=4, ge=1, le=5)
    """Corpus coherence gate, 1-5."""
    llm: dict[str, LLMRoleSpec] = Field(default_factory=dict)
    """LLM endpoints per role (``[synth.llm.task_writer]``, ``policy``, ``emulator``, ``judge``); a role
    left out keeps its offline template."""

    @field_validator("llm")
    @classmethod
    def _known_roles(cls, roles: dict) -> dict:
        return check_llm_roles(roles)


class ToolDoc(_Frozen):
    """One tool's document in OpenAI function-calling form (pinned interface 10)."""

    server: str
    """Server (group) the tool belongs to; chains never cross servers."""
    name: str
    """Function name, unique within its server."""
    description: str
    """What the tool does (never empty for a stored doc)."""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    """JSON schema of the arguments (``type: object`` with ``properties`` and ``required``)."""
    output_fields: list[str] = Field(default_factory=list)
    """Names of the fields the tool's result carries (top level and inside result lists); may be empty."""
    read_only: bool | None = None
    """MCP ``readOnlyHint``: True for a tool that changes nothing; None when the server does not say."""
    destructive: bool | None = None
    """MCP ``destructiveHint``: True for a tool that may destroy data; None when the server does not say."""

    def to_openai(self) -> dict[str, Any]:
        """``{"type": "function", "function": {"name", "description", "parameters"}}``."""
        return {"type": "function",
                "function": {"name": self.name, "description": self.description, "parameters": self.parameters}}

    @property
    def required(self) -> list[str]:
        """Names of the required arguments."""
        return list(self.parameters.get("required", []))


class Recipe(SynthSpec):
    """The knobs of one grid point (pinned interface 6): what the dataset should look like.

    The grid's axis knobs (:data:`AXIS_KNOBS`) and a seed, on top of the config's ``[synth]`` settings
    (:class:`SynthSpec`, inherited: one declaration of each setting).
    """

    tool_diversity: int = Field(default=16, ge=1)
    """Distinct tools (across servers) the dataset may draw from, in tools."""
    task_count: int = Field(default=128, ge=1)
    """Tasks synthesised (trajectories before judge filtering), in tasks."""
    db_diversity: int = Field(default=2, ge=1)
    """Distinct database instances (seed x schema variant) per server, in databases."""
    repair_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    """Share of actions flagged non-derivable that are re-synthesised to be derivable, a fraction."""
    coverage_quota: float = Field(default=0.0, ge=0.0, le=0.25)
    """Minimum share of tasks of each dependency structure (chain, fan-in, fan-out, parallel), a fraction."""
    support_depth: int = Field(default=2, ge=1, le=8)
    """Maximum distance in assistant turns between a supporting observation and the action, in hops."""
    seed: int = 0
    """Seed of every random choice (same recipe and seed: byte-identical dataset)."""
    domains: tuple[str, ...] | None = None
    """Restrict to these bundled training domains; None uses all non-held-out ones."""
    include_heldout: bool = False
    """Allow held-out domains (only for evaluation sets; never for training data)."""

    def llm_roles(self) -> dict[str, LLMRoleSpec]:
        """The configured LLM roles, the legacy ``llm_url`` as the ``judge`` role when that is not set."""
        roles = dict(self.llm)
        if self.llm_url and "judge" not in roles:
            roles["judge"] = LLMRoleSpec(base_url=self.llm_url, model="judge", timeout_s=30.0)
        return roles

    @model_validator(mode="after")
    def _check(self) -> "Recipe":
        if self.domains is not None and len(self.domains) == 0:
            raise ValueError("domains must be None or a non-empty list of domain names")
        return self

    @classmethod
    def from_axes(cls, levels: dict[str, Any], seed: int = 0, **settings: Any) -> "Recipe":
        """A recipe from grid axis levels (``{axis: level}``) plus ``[synth]`` settings.

        Integer knobs are rounded to the nearest integer (design levels may be real). Keys that are neither
        recipe fields nor known ``[synth]`` settings raise :class:`~synth.errors.RecipeError`. Settings that
        only the config knows (``llm``) are ignored.

        Examples
        --------
        >>> Recipe.from_axes({"tool_diversity": 12.4, "repair_rate": 0.5}, seed=3).tool_diversity
        12
        """
        ignored = {"llm"} - set(cls.model_fields)
        data: dict[str, Any] = {}
        for key, value in {**levels, **settings}.items():
            if key in ignored:
                continue
            if key not in cls.model_fields or key == "seed":
                close = difflib.get_close_matches(key, list(cls.model_fields), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise RecipeError(f"unknown recipe knob {key!r}{hint}; expected one of "
                                  f"{', '.join(k for k in cls.model_fields if k != 'seed')}")
            if cls.model_fields[key].annotation is int and isinstance(value, float):
                if not math.isfinite(value):
                    raise RecipeError(f"recipe knob {key!r} must be a finite number, got {value!r}")
                value = int(round(value))
            data[key] = value
        try:
            return cls.model_validate({**data, "seed": seed})
        except ValidationError as err:
            e = err.errors()[0]
            loc = ".".join(str(x) for x in e["loc"]) or "recipe"
            got = e.get("input")
            shown = "" if isinstance(got, dict | list) else f" (got {got!r})"
            raise RecipeError(f"recipe knob {loc}: {e['msg'].removeprefix('Value error, ')}{shown}") from None

    def identity(self) -> dict[str, Any]:
        """The recipe as hashed into dataset ids: its JSON dump, without the knobs added later while they
        sit at their defaults (so the ids of older recipes do not change). Of the LLM roles only what
        shapes the data counts (``base_url``, ``model``, ``temperature``, ``max_tokens``)."""
        dump = self.model_dump(mode="json")
        for key, default in _LATER_DEFAULTS.items():
            if dump.get(key) == default:
                dump.pop(key, None)
        if "llm" in dump:
            dump["llm"] = {r: {k: v for k, v in spec.items() if k not in _LLM_OPERATIONAL}
                           for r, spec in dump["llm"].items()}
        return dump

    def axes(self) -> dict[str, float]:
        """The requested axis values ``{axis: value}``."""
        return {k: float(getattr(self, k)) for k in AXIS_KNOBS}


class Message(_Frozen):
    """One chat message; every message carries the same keys so Arrow sees one struct type."""

    role: Literal["system", "user", "assistant", "tool"]
    """Speaker."""
    content: str
    """Text ("" for an assistant turn that only calls tools)."""
    tool_calls: list[dict[str, Any]] | None = None
    """Assistant tool calls ``{"id", "type": "function", "function": {"name", "arguments": <JSON string>}}``."""
    tool_call_id: str | None = None
    """For a tool message: the id of the call it answers."""
    name: str | None = None
    """For a tool message: the tool's name."""


class TrajectoryMeta(_Frozen):
    """The ``meta`` JSON of a trajectory row (pinned interface 1, plus synthesis details).

    Extra keys are allowed: later stages annotate rows (probes/'s repair adds ``repair_ops``).
    """

    model_config = ConfigDict(frozen=True, extra="allow")

    task_id: str
    """Stable task identifier within the dataset."""
    server: str
    """Server (domain) the tools belong to."""
    db_id: str
    """Database instance, ``domain:sSEED:vVARIANT``."""
    chain: list[str]
    """Tools of the visible calls made, in call order (a retry of the same tool counted once); the plan's
    are in ``planned_chain``."""
    signature: str = ""
    """``server:tool>tool>...`` of ``chain`` (what was called, not what was planned)."""
    structure: Literal["chain", "fan-in", "fan-out", "parallel"]
    """Dependency structure of the calls made, from the values that flowed between them."""
    planned_chain: list[str] = Field(default_factory=list)
    """The plan's tool names in call order, side and hidden calls included."""
    nonderivable_calls: list[str]
    """Tool-call ids whose arguments are not derivable from visible history (defects still present)."""
    repaired_calls: list[str]
    """Tool-call ids that were flagged non-derivable and re-synthesised."""
    seed: int
    """Per-task seed."""
    support_depth: int = 0
    """Largest distance (assistant turns) between a supporting observation and an action; 0 if none."""
    injected_errors: list[str] = Field(default_factory=list)
    """Kinds of the tool errors injected, in order."""
    judge: dict[str, float] = Field(default_factory=dict)
    """Judge scores per dimension and ``mean``."""
    task_kind: Literal["chain", "server"] = "chain"
    """Chain-conditioned task or server-only task."""
    augmentation: list[str] = Field(default_factory=list)
    """Augmentations applied to the query (paraphrase, complication, persona)."""


class TrajectoryRow(_Frozen):
    """One row of ``train.jsonl`` (pinned interface 1)."""

    messages: list[Message]
    """The whole conversation."""
    tools: str
    """JSON string of the OpenAI tool schemas offered."""
    meta: str
    """JSON string of a :class:`TrajectoryMeta`."""


class RejectedRow(_Frozen):
    """One row of ``rejected.jsonl``: a task or trajectory that did not make ``train.jsonl``, and why."""

    task_id: str
    """The task's identifier (same numbering as accepted rows)."""
    server: str
    """Server (domain) of the task."""
    stage: Literal["task", "rollout", "judge", "filter"]
    """Where it was rejected: the task gates, the rollout (server or LLM failure), the judge, a final filter."""
    reasons: list[str]
    """Countable reasons (the keys of the manifest's ``rejections``), at least one."""
    detail: str | None = None
    """One line for people (e.g. the bad tool call or the endpoint's error), if any."""
    messages: list[Message] | None = None
    """The conversation, when one was produced."""
    judge: dict[str, float] = Field(default_factory=dict)
    """Judge scores per dimension and ``mean``, when the judge scored it."""
    query: str | None = None
    """The task's user request, when one was written (task-gate rejections included)."""
    gates: dict[str, float] = Field(default_factory=dict)
    """Task-gate scores it got (1-5 per gate of an LLM task writer), when gated."""


class JudgeVerdict(_Frozen):
    """A judge's verdict on one trajectory (fail-closed: no usable score means rejected)."""

    accepted: bool
    """Whether the trajectory is kept."""
    scores: dict[str, float]
    """Score per dimension in [0, 1] (empty when the judge failed)."""
    mean: float | None
    """Arithmetic mean of the seven dimensions; None when the judge failed."""
    reason: str | None = None
    """Why it was rejected (``judge_error: ...``, ``below_threshold``), None if accepted."""
    judge_failed: bool = False
    """True when the judge raised, timed out, or returned a missing/invalid score."""
    gate_mean: float | None = None
    """Mean of the gating dimensions (all but ``tool_call_planning``), compared with the threshold."""
    failed_rules: list[str] = Field(default_factory=list)
    """Hard rules the trajectory breaks (:mod:`synth.rules`); any one rejects it."""
    detail: str | None = None
    """The judge's error when it failed (one line)."""


class Quarantined(_Frozen):
    """A server or tool set aside at collection, with the reason."""

    server: str
    """Server name."""
    tool: str | None
    """Tool name, or None when the whole server is quarantined."""
    reason: str
    """Why (fewer than 3 tools, empty description, duplicate name, schema does not convert, crashed...)."""


class CollectedServer(_Frozen):
    """One server's collected tools."""

    server: str
    """Server name."""
    source: str
    """Command line, file, or ``bundled:<domain>``."""
    tools: list[ToolDoc]
    """Tools kept."""


class CollectReport(_Frozen):
    """Result of one collection."""

    servers: list[CollectedServer]
    """Servers kept, with their tools."""
    quarantined: list[Quarantined]
    """Servers and tools set aside, with reasons."""

    @property
    def n_tools(self) -> int:
        """Tools kept, over all servers."""
        return sum(len(s.tools) for s in self.servers)


class CorpusReport(_Frozen):
    """What the mid-training corpus kept and why it dropped the rest (the four gates of seed 001)."""

    documents: dict[str, int]
    """Documents kept, per kind (``ecosystem``, ``trajectory``, ``failure``)."""
    rejected: dict[str, int]
    """Documents dropped, per ``kind:reason`` (``not_executed``, ``not_derivable``, ``judge_below_threshold``,
    ``incoherent``, ``signature_cap``)."""
    approx_tokens: int
    """Tokens of the kept documents (words and punctuation marks, tokenizer-free)."""
    gates: dict[str, dict[str, int]] = Field(default_factory=dict)
    """Per gate (``executed``, ``judge``, ``derivable``, ``coherence``, ``near_duplicate``, ``signature_cap``,
    ``failure_cap``): documents that ``passed`` it and that it ``failed``, in gate order."""


class Manifest(_Frozen):
    """What a dataset was asked to be and what it measured to be (``DIR/manifest.json``)."""

    dataset_id: str
    """Content hash of the recipe and the synthesis version (same for same recipe and seed)."""
    synth_version: str
    """Version of the synthesis code's output format."""
    recipe: Recipe
    """The recipe built."""
    requested: dict[str, float]
    """Requested axis values ``{axis: value}``."""
    measured: dict[str, float]
    """Measured values: the axes, plus ``derivable_share``, ``error_rate``, ``mean_support_depth``, ..."""
    counts: dict[str, int]
    """Counts: tasks, chains sampled/kept, trajectories, accepted, rejected, messages, tool calls, tokens..."""
    structure_counts: dict[str, int]
    """Accepted trajectories per dependency structure."""
    chain_signatures: dict[str, int]
    """Accepted trajectories per chain signature (``server:tool>tool>...``)."""
    dropped_chains: dict[str, int]
    """Chains dropped by argument-flow verification or deduplication, per reason."""
    rejections: dict[str, int]
    """Trajectories rejected, per reason (judge errors included)."""
    judge_failure_rate: float
    """Share of judged trajectories whose judge failed (each such sample was rejected)."""
    judge_fallback_rate: float = 0.0
    """Share of an LLM judge's dimension replies whose score was read by the lenient fallback parse
    (``score: N`` instead of ``{"score": N}``); 0 for the rule judge."""
    roles: dict[str, str] = Field(default_factory=dict)
    """Implementation of each synthesis role (``task_writer``, ``policy``, ``emulator``, ``judge``):
    ``template`` / ``rules`` (offline) or ``llm``."""
    servers: list[str]
    """Servers the dataset draws from."""
    tools: list[str]
    """Tools offered (``server.tool``), sorted."""
    db_ids: list[str]
    """Database instances used, sorted."""
    files: dict[str, str]
    """Written files (name -> sha256 of contents)."""
    corpus: CorpusReport | None = None
    """The mid-training corpus's gate counts and size; None when ``recipe.narratives`` is off."""
    probe: dict[str, Any] | None = None
    """Filled by probes/ (measured groundedness, coverage, cost share); None until probed."""
    warnings: list[str] = Field(default_factory=list)
    """What the user should know: user-server tools left out, servers that contributed no task."""
    role_stats: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Per role, what it measured (task gates' mean scores, chain checks, judge fallbacks)."""
    llm: dict[str, LLMUsage] = Field(default_factory=dict)
    """LLM requests, tokens and dollars per role (empty when no role is configured); ``dollars_per_accepted``
    is the measured cost of one kept trajectory, the allocator's ``cost_per_unit`` for tasks."""
