"""Contracts of the eval package: tool calls, benchmark items, match results, benchmark metadata, and the
``[eval]`` settings (composed into :mod:`toolscale.config`).

Only pydantic and the standard library are imported here, so every other package can read
these types without pulling in torch.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["ToolCall", "ParsedOutput", "ChatRequest", "CallItem", "CodeItem", "MatchResult", "ContinuationScore",
           "BenchmarkInfo", "EnvItem", "Category", "CATEGORIES", "EvalSpec"]

Category = Literal["simple", "multiple", "parallel", "parallel_multiple", "irrelevance"]
CATEGORIES: tuple[str, ...] = ("simple", "multiple", "parallel", "parallel_multiple", "irrelevance")
"""BFCL's single-turn AST categories, in BFCL's order."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ToolCall(_Frozen):
    """One function call, as parsed from a model's text or built from a reference answer."""

    name: str
    """Function name, exactly as the model wrote it."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """Argument values by parameter name (JSON values)."""


class ParsedOutput(_Frozen):
    """What :func:`eval.parsing.parse_output` finds in one completion."""

    calls: list[ToolCall] = Field(default_factory=list)
    """Well-formed tool calls, in order."""
    content: str = ""
    """Text outside the ``<tool_call>`` blocks, stripped."""
    malformed: list[str] = Field(default_factory=list)
    """Why each malformed call attempt was rejected (one short reason each)."""

    @property
    def attempted(self) -> bool:
        """True when the completion tried to call a tool at all (well-formed or not)."""
        return bool(self.calls or self.malformed)


class ChatRequest(_Frozen):
    """What a backend is asked: a conversation so far and the tools offered (OpenAI formats)."""

    messages: list[dict[str, Any]]
    """OpenAI-format messages (pinned interface 1); for scoring, including the assistant turns to score."""
    tools: list[dict[str, Any]] | None = None
    """OpenAI tool schemas ``{"type": "function", "function": {...}}``, or None."""


class CallItem(_Frozen):
    """One single-step function-calling item, scored by AST match (BFCL semantics).

    ``functions`` are BFCL-style function descriptions ``{name, description, parameters}`` whose
    parameter types may be BFCL's (``dict``, ``float``, ``tuple``, ``any``...) or JSON schema's
    (``object``, ``number``...). ``ground_truth`` is BFCL's possible-answer form: one dict
    ``{function_name: {param: [allowed values...]}}`` per expected call, ``""`` among the allowed
    values meaning "may be omitted"; empty for irrelevance items (the right answer is no call).
    """

    id: str
    """Item id (BFCL's id, or ``heldout-<domain>-<n>``)."""
    category: Category
    """BFCL category; decides how calls are matched."""
    messages: list[dict[str, Any]]
    """The prompt: OpenAI-format messages, ending with the user's turn."""
    functions: list[dict[str, Any]]
    """Function descriptions offered to the model."""
    ground_truth: list[dict[str, dict[str, list[Any]]]] = Field(default_factory=list)
    """Possible answers, one ``{name: {param: [allowed...]}}`` per expected call."""
    source: str = "bfcl"
    """Where the item comes from (``bfcl``, or the held-out server's domain)."""


class CodeItem(CallItem):
    """One ``write_file`` step of a code episode (``code`` benchmarks): a call item whose answer is right when the
    module it writes passes the hidden tests of the functions written so far, run in the jail."""

    module: str
    """Module name the tests import."""
    path: str
    """The module's path in the workspace (the ``write_file`` path expected)."""
    prefix: str = ""
    """The module's text before this step (what an ``append`` adds to)."""
    tests: str
    """Hidden test source of the functions written so far."""
    dependent: bool = False
    """Whether the function written depends on another (its spec names that function's output)."""


class EnvItem(_Frozen):
    """One multi-turn episode of the ``heldout-env`` benchmark (a serialised ``synth.envs`` sample)."""

    id: str
    """Episode id."""
    sample: dict[str, Any]
    """The environment sample as ``EnvSample.model_dump(mode="json")``."""


class MatchResult(_Frozen):
    """The verdict on one item."""

    valid: bool
    """True when the completion is a correct answer (all calls matched, or no call for irrelevance)."""
    error: str = ""
    """Why not, in one line (empty when valid)."""
    error_type: str = ""
    """A short machine-readable error class, e.g. ``wrong_count``, ``value_error:string``."""
    field_match: float = 0.0
    """Share of expected fields matched, in [0, 1]: function names and argument values, best assignment."""


class ContinuationScore(_Frozen):
    """Log-likelihood of a given continuation under a model."""

    logprob: float
    """Sum of token log-probabilities of the continuation, in nats."""
    n_tokens: int
    """Number of continuation tokens scored."""
    n_bytes: int = 0
    """UTF-8 bytes of the scored continuation text as the chat template renders it (0: not counted)."""
    token_ids: list[int] = Field(default_factory=list)
    """The scored tokens' ids, in order (only when asked for: ``score(..., detail=True)``)."""
    token_logprobs: list[float] = Field(default_factory=list)
    """Their log-probabilities in nats, aligned with ``token_ids`` (only with ``detail``)."""


class BenchmarkInfo(_Frozen):
    """A registered benchmark's metadata."""

    name: str
    """Registry name, e.g. ``heldout-calls``."""
    version: str
    """Bumped whenever items or scoring change, so scores of different versions are never mixed."""
    higher_is_better: bool = True
    """Direction of the headline ``score``."""
    description: str
    """What one point of score means."""
    kind: Literal["calls", "env", "code"] = "calls"
    """``calls``: single-step AST-matched items; ``env``: multi-turn episodes in executable environments;
    ``code``: single-step ``write_file`` items matched by running hidden tests in the jail."""
    loader: str
    """``"module:function"`` returning the items, imported lazily."""
    aggregate: Literal["mean", "category_mean"] = "mean"
    """How item verdicts become ``score``: the mean over items, or the unweighted mean of per-category means."""
    metrics: dict[str, str] = Field(default_factory=dict)
    """Metric name -> what it measures (headline ``score`` included)."""
    digest: str | None = None
    """SHA-256 of the items this version stands for (:func:`eval.heldout.items_digest`); None: not pinned."""


class _Settings(BaseModel):
    """Base of the config sections declared here: frozen, no unknown keys, field docstrings as descriptions
    (the same settings as ``toolscale.config``'s base, which this module cannot import: the config imports it)."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


class EvalSpec(_Settings):
    """Benchmarks scored after training (eval/)."""

    benchmarks: list[str] = Field(default_factory=lambda: ["heldout-calls"])
    """Benchmark names from eval's registry; the first is the default for fit and allocate."""
    limit: int | None = Field(default=None, ge=1)
    """Items per benchmark (None = all)."""
    generate_limit: int | None = Field(default=None, ge=1)
    """Of those, items that are also generated and matched (accuracy, ``field_match``), the same
    stratified choice for every run; the rest are only scored (``loss``, ``bpb``, ``token_prob``).
    None generates every item."""
    validation: str | None = "valid-calls"
    """Benchmark that chooses among a run's checkpoints (and the learning-rate scan's rates): fixed items on
    databases disjoint from every test benchmark (an overlap is refused, naming how many items); None: no
    checkpoints are scored and each run is scored at its end only."""
    validation_limit: int | None = Field(default=None, ge=1)
    """Validation items scored per checkpoint (stratified, the same for every run); None: all."""
    checkpoints: int = Field(default=6, ge=0)
    """Checkpoints kept and scored per run, evenly spaced, the last at the final step: each on the validation
    benchmark, and the best one and the last on the test benchmarks (``checkpoint_tests``); 0: the final model
    only. A run with fewer steps than checkpoints is refused before it trains."""
    checkpoint_spacing: Literal["linear", "log"] = "linear"
    """How the kept checkpoints are spaced (:func:`toolscale.config.kept_steps`): ``linear``, evenly; ``log``, each
    at half the next one's step (for K = 6: 1/32, 1/16, 1/8, 1/4, 1/2 and all of training), for runs whose
    validation loss is lowest early: ``fit`` warns when many runs are best at their first kept checkpoint. A run
    too short for K distinct steps is refused before it trains."""
    checkpoint_tests: Literal["chosen", "all"] = "chosen"
    """Which checkpoints the test benchmarks score: ``chosen`` (the one best on validation, and the last),
    or ``all`` (every checkpoint: ``fit --target checkpoints`` on a test benchmark needs it; costs K test
    evaluations per run)."""
    backend: Literal["transformers", "openai", "vllm", "vllm-server"] = "transformers"
    """Generation backend: ``transformers`` (in the job; CUDA when there is a device), ``vllm-server`` (each job
    serves its model with ``vllm serve`` from the ``vllm`` environment and generates and scores through it),
    ``openai`` (a server you run, at ``endpoint``), ``vllm`` (in-process, where ``import vllm`` works)."""
    endpoint: str | None = None
    """OpenAI-compatible server URL for the ``openai`` backend (and ``vllm-server`` without ``vllm``)."""
    vllm: str | None = None
    """The separate vLLM environment (a folder with ``bin/vllm``, e.g. ``~/vllm-env``) the ``vllm-server``
    backend starts ``vllm serve`` from; vLLM pins its own torch, so it cannot share the training venv."""
    vllm_args: list[str] = Field(default_factory=list)
    """Extra ``vllm serve`` arguments, e.g. ``["--tensor-parallel-size", "4", "--max-model-len", "8192"]``."""
    vllm_startup_s: float = Field(default=1200.0, gt=0.0)
    """Seconds to wait for ``vllm serve`` to answer ``/health``."""
    concurrency: int = Field(default=32, ge=1)
    """Requests in flight to the server (``vllm-server``)."""

    @model_validator(mode="after")
    def _server(self) -> "EvalSpec":
        if self.backend == "vllm-server" and not (self.vllm or self.endpoint):
            raise ValueError("eval.backend 'vllm-server' needs eval.vllm (the vLLM environment, e.g. '~/vllm-env') "
                             "or eval.endpoint (a server already running)")
        return self
