"""synth: the trajectory factory (ASTRA's SFT branch) driven by the grid's data knobs.

Pipeline (one grid point): bundled MCP servers (:mod:`synth.servers`: seeded databases, pure tool logic,
thin stdio wrappers) and collected tool documents (:mod:`synth.collect`) -> tool transition graphs
(:mod:`synth.tool_graph`) -> random-walk chains with argument-flow verification and signature dedup
(:mod:`synth.plans`) -> tasks with seeded augmentation (:mod:`synth.tasks`) -> scripted rollouts with
injected errors and recovery (:mod:`synth.rollout`, backends in :mod:`synth.backends` and
:mod:`synth.live`) -> the fail-closed seven-dimension judge (:mod:`synth.judge`) -> ``train.jsonl`` and
``manifest.json`` (:func:`synth.dataset.build_dataset`). The RL branch lives in :mod:`synth.envs`.

Importing ``synth`` is cheap: no torch, no MCP SDK until a live server is used.
"""

from toolscale.exports import lazy_exports

_EXPORTS: dict[str, str] = {
    'CURRICULUM': 'synth.envs.curriculum',
    'Environment': 'synth.envs.api',
    'FLAT': 'synth.envs.curriculum',
    'HELDOUT_DOMAINS': 'synth.servers.db',
    'LLMClient': 'synth.llm.client',
    'LLMEndpointError': 'synth.errors',
    'LLMReplyError': 'synth.errors',
    'SYSTEM_PROMPT': 'synth.envs.rl_reward',
    'Suite': 'synth.code.runner',
    'build_curriculum': 'synth.envs.curriculum',
    'build_dataset': 'synth.dataset',
    'build_envs': 'synth.envs.build',
    'code_items': 'synth.code.bench',
    'dump_envs': 'synth.envs.io',
    'extract_tool_calls': 'synth.envs.rl_reward',
    'grpo_rows': 'synth.envs.rl_reward',
    'load_envs': 'synth.envs.io',
    'make_reward_fn': 'synth.envs.rl_reward',
    'partial_credit': 'synth.envs.reward',
    'phase_of': 'synth.envs.curriculum',
    'phases_of': 'synth.envs.curriculum',
    'run_suites': 'synth.code.runner',
    'sft_system_prompt': 'synth.envs.rl_reward',
    'system_prompt': 'synth.rollout',
}
"""Public names and the modules that define them: other packages import these (or ``synth.models``)."""

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
