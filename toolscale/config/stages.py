"""Each stage's settings, composed into the config: every section's model is declared in its package's
``models.py`` (the contracts, which import only pydantic) and re-exported here.

- ``[synth]``: :class:`synth.models.SynthSpec` (the settings of ``synth.models.Recipe``, one model), with the
  LLM roles (:class:`~synth.models.LLMRoleSpec`, :data:`~synth.models.LLM_ROLES`) and your servers
  (:class:`~synth.models.UserServer`);
- ``[probe]``: :class:`probes.models.ProbeSpec` (:data:`~probes.models.PROBE_KINDS`);
- ``[train]`` and ``[lr_scan]``: :class:`train.models.TrainSpec` (:data:`~train.models.STAGES`,
  :data:`~train.models.STAGE_AXES`) and :class:`train.models.LRScanSpec`;
- ``[eval]``: :class:`eval.models.EvalSpec`.

This is the config's one import from the stage packages (listed in pyproject.toml's layers contract); those
models import nothing from ``toolscale.config``, so either side may be imported first.
"""

from __future__ import annotations

from eval.models import EvalSpec
from probes.models import PROBE_KINDS, ProbeSpec
from synth.models import LLM_ROLES, LLMRoleSpec, SynthSpec, UserServer, check_llm_roles
from train.models import LRScanSpec, STAGE_AXES, STAGES, TrainSpec

__all__ = ["EvalSpec", "LLMRoleSpec", "LLM_ROLES", "LRScanSpec", "PROBE_KINDS", "ProbeSpec", "STAGES", "STAGE_AXES", "SynthSpec", "TrainSpec", "UserServer", "check_llm_roles"]
