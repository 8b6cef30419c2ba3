"""synth: the trajectory factory (ASTRA's SFT branch) driven by the grid's data knobs.

Pipeline (one grid point): bundled MCP servers (:mod:`synth.servers`: seeded databases, pure tool logic,
thin stdio wrappers) and collected tool documents (:mod:`synth.collect`) -> tool transition graphs
(:mod:`synth.graph`) -> random-walk chains with argument-flow verification and signature dedup
(:mod:`synth.plans`) -> tasks with seeded augmentation (:mod:`synth.tasks`) -> scripted rollouts with
injected errors and recovery (:mod:`synth.rollout`, backends in :mod:`synth.backends` and
:mod:`synth.live`) -> the fail-closed seven-dimension judge (:mod:`synth.judge`) -> ``train.jsonl`` and
``manifest.json`` (:func:`synth.dataset.build_dataset`). The RL branch lives in :mod:`synth.envs`.

Importing ``synth`` is cheap: no torch, no MCP SDK until a live server is used.
"""
