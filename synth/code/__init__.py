"""The code domain: small multi-function Python modules with natural-language specs and a spec dependency graph.

A peer of the tool domain that reuses every later stage (probes, training, eval, grid, fit, allocate):

- :mod:`synth.code.catalog`: the library APIs (the domain's "tools") with trusted references;
- :mod:`synth.code.tasks`: the task factory (``tool_diversity`` APIs, ``task_count`` modules,
  ``db_diversity`` repositories, ``spec_dependency`` share of dependent specs; cyclic graphs refused);
- :mod:`synth.code.render`: specs, module versions and hidden tests as text;
- :mod:`synth.code.runner`: hidden tests run in the bubblewrap jail, batched;
- :mod:`synth.code.workspace` / :mod:`synth.code.server` / :mod:`synth.code.live`: the four workspace tools,
  in-process and as a real stdio MCP server;
- :mod:`synth.code.trajectory` / :mod:`synth.code.dataset`: golden trajectories and the dataset builder;
- :mod:`synth.code.env`: the RL environments (reward: share of tests passed, F1-style against calls made);
- :mod:`synth.code.bench`: the items of the two fixed benchmarks.
"""

__all__ = ["catalog", "models", "tasks", "render", "runner", "workspace", "server", "live", "trajectory", "dataset",
           "env", "bench"]
