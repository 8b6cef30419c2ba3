"""Validation of the final serialized artifact: replay every golden call of every row in the sandbox.

:func:`check_file` reads an ``envs.jsonl`` exactly as a consumer would (:func:`synth.envs.io.iter_rows`, no
repair, no merge) and :func:`check_sample` rejects a row unless all of these hold:

- the row parses and its QA graph passes the structural checks (:func:`synth.envs.qa_graph.structural_problems`);
- **(a) tool names unique**: no two schemas and no two sources share a name, and schemas and sources pair up
  one to one (the public ASTRA release had two ``payment_processor`` schemas; a name-indexed merge silently
  kept one);
- **(b) each target answer produced by its tool's output**: the golden call, replayed in the sandbox, returns
  an output that contains the target answer (:func:`synth.envs.reward.answer_in_output`);
- **(c) deterministic output**: the batch of golden calls is run twice, in two fresh processes with different
  ``PYTHONHASHSEED``, and must give the same bytes (a random transaction id fails here);
- **(d) every target reachable**: its tool is offered, its arguments satisfy the tool's schema, and each
  argument value occurs in the prompt or in an output / answer of an ancestor node, so the golden path can be
  executed from the prompt within ``max_turns`` calls.

A sandbox failure (limit exceeded, crash, policy violation such as a network attempt) rejects the row; it never
passes it. All golden calls of a row go into ONE sandbox run (twice), so a row costs about two interpreter
start-ups.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Iterable
from typing import Any

import networkx as nx

from synth.envs.qa_graph import structural_problems, to_digraph, value_available
from synth.envs.io import iter_rows
from synth.envs.models import CheckResult, EnvSample, SandboxLimits
from synth.envs.reward import answer_in_output, canonical_answer
from synth.envs.sandbox import run_calls

__all__ = ["check_sample", "check_file", "summarize", "tool_problems", "arguments_problems", "golden_calls"]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_JSON_TYPES = {"string": str, "integer": int, "number": (int, float), "boolean": bool, "object": dict,
               "array": list}


def _schema_name(tool: Any) -> str | None:
    if not isinstance(tool, dict) or tool.get("type") != "function" or not isinstance(tool.get("function"), dict):
        return None
    name = tool["function"].get("name")
    return name if isinstance(name, str) else None


def tool_problems(sample: EnvSample) -> list[str]:
    """Check (a) and the shape of the tool schemas, sources and distractor list."""
    problems: list[str] = []
    names: list[str] = []
    for i, tool in enumerate(sample.tools):
        name = _schema_name(tool)
        if name is None:
            problems.append(f"tools[{i}]: not an OpenAI function schema {{type: function, function: {{name,...}}}}")
            continue
        names.append(name)
        if not _NAME.match(name):
            problems.append(f"tools[{i}]: invalid tool name {name!r} (expected [A-Za-z_][A-Za-z0-9_]*)")
        params = tool["function"].get("parameters")
        if not isinstance(params, dict) or params.get("type") != "object":
            problems.append(f"tool {name}: parameters must be a JSON schema of type 'object'")
    for name in sorted({n for n in names if names.count(n) > 1}):
        problems.append(f"(a) duplicate tool name {name!r}: {names.count(name)} schemas share it "
                        f"(a merge by name would silently keep only one)")
    src_names = [s.name for s in sample.tool_sources]
    for name in sorted({n for n in src_names if src_names.count(n) > 1}):
        problems.append(f"(a) duplicate tool name {name!r}: {src_names.count(name)} sources share it")
    for name in sorted(set(names) - set(src_names)):
        problems.append(f"(a) tool {name!r} has a schema but no source")
    for name in sorted(set(src_names) - set(names)):
        problems.append(f"(a) tool {name!r} has a source but no schema")
    target_tools = {t.tool for t in sample.targets}
    for d in sample.distractors:
        if d.name not in names:
            problems.append(f"distractor {d.name!r} is not among the tools")
        if d.name in target_tools:
            problems.append(f"distractor {d.name!r} is the tool of a target")
    return problems


def arguments_problems(schema: dict[str, Any], arguments: dict[str, Any]) -> list[str]:
    """Arguments against a tool's ``parameters`` schema: required keys, unknown keys, primitive types."""
    params = (schema.get("function") or {}).get("parameters") or {}
    props = params.get("properties") or {}
    out = []
    for key in params.get("required") or []:
        if key not in arguments:
            out.append(f"missing required argument {key!r}")
    for key, value in arguments.items():
        if key not in props:
            if params.get("additionalProperties", True) is False or props:
                out.append(f"unknown argument {key!r} (expected one of {sorted(props)})")
            continue
        kind = props[key].get("type") if isinstance(props[key], dict) else None
        py = _JSON_TYPES.get(kind) if isinstance(kind, str) else None
        if py is not None and (not isinstance(value, py) or (kind in ("integer", "number")
                                                             and isinstance(value, bool))):
            out.append(f"argument {key}={value!r} is not of type {kind}")
    return out


