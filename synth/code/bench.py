"""Items of the code domain's two fixed benchmarks (plain data; ``eval.code_bench`` scores them).

An item is one ``write_file`` step of a golden episode: the conversation up to that step (system turn,
request, the spec folder listed, the specs read, the earlier functions written) and the reference call
that writes the next function. Scoring is the tool domain's: bits per byte of the reference call on every
item, and on the generated items a pass rate, the share whose written module passes the hidden tests of
the functions written so far, in the jail.

``code-indist``
    tasks over the training APIs, in repositories no training run draws (seeds from
    :data:`BENCH_REPO_BASE`), 256 items;
``code-heldout-apis``
    tasks over the held-out APIs (:data:`synth.code.catalog.HELDOUT_APIS`) mixed with training ones,
    items only where the function written uses a held-out API, 200 items.

``code-valid``
    a validation split of the training APIs in repositories of neither test benchmark, 128 items.

Items longer than :data:`MAX_RENDERED_CHARS` rendered are left out, so each fits the proxies' context.

Both are deterministic: the same code version gives the same items (the version is bumped when they change).
"""

from __future__ import annotations

import functools
import json
from typing import Any

from synth.code.catalog import HELDOUT_APIS, api_order, heldout_apis, training_apis
from synth.code.models import CodeRecipe, CodeTask
from synth.code.render import chunk, module_path, repo_files, tests_source
from synth.code.tasks import TaskPlan, plan_task, repositories
from synth.code.trajectory import TOOLS_JSON, EpisodePlan, roll_out
from synth.code.workspace import TOOL_SCHEMAS, Workspace

__all__ = ["BENCH_SEED", "BENCH_REPO_BASE", "INDIST_ITEMS", "HELDOUT_ITEMS", "VALID_ITEMS", "MAX_RENDERED_CHARS", "code_items",
           "rendered_chars"]

BENCH_SEED = 20_260_202
"""Seed of the benchmarks' tasks (fixed: part of their definition)."""
BENCH_REPO_BASE = 9_000_000
"""Repository seeds of the benchmarks start here (plus 500, 600 and 700 for the three item sets, so their names
end in 500-799); training datasets draw ``run_seed * 1000 + i``, names ending in ``i``."""
INDIST_ITEMS = 256
"""Items of ``code-indist``."""
HELDOUT_ITEMS = 200
"""Items of ``code-heldout-apis``."""
VALID_ITEMS = 128
"""Items of ``code-valid`` (a validation split: chooses checkpoints and rates, never a test)."""
MAX_RENDERED_CHARS = 2700
"""Longest item (prompt and reference as the chat template renders them, in characters): about 1,000 tokens
of the proxies' 512-token vocabularies, so every item fits their 1,024-token context."""


