"""Knobs -> dataset for the code domain: golden code trajectories whose hidden tests pass in the jail.

:func:`build_code_dataset` writes ``DIR/train.jsonl`` (one trajectory row per kept task, pinned interface
1: ``messages``, ``tools``, ``meta``), ``DIR/rejected.jsonl`` (every task not kept, with its reason) and
``DIR/manifest.json`` (:class:`~synth.code.models.CodeManifest`), atomically. Phases:

1. plan every task (:func:`synth.code.tasks.plan_tasks`): untestable modules and cyclic spec graphs are
   rejected here;
2. run every module version an episode will test in the jail, in batches (:func:`synth.code.runner.run_suites`):
   a task whose golden module fails its tests, hangs (a CPU or wall limit) or tries to escape (a policy
   violation) is rejected with the jail's reason;
3. roll out each kept task's golden episode on the workspace tools, in-process (``backend = "emulator"``,
   run_tests answered from phase 2's jail results) or over the stdio MCP server (``backend = "live"``,
   whose run_tests runs the jail itself); a kept row's last test run passed every test.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from synth.code.models import CodeManifest, CodeRecipe, CodeRejected, CodeTask, SuiteResult
from synth.code.render import module_path, repo_files, tests_source
from synth.code.runner import run_suites
from synth.code.tasks import TaskPlan, plan_tasks
from synth.code.trajectory import TOOLS_JSON, Coder, EpisodePlan, Rollout, episode_suites, plan_episode, roll_out
from synth.code.workspace import TOOL_NAMES, SuiteCache, Workspace
from synth.errors import RecipeError, SynthError
from toolscale.files import atomic_write_bytes

__all__ = ["CODE_SYNTH_VERSION", "build_code_dataset", "synthesize_code", "CodeSynthResult", "code_dataset_id",
           "task_row"]

CODE_SYNTH_VERSION = "1"
"""Version of the code factory's output (part of the dataset id)."""

_TOK = re.compile(r"\w+|[^\w\s]")


