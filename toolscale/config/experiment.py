"""The experiment config: every section composed, the domains, parsing and loading."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from toolscale.errors import ConfigError

from toolscale.config.base import _Frozen
from toolscale.config.ladder import AxisSpec, DesignSpec, ModelSize
from toolscale.config.stages import EvalSpec, LRScanSpec, ProbeSpec, STAGE_AXES, SynthSpec, TrainSpec
from toolscale.config.execution import AllocateSpec, CostSpec, ExecutorSpec

__all__ = ["DEFAULT_AXES", "DOMAINS", "DOMAIN_BENCHMARKS", "DOMAIN_KNOBS", "DOMAIN_VALIDATION", "ExperimentConfig", "ExperimentSpec", "TOOL_ONLY_SYNTH", "format_validation_error", "load_config", "parse_config", "read_toml"]


class ExperimentSpec(_Frozen):
    """Identity and bookkeeping of the experiment."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    """Experiment name, unique in the registry."""
    registry: str = "./toolscale.duckdb"
    """Path of the DuckDB registry file."""
    seeds: list[int] = Field(default_factory=lambda: [0], min_length=1)
    """Base seeds; replicates draw from these."""
    budget_unit: Literal["usd", "gpu_hours"] = "usd"
    """Unit of every cost and budget."""
    target_model_size: str | None = None
    """Ladder rung the experiment is for: allocations plan for it, the probe's cost is a share of its
    training FLOPs (None = the largest rung)."""
    domain: Literal["tools", "code"] = "tools"
    """Task domain of the data (``synth.domains``): ``tools`` (tool calls over MCP servers) or ``code`` (code
    agents writing Python modules from specs; ``tool_diversity`` counts library APIs, ``db_diversity``
    repositories, ``spec_dependency`` is its quality axis). Every later stage is the same."""


class ExperimentConfig(_Frozen):
    """A whole experiment: what to vary, what to train, where to run, what it costs."""

    experiment: ExperimentSpec
    """Identity and bookkeeping."""
    axes: list[AxisSpec]
    """Data axes (at least one)."""
    ladder: list[ModelSize] = Field(default_factory=list)
    """Model sizes (at least one to design, train or allocate; a config for imported runs may have none,
    their model sizes being parameter counts)."""
    design: DesignSpec = Field(default_factory=DesignSpec)
    """Experimental design."""
    synth: SynthSpec = Field(default_factory=SynthSpec)
    """Synthesis."""
    probe: ProbeSpec = Field(default_factory=ProbeSpec)
    """Groundedness probe."""
    train: TrainSpec = Field(default_factory=TrainSpec)
    """Training."""
    eval: EvalSpec = Field(default_factory=EvalSpec)
    """Evaluation."""
    executor: ExecutorSpec = Field(default_factory=ExecutorSpec)
    """Executor."""
    cost: CostSpec = Field(default_factory=CostSpec)
    """Compute cost."""
    allocate: AllocateSpec = Field(default_factory=AllocateSpec)
    """Allocation limits."""
    lr_scan: LRScanSpec | None = None
    """Learning-rate scan whose rule sets every rung's rate (``toolscale lr-scan``); None uses each rung's own."""

    @field_validator("axes")
    @classmethod
    def _unique_axes(cls, axes: list[AxisSpec]) -> list[AxisSpec]:
        if not axes:
            raise ValueError("at least one axis is required")
        names = [a.name for a in axes]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"duplicate axis names: {', '.join(dup)}")
        return axes

    @field_validator("ladder")
    @classmethod
    def _unique_sizes(cls, ladder: list[ModelSize]) -> list[ModelSize]:
        names = [m.name for m in ladder]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"duplicate model size names: {', '.join(dup)}")
        for small, big in zip(ladder, ladder[1:]):
            if big.approx_params < small.approx_params:
                raise ValueError(f"the ladder must list rungs from smallest to largest parameter count N; "
                                 f"{big.name!r} (N = {big.approx_params:.4g}) comes after {small.name!r} "
                                 f"(N = {small.approx_params:.4g})")
        return ladder

    @model_validator(mode="after")
    def _cross_checks(self) -> "ExperimentConfig":
        sizes = [m.name for m in self.ladder]
        target = self.experiment.target_model_size
        if target is not None and target not in sizes:
            raise ValueError(f"experiment.target_model_size {target!r} is not in the ladder ({', '.join(sizes)})")
        axes = [a.name for a in self.axes]
        for a in self.axes:
            if a.cost_scales_with is not None and (a.cost_scales_with not in axes or a.cost_scales_with == a.name):
                raise ValueError(f"axis {a.name!r}: cost_scales_with must name another axis, got "
                                 f"{a.cost_scales_with!r}; known: {', '.join(axes)}")
        if self.lr_scan is not None:
            unknown = [r for r in self.lr_scan.rungs if r not in sizes]
            if unknown:
                raise ValueError(f"lr_scan.rungs names unknown rungs {unknown}; known: {', '.join(sizes)}")
        if self.train.tokenizer == "shared":
            vocab = {m.vocab_size for m in self.ladder if not m.pretrained}
            if len(vocab) > 1:
                raise ValueError(f"train.tokenizer = 'shared' needs one vocab_size for every proxy rung, got "
                                 f"{sorted(vocab)}")
        for a in self.axes:
            if a.kind == "stage" and a.name not in STAGE_AXES:
                raise ValueError(f"axis {a.name!r} has kind 'stage', which only {', '.join(STAGE_AXES)} can have")
            if a.name in STAGE_AXES and a.kind != "stage":
                raise ValueError(f"axis {a.name!r} must have kind 'stage'")
            if a.name in STAGE_AXES and STAGE_AXES[a.name] not in self.train.stages:
                raise ValueError(f"axis {a.name!r} needs {STAGE_AXES[a.name]!r} in train.stages")
        midtrain = "midtrain" in self.train.stages
        if midtrain and self.train.midtrain_corpus is None and not self.synth.narratives:
            raise ValueError("stage 'midtrain' has no corpus: set synth.narratives = true (each run's synthesised "
                             "corpus.jsonl) or train.midtrain_corpus = a JSONL file of {\"text\"} documents")
        gpu_s = self.cost.eval_gpu_s_per_run > 0 or self.cost.synth_gpu_s_per_task > 0
        if gpu_s and self.experiment.budget_unit == "usd" and self.cost.gpu_hour_usd is None:
            raise ValueError("cost.eval_gpu_s_per_run / synth_gpu_s_per_task are GPU-seconds: set cost.gpu_hour_usd "
                             "(the price of a GPU-hour) to charge them in usd")
        bad = [f for f in self.design.foldover if f not in axes]
        if bad:
            raise ValueError(f"design.foldover names unknown axes {bad}; known: {', '.join(axes)}")
        if self.experiment.domain == "code":
            _check_code_domain(self)
        return self

    @model_validator(mode="before")
    @classmethod
    def _domain_benchmarks(cls, data: Any) -> Any:
        # a code experiment without [eval].benchmarks (or .validation) scores the code domain's benchmarks
        if isinstance(data, dict) and isinstance(data.get("experiment"), dict) \
                and data["experiment"].get("domain") == "code":
            ev = data.get("eval")
            if ev is None or isinstance(ev, dict):
                ev = dict(ev or {})
                ev.setdefault("benchmarks", list(DOMAIN_BENCHMARKS["code"]))
                ev.setdefault("validation", DOMAIN_VALIDATION["code"])
                data = {**data, "eval": ev}
        return data

    def axis(self, name: str) -> AxisSpec:
        """The axis called ``name``; ConfigError listing the known ones otherwise."""
        for a in self.axes:
            if a.name == name:
                return a
        raise ConfigError(f"unknown axis {name!r}; known: {', '.join(a.name for a in self.axes)}")

    def model_size(self, name: str) -> ModelSize:
        """The ladder rung called ``name``; ConfigError listing the known ones otherwise."""
        for m in self.ladder:
            if m.name == name:
                return m
        raise ConfigError(f"unknown model size {name!r}; known: {', '.join(m.name for m in self.ladder)}")

    @property
    def target_size(self) -> ModelSize:
        """The rung the experiment is for: ``experiment.target_model_size``, else the largest rung.

        The ladder is validated to run from smallest to largest N, so the largest is the
        last (on a tie in N, the last of the tied rungs). Allocation, the probe's cost
        budget and the pipeline all use this one rule.
        """
        name = self.experiment.target_model_size
        if not name and not self.ladder:
            raise ConfigError("the config has no [[ladder]]: add model sizes (or experiment.target_model_size) "
                              "to plan for a target size")
        return self.model_size(name) if name else self.ladder[-1]

    def require_ladder(self, purpose: str) -> list[ModelSize]:
        """The ladder; ConfigError naming ``purpose`` when the config has none (configs for imported runs)."""
        if not self.ladder:
            raise ConfigError(f"{purpose} needs model sizes: the config has no [[ladder]] (only imported runs "
                              "can do without one)")
        return self.ladder


DEFAULT_AXES: tuple[str, ...] = (
    "tool_diversity",
    "task_count",
    "db_diversity",
    "repair_rate",
    "coverage_quota",
    "support_depth",
)

DOMAINS: tuple[str, ...] = ("tools", "code")
"""Task domains (``[experiment] domain``; ``synth.domains``)."""

DOMAIN_KNOBS: dict[str, tuple[str, ...]] = {
    "tools": DEFAULT_AXES,
    "code": ("tool_diversity", "task_count", "db_diversity", "spec_dependency", "repair_rate", "support_depth"),
}
"""Recipe knobs each domain takes as data axes (``synth.models.AXIS_KNOBS``, ``synth.code.models.CODE_AXIS_KNOBS``)."""

DOMAIN_BENCHMARKS: dict[str, tuple[str, ...]] = {
    "tools": ("indist-calls", "heldout-servers"),
    "code": ("code-indist", "code-heldout-apis"),
}
"""Each domain's two fixed benchmarks: in-distribution, then held out (servers, APIs)."""

