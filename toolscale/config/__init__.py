"""The experiment config: one frozen pydantic model, loaded from TOML.

Every stage reads its section from here and nothing else; the config is validated
once (``load_config``) and then trusted. This package declares the experiment, the axes and
the ladder; each stage's section is declared in that stage's ``models.py`` and composed here
(:mod:`toolscale.config.stages` re-exports them). Sections:

- ``[experiment]``: name, registry path, seeds, budget unit, target model size.
- ``[[axes]]``: the data axes of the scaling law (diversity or quality knobs).
- ``[[ladder]]``: the model-size ladder (built from config, or ``pretrained``).
- ``[design]``: the experimental design over axes x ladder (grid/).
- ``[synth]``: MCP servers and synthesis settings (``synth.models.SynthSpec``).
- ``[probe]``: the groundedness probe (``probes.models.ProbeSpec``).
- ``[train]`` / ``[lr_scan]`` / ``[eval]``: training, learning-rate scan and benchmark settings
  (``train.models.TrainSpec``, ``train.models.LRScanSpec``, ``eval.models.EvalSpec``).
- ``[executor]``: local, debug or slurm, with SLURM pass-through (slurm/).
- ``[cost]``: training-compute cost in the budget unit (allocator/).
"""

from __future__ import annotations

from toolscale.config.base import (  # noqa: F401
    BUDGET_UNITS,
    CHECKPOINT_SPACINGS,
    COPY_MIN_HEAD,
    COPY_MIN_LAYERS,
    FLOPS_PER_PARAM_TOKEN,
    kept_steps,
    min_kept_steps,
    model_flops,
    training_flops,
)
from toolscale.config.ladder import (  # noqa: F401
    AxisSpec,
    DesignSpec,
    ModelSize,
)
from toolscale.config.stages import (  # noqa: F401
    EvalSpec,
    LLMRoleSpec,
    LLM_ROLES,
    LRScanSpec,
    PROBE_KINDS,
    ProbeSpec,
    STAGES,
    STAGE_AXES,
    SynthSpec,
    TrainSpec,
    UserServer,
    check_llm_roles,
)
from toolscale.config.execution import (  # noqa: F401
    AllocateSpec,
    CostSpec,
    ExecutorSpec,
    SlurmSpec,
)
from toolscale.config.experiment import (  # noqa: F401
    DEFAULT_AXES,
    DOMAINS,
    DOMAIN_BENCHMARKS,
    DOMAIN_KNOBS,
    DOMAIN_VALIDATION,
    ExperimentConfig,
    ExperimentSpec,
    TOOL_ONLY_SYNTH,
    format_validation_error,
    load_config,
    parse_config,
    read_toml,
)
from toolscale.config.identity import (  # noqa: F401
    OPERATIONAL_KEYS,
    RUN_SECTIONS,
    config_differences,
    config_hash,
    run_settings,
)
from toolscale.errors import ConfigError  # noqa: F401  (re-exported: configs raise it)

__all__ = [
    "AxisSpec",
    "BUDGET_UNITS",
    "CHECKPOINT_SPACINGS",
    "COPY_MIN_HEAD",
    "COPY_MIN_LAYERS",
    "AllocateSpec",
    "CostSpec",
    "DEFAULT_AXES",
    "DOMAINS",
    "DOMAIN_BENCHMARKS",
    "DOMAIN_KNOBS",
    "DOMAIN_VALIDATION",
    "DesignSpec",
    "EvalSpec",
    "ExecutorSpec",
    "ExperimentConfig",
    "ExperimentSpec",
    "FLOPS_PER_PARAM_TOKEN",
    "LLMRoleSpec",
    "LLM_ROLES",
    "LRScanSpec",
    "ModelSize",
    "OPERATIONAL_KEYS",
    "PROBE_KINDS",
    "ProbeSpec",
    "RUN_SECTIONS",
    "STAGES",
    "STAGE_AXES",
    "SlurmSpec",
    "SynthSpec",
    "TOOL_ONLY_SYNTH",
    "TrainSpec",
    "UserServer",
    "check_llm_roles",
    "config_differences",
    "config_hash",
    "format_validation_error",
    "kept_steps",
    "load_config",
    "min_kept_steps",
    "model_flops",
    "parse_config",
    "read_toml",
    "run_settings",
    "training_flops",
    "ConfigError",
]