def code_dataset_id(recipe: CodeRecipe) -> str:
    """Content hash of the recipe and the factory version (16 hex digits)."""
    blob = json.dumps({"recipe": recipe.identity(), "v": CODE_SYNTH_VERSION}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


class CodeSynthResult:
    """Rows and rejected rows (JSON lines, task order) and the manifest of one code synthesis."""

    def __init__(self, rows: list[str], rejected: list[str], manifest: CodeManifest):
        self.rows, self.rejected, self.manifest = rows, rejected, manifest


def _reject(task_id: str, repo: str, stage: str, reason: str, detail: str = "") -> str:
    return CodeRejected(task_id=task_id, repo=repo, stage=stage, reasons=[reason],  # type: ignore[arg-type]
                        detail=detail or None).model_dump_json()


def _jail_reason(res: SuiteResult) -> str:
    if res.status not in ("ok", ""):
        return f"jail_{res.status}"
    return "module_does_not_import" if res.error else "tests_fail"


def task_row(task: CodeTask, plan: EpisodePlan, ro: Rollout) -> tuple[str, dict[str, Any]]:
    """The JSON line of one kept episode and its ``meta``."""
    chain = [tool for _, tool, _, _ in ro.calls]
    deps = {f.name: f.depends_on for f in task.functions if f.depends_on}
    meta = {"task_id": task.task_id, "server": task.repo, "db_id": task.repo, "domain": "code",
            "chain": chain, "signature": f"{task.repo}:" + ">".join(chain),
            "structure": "chain" if deps else "parallel", "planned_chain": chain,
            "nonderivable_calls": ro.nonderivable, "repaired_calls": ro.repaired, "seed": task.seed,
            "support_depth": max(ro.depths, default=0), "injected_errors": ["failing_tests"] if ro.bug_shown else [],
            "judge": {}, "task_kind": "chain", "module": task.module, "functions": [f.name for f in task.functions],
            "apis": [f.api for f in task.functions], "dependencies": deps, "n_tests": len(task.tests),
            "spec_dependency": round(task.dependent_share, 6),
            "dependency_depth": max(task.depth(f.name) for f in task.functions),
            "tests_passed": ro.final.passed if ro.final else 0}
    row = {"messages": ro.messages, "tools": TOOLS_JSON, "meta": json.dumps(meta, ensure_ascii=False)}
    return json.dumps(row, ensure_ascii=False), meta


def _workspace_call(task: CodeTask, cache: SuiteCache) -> Callable[[str, dict[str, Any]], str]:
    ws = Workspace(repo_files(task), {module_path(task): (task.module, tests_source(task))}, suites=cache)
    return ws.call


def synthesize_code(recipe: CodeRecipe, *, plans: Sequence[TaskPlan] | None = None, limits: Any = None,
                    runner: Callable[..., Any] | None = None, progress: Callable[[int, int], None] | None = None,
                    coder: Coder | None = None) -> CodeSynthResult:
    """Build a code dataset in memory (the core of :func:`build_code_dataset`).

    ``plans`` replaces the planned tasks (bring-your-own tasks); ``coder`` writes the code of each function
    (default: the catalog's templates; any other coder's code is trusted no more than a model's: it runs
    only in the jail, and a task whose code fails its tests, hangs or breaks the jail's policy is rejected
    with the jail's reason); ``limits`` and ``runner`` go to the jail (:func:`synth.code.runner.run_suites`).
    """
    plans = list(plans) if plans is not None else plan_tasks(recipe)
    rejected: dict[int, str] = {}
    reasons: Counter[str] = Counter()
    episodes: dict[int, EpisodePlan] = {}
    for p in plans:
        if p.task is None:
            rejected[p.index] = _reject(f"code-{p.index:05d}", p.repo.name, "task", p.reason, p.detail)
            reasons[p.reason] += 1
        else:
            episodes[p.index] = plan_episode(p.task, recipe, coder)
    suites = [s for e in episodes.values() for s in episode_suites(e)]
    results = run_suites(suites, limits=limits, runner=runner)
    cache = SuiteCache(results, runner=runner, limits=limits)
    kept: dict[int, EpisodePlan] = {}
    for i, e in episodes.items():
        final = results[episode_suites(e)[0].key]
        if final.all_passed:
            kept[i] = e
            continue
        why = _jail_reason(final)
        detail = final.error or "; ".join(final.failures[:3])
        rejected[i] = _reject(e.task.task_id, e.task.repo, "jail", why, detail)
        reasons[why] += 1
    rows, metas, rollouts = {}, {}, {}
    with _backend(recipe, [e.task for e in kept.values()], cache, runner, limits) as call_for:
        for n, (i, e) in enumerate(sorted(kept.items())):
            ro = roll_out(e, call_for(e.task), cache)
            if progress is not None:
                progress(n + 1, len(kept))
            if not ro.final.all_passed or not ro.calls[-1][3].startswith("ran "):
                rejected[i] = _reject(e.task.task_id, e.task.repo, "rollout", "rollout_failed", ro.calls[-1][3][:200])
                reasons["rollout_failed"] += 1
                continue
            rows[i], metas[i] = task_row(e.task, e, ro)
            rollouts[i] = ro
    manifest = _manifest(recipe, plans, kept, rows, metas, rollouts, reasons, len(suites), cache.jail_runs)
    return CodeSynthResult([rows[i] for i in sorted(rows)], [rejected[i] for i in sorted(rejected)], manifest)


class _backend:
    """``with _backend(...) as call_for``: ``call_for(task)`` gives the episode's ``call(tool, args)``."""

    def __init__(self, recipe: CodeRecipe, tasks: list[CodeTask], cache: SuiteCache, runner: Any, limits: Any):
        self.recipe, self.tasks, self.cache, self.live = recipe, tasks, cache, None

    def __enter__(self) -> Callable[[CodeTask], Callable[[str, dict[str, Any]], str]]:
        if self.recipe.backend == "live":
            from synth.code.live import LiveWorkspace

            self.live = LiveWorkspace(self.tasks).open()
            return lambda task: self.live.call  # type: ignore[union-attr]
        return lambda task: _workspace_call(task, self.cache)

    def __exit__(self, *exc: object) -> None:
        if self.live is not None:
            self.live.close()


def _manifest(recipe: CodeRecipe, plans: Sequence[TaskPlan], kept: dict[int, EpisodePlan], rows: dict[int, str],
              metas: dict[int, dict], rollouts: dict[int, Rollout], reasons: Counter, n_suites: int,
              extra_jail: int) -> CodeManifest:
    from synth.code.tasks import select_apis

    tasks = [kept[i].task for i in sorted(rows)]
    fns = [f for t in tasks for f in t.functions]
    rest = [f for t in tasks for f in t.functions[1:]]
    writes = [c for i in rows for c in rollouts[i].calls if c[1] == "write_file"]
    nonderiv = sum(len(rollouts[i].nonderivable) for i in rows)
    depths = [d for i in rows for d in rollouts[i].depths]
    skipped = sum(len(kept[i].skipped) for i in rows)
    repaired = sum(len(kept[i].repaired) for i in rows)
    used_apis = sorted({f.api for f in fns})
    tokens = sum(len(_TOK.findall(r)) for r in rows.values())
    measured = {"tool_diversity": float(len(used_apis)), "task_count": float(len(tasks)),
                "db_diversity": float(len({t.repo for t in tasks})),
                "spec_dependency": sum(f.depends_on is not None for f in rest) / len(rest) if rest else 0.0,
                "mean_dependency_depth": sum(max(t.depth(f.name) for f in t.functions) for t in tasks) / len(tasks)
                if tasks else 0.0,
                "repair_rate": repaired / (repaired + skipped) if repaired + skipped else 0.0,
                "support_depth": float(max(depths, default=0)),
                "mean_support_depth": sum(depths) / len(depths) if depths else 0.0,
                "derivable_share": 1.0 - nonderiv / len(writes) if writes else 1.0,
                "error_rate": sum(rollouts[i].bug_shown for i in rows) / len(rows) if rows else 0.0,
                "golden_pass_rate": sum(rollouts[i].final.all_passed for i in rows) / len(rows) if rows else 0.0,
                "functions_per_task": len(fns) / len(tasks) if tasks else 0.0}
    counts = {"tasks": recipe.task_count, "tasks_planned": sum(p.task is not None for p in plans),
              "trajectories": len(kept), "accepted": len(rows), "rejected": sum(reasons.values()),
              "functions": len(fns), "tests": sum(len(t.tests) for t in tasks),
              "tool_calls": sum(len(rollouts[i].calls) for i in rows), "writes": len(writes),
              "nonderivable_writes": nonderiv, "messages": sum(len(rollouts[i].messages) for i in rows),
              "tokens": tokens, "jail_suites": n_suites + extra_jail}
    return CodeManifest(dataset_id=code_dataset_id(recipe), synth_version=CODE_SYNTH_VERSION, recipe=recipe,
                        requested=recipe.axes(), measured={k: round(v, 6) for k, v in measured.items()},
                        counts=counts, rejections=dict(sorted(reasons.items())),
                        apis=sorted(a.name for a in select_apis(recipe)), repos=sorted({t.repo for t in tasks}),
                        tools=list(TOOL_NAMES),
                        roles={"coder": "template", "workspace": "mcp-stdio" if recipe.backend == "live" else
                               "in-process", "tests": "jail"})


def _write_atomic(path: Path, text: str) -> str:
    """Publish ``text`` at ``path`` (:func:`toolscale.files.atomic_write_bytes`); returns its SHA-256."""
    data = text.encode()
    atomic_write_bytes(path, data)
    return hashlib.sha256(data).hexdigest()


def build_code_dataset(recipe: CodeRecipe, out_dir: str | Path, **options: Any) -> CodeManifest:
    """Synthesise the code dataset of one grid point and write it to ``out_dir`` (see the module docstring).

    ``options`` go to :func:`synthesize_code`. Files are replaced only after synthesis succeeded.
    """
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise RecipeError(f"output path {str(out)!r} exists and is not a directory")
    result = synthesize_code(recipe, **options)
    try:
        out.mkdir(parents=True, exist_ok=True)
        files = {"train.jsonl": _write_atomic(out / "train.jsonl", "".join(r + "\n" for r in result.rows)),
                 "rejected.jsonl": _write_atomic(out / "rejected.jsonl", "".join(r + "\n" for r in result.rejected))}
        manifest = result.manifest.model_copy(update={"files": files})
        _write_atomic(out / "manifest.json", json.dumps(manifest.model_dump(mode="json"), indent=2, sort_keys=True)
                      + "\n")
    except OSError as err:
        raise SynthError(f"cannot write the dataset to {str(out)!r}: {err.strerror or err}") from None
    return manifest