def rendered_chars(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int:
    """Characters of ``messages`` and ``tools`` rendered by the chat template (``train.chat``, pinned interface 3),
    for the shapes code items have (a system turn, one call per assistant turn)."""
    head = "<|im_start|>system\n" + (messages[0]["content"] or "") + "\n\n# Tools\nYou may call functions. Their " \
        "signatures, one JSON object per line:\n<tools>\n" + "".join(
            json.dumps(t["function"], ensure_ascii=False) + "\n" for t in tools) + "</tools>\nCall a function with " \
        '<tool_call>{"name": <name>, "arguments": <JSON object>}</tool_call>.<|im_end|>\n'
    n = len(head)
    for m in messages[1:]:
        content = m["content"] or ""
        if m["role"] == "assistant":
            calls = "".join('<tool_call>{"name": ' + json.dumps(c["function"]["name"]) + ', "arguments": '
                            + json.dumps(json.loads(c["function"]["arguments"]), ensure_ascii=False) + "}</tool_call>"
                            for c in m["tool_calls"] or [])
            n += len("<|im_start|>assistant\n" + content + ("\n" if content and calls else "") + calls
                     + "<|im_end|>\n")
        elif m["role"] == "tool":
            n += len("<|im_start|>tool\n<tool_response>" + content + "</tool_response><|im_end|>\n")
        else:
            n += len(f"<|im_start|>{m['role']}\n" + content + "<|im_end|>\n")
    return n


def _items_of(task: CodeTask, only: set[str] | None, label: str) -> list[dict[str, Any]]:
    """One item per ``write_file`` of ``task``'s clean golden episode (every spec read just before its write)."""
    plan = EpisodePlan(task=task, depth=1, skipped=frozenset(), repaired=frozenset(), buggy=None, ask=task.seed % 4)
    ws = Workspace(repo_files(task), {module_path(task): (task.module, tests_source(task))},
                   suites=lambda s: _no_tests(s))
    ro = roll_out(plan, ws.call, _no_tests)
    out = []
    writes = [i for i, m in enumerate(ro.messages) if m["role"] == "assistant" and m["tool_calls"]
              and m["tool_calls"][0]["function"]["name"] == "write_file"]
    for k, pos in enumerate(writes):
        fn = task.functions[k]
        if only is not None and fn.api not in only:
            continue
        args = json.loads(ro.messages[pos]["tool_calls"][0]["function"]["arguments"])
        if rendered_chars(ro.messages[:pos + 1], TOOL_SCHEMAS) > MAX_RENDERED_CHARS:
            continue
        truth = {"path": [args["path"]], "content": [args["content"]]}
        if args.get("append"):
            truth["append"] = [True]
        out.append({"id": f"{label}-{task.task_id}-{fn.name}", "category": "simple",
                    "messages": ro.messages[:pos], "tools": json.loads(TOOLS_JSON),
                    "ground_truth": [{"write_file": truth}], "source": fn.api, "module": task.module,
                    "path": module_path(task), "prefix": "".join(chunk(task, i) for i in range(k)),
                    "tests": tests_source(task, k + 1), "dependent": fn.depends_on is not None})
    return out


def _no_tests(_suite: Any) -> Any:
    from synth.code.models import SuiteResult

    return SuiteResult(passed=1, total=1)  # item prompts stop before any run_tests: never shown


def _tasks(recipe: CodeRecipe, apis: list, start: int, label: str) -> Any:
    repos = repositories(recipe, BENCH_REPO_BASE + start)
    taken: dict[str, set[str]] = {r.name: set() for r in repos}
    i = 0
    while True:
        repo = repos[i % len(repos)]
        plan: TaskPlan = plan_task(i, recipe, apis, repo, taken[repo.name], task_id=f"{label}{i:04d}")
        if plan.task is not None:
            yield plan.task
        i += 1


@functools.lru_cache(maxsize=3)
def code_items(which: str) -> tuple[dict[str, Any], ...]:
    """The items of ``indist``, ``heldout`` or ``valid`` (cached; a tuple of plain dicts, see :func:`_items_of`)."""
    if which == "indist":
        apis = api_order(training_apis(), BENCH_SEED)
        recipe = CodeRecipe(tool_diversity=len(apis), task_count=1, db_diversity=8, spec_dependency=0.5,
                            defect_rate=0.0, error_rate=0.0, seed=BENCH_SEED)
        only, n, start = None, INDIST_ITEMS, 500
    elif which == "valid":
        apis = api_order(training_apis(), BENCH_SEED + 2)
        recipe = CodeRecipe(tool_diversity=len(apis), task_count=1, db_diversity=8, spec_dependency=0.5,
                            defect_rate=0.0, error_rate=0.0, seed=BENCH_SEED + 2)
        only, n, start = None, VALID_ITEMS, 700
    elif which == "heldout":
        train = api_order(training_apis(), BENCH_SEED + 1)[: len(HELDOUT_APIS)]
        apis = api_order(heldout_apis() + train, BENCH_SEED + 1)
        recipe = CodeRecipe(tool_diversity=len(apis), task_count=1, db_diversity=8, spec_dependency=0.5,
                            defect_rate=0.0, error_rate=0.0, seed=BENCH_SEED + 1, include_heldout=True)
        only, n, start = set(HELDOUT_APIS), HELDOUT_ITEMS, 600
    else:
        raise ValueError(f"unknown code benchmark {which!r}; known: indist, heldout, valid")
    items: list[dict[str, Any]] = []
    for task in _tasks(recipe, apis, start, which[0]):
        items += _items_of(task, only, f"code-{which}")
        if len(items) >= n:
            return tuple(items[:n])
    raise AssertionError("unreachable")  # pragma: no cover
