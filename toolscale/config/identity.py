"""What a config changes about its runs: the run settings, their hash, and the keys two configs differ in."""

from __future__ import annotations

from typing import Any



from toolscale.config.experiment import ExperimentConfig

__all__ = ["OPERATIONAL_KEYS", "RUN_SECTIONS", "config_differences", "config_hash", "run_settings"]


RUN_SECTIONS: tuple[str, ...] = ("axes", "ladder", "design", "synth", "probe", "train", "eval", "lr_scan")
"""Config sections that change what a run trains or how it is scored (``[executor]`` and ``[cost]`` do not)."""

OPERATIONAL_KEYS: frozenset[str] = frozenset({
    "experiment.registry", "train.checkpoint_every_min", "train.keep_checkpoints", "eval.vllm", "eval.vllm_args",
    "eval.vllm_startup_s", "eval.concurrency", "eval.endpoint"})
"""Keys inside those sections that change where or how a run executes, not its result (a rung's resources too)."""

_RUNG_RESOURCES = frozenset({"gpus", "cpus", "mem_gb", "timeout_min", "micro_batch_size"})


def run_settings(config: dict[str, Any]) -> dict[str, Any]:
    """``{dotted key: value}`` of a config dump (``model_dump(mode="json")``) that changes runs: the
    :data:`RUN_SECTIONS` and the experiment's domain, without :data:`OPERATIONAL_KEYS` and rung resources."""
    flat: dict[str, Any] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(f"{prefix}.{k}" if prefix else str(k), v)
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            for i, v in enumerate(value):
                walk(f"{prefix}[{v.get('name', i)}]", v)
        else:
            flat[prefix] = value

    for section in RUN_SECTIONS:
        walk(section, config.get(section))
    flat["experiment.domain"] = (config.get("experiment") or {}).get("domain", "tools")
    return {k: v for k, v in flat.items()
            if k not in OPERATIONAL_KEYS and not (k.startswith("ladder[") and k.rsplit(".", 1)[-1] in _RUNG_RESOURCES)}


def config_hash(config: "ExperimentConfig | dict[str, Any]") -> str:
    """Content hash of a config's run settings (:func:`run_settings`): ``cfg-`` + 16 hex digits of SHA-256."""
    import hashlib
    import json

    dump = config if isinstance(config, dict) else config.model_dump(mode="json")
    text = json.dumps(run_settings(dump), sort_keys=True, separators=(",", ":"), default=str)
    return "cfg-" + hashlib.sha256(text.encode()).hexdigest()[:16]


def config_differences(stored: dict[str, Any], given: "ExperimentConfig | dict[str, Any]") -> list[str]:
    """Dotted keys whose run settings differ between a stored config dump and ``given``, sorted."""
    a = run_settings(stored)
    b = run_settings(given if isinstance(given, dict) else given.model_dump(mode="json"))
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