DOMAIN_VALIDATION: dict[str, str] = {"tools": "valid-calls", "code": "code-valid"}
"""Each domain's validation benchmark (``[eval] validation``): it chooses checkpoints and learning rates."""

TOOL_ONLY_SYNTH: dict[str, str] = {
    "servers": "MCP servers for tool synthesis",
    "arg_values": "argument values for the user's MCP servers",
    "heldout_servers": "bundled MCP servers held out for evaluation",
    "min_tools": "the tool-count pruning of collected MCP servers",
    "transform_rate": "transformed tool-call arguments",
    "max_chain_len": "the length of tool chains",
    "max_turns": "turns of an LLM tool-calling policy",
    "judge_threshold": "the trajectory judge of tool calls",
    "llm_url": "the LLM judge of tool calls",
    "llm": "LLM roles of tool synthesis",
    "narratives": "the mid-training corpus of tool ecosystems",
    "narrative_min_judge": "the mid-training corpus of tool ecosystems",
    "narrative_min_coherence": "the mid-training corpus of tool ecosystems",
}
"""``[synth]`` settings only the tool domain uses, with what they are for: a code experiment that sets one to other
than its default is refused, naming it."""


def _check_code_domain(cfg: "ExperimentConfig") -> None:
    """Refuse settings a code experiment cannot use: one line naming the setting."""
    for name in sorted(n for n in TOOL_ONLY_SYNTH if getattr(cfg.synth, n) !=
                       SynthSpec.model_fields[n].get_default(call_default_factory=True)):
        raise ValueError(f"synth.{name} is a tool-domain setting ({TOOL_ONLY_SYNTH[name]}); experiment.domain = "
                         f"'code' does not use it: remove it")
    knobs = DOMAIN_KNOBS["code"]
    for a in cfg.axes:
        if a.kind != "stage" and a.name not in knobs:
            raise ValueError(f"axis {a.name!r} is not a knob of the code domain; its knobs: {', '.join(knobs)}")
    if "grpo" in cfg.train.stages:
        raise ValueError("train.stages 'grpo' trains on the tool domain's environments; experiment.domain = 'code' "
                         "has no GRPO stage yet (its RL environments are synth.code.env)")


