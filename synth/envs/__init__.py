"""Executable RL environments from QA dependency graphs (the ASTRA RL branch, seed 000 Q4).

Modules
-------
``models``      pydantic contracts: :class:`EnvSample` (one artifact row), sandbox limits and results, checks
``reward``      :func:`f1_reward` and how a call hits a target
``sandbox``     out-of-process execution of generated tool code under limits, in the jail
``jail``        the bubblewrap jail (namespaces, read-only root, uid 65534) and its fail-closed probe
``graph``       QA dependency DAGs and their four structural checks
``compile``     sub-question -> executable lookup tool (schema + source); merging with unique names
``validate``    replay of every golden call on the final serialized artifact (checks a-d)
``io``          ``envs.jsonl`` export / load (the file schema is documented there)
``generate``    QA graphs from the bundled servers' seeded databases
``distractors`` irrelevant tools in three similarity tiers (local TF-IDF similarity)
``build``       :func:`build_envs`: generate, compile, merge, add distractors, validate
``api``         :class:`Environment`: ``reset`` / ``step`` / ``reward`` for multi-turn episodes
``curriculum``  single-hop, multi-hop, then parallel-with-distractors phases for GRPO
``grpo``        a TRL GRPO reward function over these environments; what the trainer imports

Nothing here imports torch; submodules are imported on use (``from synth.envs.build import build_envs``).
"""

__all__: list[str] = []