def golden_calls(sample: EnvSample) -> list[tuple[str, dict[str, Any], str]]:
    """``(node_id, call, answer)`` for every target, in a topological order of the graph."""
    g = to_digraph(sample.nodes)
    try:
        order = {nid: i for i, nid in enumerate(nx.topological_sort(g))}
    except nx.NetworkXUnfeasible:
        order = {}
    targets = sorted(sample.targets, key=lambda t: order.get(t.node, len(order)))
    return [(t.node, {"name": t.tool, "arguments": t.arguments}, t.answer) for t in targets]


def _leaves(text: str) -> list[str]:
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, ValueError):
        return [text.strip()]
    out: list[str] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
        else:
            out.append(canonical_answer(v))
    return out


def check_sample(sample: EnvSample, *, limits: SandboxLimits | None = None, row: int = 0) -> CheckResult:
    """Run every check on one parsed row; never raises on a defective sample (it is rejected with reasons)."""
    reasons = structural_problems(sample) + tool_problems(sample)
    schemas: dict[str, dict[str, Any]] = {}
    for tool in sample.tools:
        name = _schema_name(tool)
        if name is not None:
            schemas.setdefault(name, tool)
    sources: dict[str, str] = {}
    for s in sample.tool_sources:
        sources.setdefault(s.name, s.source)
    calls = golden_calls(sample)
    if not calls:
        reasons.append("(d) no targets: nothing to reward")
    if len(calls) > sample.max_turns:
        reasons.append(f"(d) {len(calls)} golden calls exceed max_turns={sample.max_turns}")
    for node, call, _ in calls:
        if call["name"] not in schemas:
            reasons.append(f"(d) target {node}: tool {call['name']!r} is not offered to the policy")
        else:
            for p in arguments_problems(schemas[call["name"]], call["arguments"]):
                reasons.append(f"(d) target {node}: {p}")
    runnable = [(n, c, a) for n, c, a in calls if c["name"] in sources]
    isolation = ""
    t0 = time.perf_counter()
    if runnable:
        batch = [c for _, c, _ in runnable]
        first = run_calls(sources, batch, limits=limits, hash_seed=0)
        isolation = first.isolation
        if first.failed:
            reasons.append(f"sandbox: {first.reason()}")
        else:
            second = run_calls(sources, batch, limits=limits, hash_seed=1)
            if second.failed:
                reasons.append(f"sandbox (second run): {second.reason()}")
            else:
                reasons += _replay_problems(sample, runnable, first.calls, second.calls)
    return CheckResult(row=row, env_id=sample.env_id, ok=not reasons, reasons=reasons, isolation=isolation,
                       replay_s=time.perf_counter() - t0)


def _replay_problems(sample: EnvSample, runnable, run1, run2) -> list[str]:
    reasons: list[str] = []
    g = to_digraph(sample.nodes)
    outputs: dict[str, str] = {}
    for (node, call, answer), a, b in zip(runnable, run1, run2, strict=True):
        name = call["name"]
        if a.model_dump_json() != b.model_dump_json():
            reasons.append(f"(c) target {node}: {name} is not deterministic: run 1 gave {a.output[:80]!r}, "
                           f"run 2 gave {b.output[:80]!r}")
        if not a.ok:
            reasons.append(f"(b) target {node}: {name} failed: {a.output[:160]}")
        elif not answer_in_output(answer, a.output):
            reasons.append(f"(b) target {node}: output of {name} does not contain the target answer "
                           f"{answer!r} (got {a.output[:120]!r})")
        outputs[node] = a.output
    for node, call, _ in runnable:
        if node not in g:
            continue
        known: list[str] = []
        for anc in nx.ancestors(g, node):
            if anc in outputs:
                known += _leaves(outputs[anc])
            ans = g.nodes[anc]["node"].answer
            if ans is not None:
                known.append(canonical_answer(ans))
        for key, value in call["arguments"].items():
            if not value_available(value, sample.prompt, known):
                reasons.append(f"(d) target {node}: argument {key}={value!r} is obtainable neither from the "
                               f"prompt nor from an earlier tool output")
    return reasons


def check_file(path: str | os.PathLike, *, limits: SandboxLimits | None = None,
               progress: Callable[[int], None] | None = None) -> list[CheckResult]:
    """Check every row of an ``envs.jsonl`` artifact; a bad row is rejected and the batch goes on."""
    results: list[CheckResult] = []
    for i, sample, problem in iter_rows(path):
        if sample is None:
            results.append(CheckResult(row=i, env_id=_guess_id(path, i), ok=False, reasons=[problem]))
        else:
            results.append(check_sample(sample, limits=limits, row=i))
        if progress:
            progress(i)
    return results


def _guess_id(path: str | os.PathLike, row: int) -> str:
    try:
        with open(path, encoding="utf-8") as fh:
            for i, line in enumerate(fh, start=1):
                if i == row:
                    obj = json.loads(line)
                    return str(obj.get("env_id", "?")) if isinstance(obj, dict) else "?"
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        pass
    return "?"


def summarize(results: Iterable[CheckResult]) -> dict[str, Any]:
    """Counts of passed and rejected rows and the isolation modes seen."""
    results = list(results)
    return {"rows": len(results), "passed": sum(r.ok for r in results),
            "rejected": sum(not r.ok for r in results),
            "isolation": sorted({r.isolation for r in results if r.isolation})}