def format_validation_error(err: ValidationError, source: str = "config") -> list[str]:
    """One line per problem: ``source: field.path: message (got value)``."""
    lines = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"]) or "(top level)"
        msg = e["msg"].removeprefix("Value error, ")
        got = e.get("input")
        shown = "" if isinstance(got, dict | list) or got is None else f" (got {got!r})"
        lines.append(f"{source}: {loc}: {msg}{shown}")
    return lines


def parse_config(data: dict, source: str = "config") -> ExperimentConfig:
    """Validate a config mapping; ConfigError whose message lists every problem, one per line."""
    try:
        return ExperimentConfig.model_validate(data)
    except ValidationError as err:
        raise ConfigError("\n".join(format_validation_error(err, source))) from None


def read_toml(path: str | Path, *, kind: str, error: type[Exception] = ConfigError, hint: str = "") -> dict:
    """The TOML file at ``path`` as a dict; ``error`` naming the file if it is missing or not TOML.

    ``kind`` names the file in messages (``config``, ``recipe``, ``truth``); ``hint`` is appended
    to the not-found message (e.g. how to write one).
    """
    p = Path(path)
    if p.is_dir():
        raise error(f"{kind} {p} is a folder; give the {kind} file (TOML) in it")
    if not p.is_file():
        raise error(f"{kind} file not found: {p}{hint}")
    try:
        return tomllib.loads(p.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as err:
        raise error(f"{p}: not valid TOML: {err}") from None
    except RecursionError:
        raise error(f"{p}: not valid TOML here: arrays or tables nested too deeply") from None
    except UnicodeDecodeError as err:
        raise error(f"{p}: not valid TOML: not UTF-8 text ({err.reason} at byte {err.start})") from None


def load_config(path: str | Path) -> ExperimentConfig:
    """Read and validate a TOML config; ConfigError naming the file and each bad field.

    Files the config names for training (``train.midtrain_corpus``, ``train.grpo_envs``) must exist, and
    the corpus must be JSONL with a non-empty string ``text`` on every line, so a bad one fails here,
    before anything runs.
    """
    cfg = parse_config(read_toml(path, kind="config"), source=str(path))
    _check_train_files(cfg.train, str(path))
    return cfg


def _check_train_files(train: TrainSpec, source: str) -> None:
    import json

    if train.grpo_envs is not None and not Path(train.grpo_envs).is_file():
        raise ConfigError(f"{source}: train.grpo_envs {train.grpo_envs!r} does not exist "
                          "(write one with `toolscale envs build`)")
    if train.midtrain_corpus is None:
        return
    corpus = Path(train.midtrain_corpus)
    if not corpus.is_file():
        raise ConfigError(f"{source}: train.midtrain_corpus {str(corpus)!r} does not exist")
    with corpus.open(encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                doc = json.loads(line)
            except ValueError:
                doc = None
            if not isinstance(doc, dict) or not isinstance(doc.get("text"), str) or not doc["text"].strip():
                raise ConfigError(f"{source}: train.midtrain_corpus {str(corpus)!r} line {n} is not a JSON object "
                                  "with a non-empty string 'text'")
