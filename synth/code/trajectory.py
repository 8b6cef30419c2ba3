"""Golden trajectories of code tasks: the calls an agent makes, executed on a workspace backend, labelled.

A golden episode lists the module's spec folder, reads specs and writes the module one function at a
time (the first ``write_file`` creates it, each later one appends a function), runs the hidden tests and reports. Three
knobs shape it, as their tool-domain namesakes do:

``support_depth``
    each task draws a target depth ``d`` in ``1..support_depth``: reads run ``d`` specs ahead of the
    writes, so a spec is read up to ``d`` assistant turns before its function is written;
``defect_rate`` / ``repair_rate``
    each function's spec read is skipped with probability ``defect_rate`` (its write then cannot be
    derived from what the agent has seen: a *non-derivable edit*), and each skip is undone with
    probability ``repair_rate`` (the read is put back: re-synthesised to be derivable);
``error_rate``
    with this probability one function's first version is wrong (:func:`synth.code.render.buggy_function`);
    ``run_tests`` shows the jail's failures and the agent rewrites the whole module. When the jail finds no
    failure for the wrong version, the episode is written without it.

Labels come from the final conversation: a write is derivable when the spec of every function it adds
or changes was read before it (``meta.nonderivable_calls`` lists the others), and ``support_depth`` is the
largest distance in assistant turns from such a read to its write.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from synth.code.models import CodeRecipe, CodeTask, SuiteResult
from synth.code.render import chunk, module_path, spec_dir, spec_path, tests_source
from synth.code.runner import Suite
from synth.code.workspace import TOOL_SCHEMAS

__all__ = ["EpisodePlan", "plan_episode", "episode_suites", "roll_out", "system_prompt", "user_prompt", "Rollout",
           "TOOLS_JSON", "Coder", "template_coder"]

TOOLS_JSON = json.dumps(TOOL_SCHEMAS, ensure_ascii=False)
"""The ``tools`` column of every code trajectory row."""

_ASKS = ("Implement {path} from the specs in {specs}/ and make its hidden tests pass.",
         "Please write the module {path} as specified under {specs}/; run the tests when you are done.",
         "The specs for {module} are in {specs}/. Implement {path} so that the tests pass.",
         "Write {path}: one function per spec file in {specs}/. Check it with the tests.")


def system_prompt(repo: str) -> str:
    """The system turn of a code episode."""
    return f"You are a coding agent in the {repo} repository."


def user_prompt(task: CodeTask, variant: int) -> str:
    """The user's request (one of a few phrasings, chosen per task)."""
    return _ASKS[variant % len(_ASKS)].format(path=module_path(task), specs=spec_dir(task), module=task.module)


Coder = Callable[[CodeTask, int, bool], str]
"""``coder(task, i, buggy)``: the source a write adds for function ``i`` (its first, wrong draft when ``buggy``)."""


def template_coder(task: CodeTask, index: int, buggy: bool) -> str:
    """The default coder: the catalog's code for the function (:func:`synth.code.render.chunk`)."""
    return chunk(task, index, buggy=task.functions[index].name if buggy else None)


@dataclass(frozen=True)
class EpisodePlan:
    """What the golden episode of one task does (decided before anything runs)."""

    task: CodeTask
    depth: int
    """Target support depth (reads run this many specs ahead)."""
    skipped: frozenset[str]
    """Functions whose spec is not read (defects left after repair)."""
    repaired: frozenset[str]
    """Functions whose skipped read was put back."""
    buggy: str | None
    """Function whose first version is wrong (then fixed), or None."""
    ask: int
    """Phrasing of the user's request."""
    chunks: tuple[str, ...] = ()
    """What each write adds, in function order (empty: the template coder's)."""
    bug_chunk: str = ""
    """The wrong first draft of ``buggy`` (empty: the template coder's)."""

    def chunk(self, index: int, buggy: bool = False) -> str:
        """The source the write of function ``index`` adds (the wrong draft when ``buggy``)."""
        if buggy:
            return self.bug_chunk or template_coder(self.task, index, True)
        return self.chunks[index] if self.chunks else template_coder(self.task, index, False)

    def module(self, upto: int | None = None, bug: bool = False) -> str:
        """The module after the first ``upto`` writes (all by default), with the wrong draft when ``bug``."""
        names = [f.name for f in self.task.functions]
        n = len(names) if upto is None else upto
        return "".join(self.chunk(i, bug and names[i] == self.buggy) for i in range(n))


def plan_episode(task: CodeTask, recipe: CodeRecipe, coder: Coder | None = None) -> EpisodePlan:
    """The random choices of one episode (seeded by the task); ``coder`` writes its code (default: the
    template coder)."""
    rng = random.Random(f"{recipe.seed}:code-episode:{task.task_id}")
    depth = rng.randint(1, recipe.support_depth)
    skipped, repaired = set(), set()
    for fn in task.functions:
        if rng.random() < recipe.defect_rate:
            (repaired if rng.random() < recipe.repair_rate else skipped).add(fn.name)
    buggy = rng.choice(task.functions).name if rng.random() < recipe.error_rate else None
    chunks, bug_chunk = (), ""
    if coder is not None:
        chunks = tuple(coder(task, i, False) for i in range(len(task.functions)))
        if buggy is not None:
            bug_chunk = coder(task, [f.name for f in task.functions].index(buggy), True)
    return EpisodePlan(task, depth, frozenset(skipped), frozenset(repaired), buggy, rng.randrange(len(_ASKS)),
                       chunks, bug_chunk)


def episode_suites(plan: EpisodePlan) -> list[Suite]:
    """Every module version the episode may run tests on: the final module and, with a bug, the wrong one."""
    t = plan.task
    tests = tests_source(t)
    out = [Suite(t.module, plan.module(), tests)]
    if plan.buggy is not None:
        out.append(Suite(t.module, plan.module(bug=True), tests))
    return out


@dataclass
class Rollout:
    """One episode's conversation and labels."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    calls: list[tuple[str, str, dict[str, Any], str]] = field(default_factory=list)
    """``(call id, tool, arguments, observation)`` in order."""
    nonderivable: list[str] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)
    depths: list[int] = field(default_factory=list)
    final: SuiteResult | None = None
    bug_shown: bool = False


def _msg(role: str, content: str, **extra: Any) -> dict[str, Any]:
    return {"role": role, "content": content, "tool_calls": extra.get("tool_calls"),
            "tool_call_id": extra.get("tool_call_id"), "name": extra.get("name")}


def _schedule(plan: EpisodePlan) -> list[tuple[str, str]]:
    """``[("read" | "write", function)]``: before writing function ``w``, the specs of functions ``< w + depth``
    are read (skipped reads left out), so reads run ``depth`` specs ahead of the writes."""
    fns = [f.name for f in plan.task.functions]
    reads = [i for i, f in enumerate(fns) if f not in plan.skipped]
    out: list[tuple[str, str]] = []
    r = 0
    for w, name in enumerate(fns):
        while r < len(reads) and reads[r] < w + plan.depth:
            out.append(("read", fns[reads[r]]))
            r += 1
        out.append(("write", name))
    return out


def roll_out(plan: EpisodePlan, call: Callable[[str, dict[str, Any]], str],
             verdict: Callable[[Suite], SuiteResult]) -> Rollout:
    """Run the golden episode of ``plan`` through ``call(tool, arguments) -> observation``.

    ``verdict`` gives the jail's result of a suite (to decide whether a bug is shown, before it is written).
    """
    t = plan.task
    path, specs = module_path(t), spec_dir(t)
    ro = Rollout(messages=[_msg("system", system_prompt(t.repo)), _msg("user", user_prompt(t, plan.ask))])
    turn = {"n": 0}
    read_at: dict[str, int] = {}
    tests = tests_source(t)
    bug = plan.buggy
    if bug is not None and verdict(Suite(t.module, plan.module(bug=True), tests)).all_passed:
        bug = None  # the tests cannot see this bug: no fix to show

    def act(tool: str, args: dict[str, Any]) -> str:
        turn["n"] += 1
        cid = f"call_{turn['n']}"
        ro.messages.append(_msg("assistant", "", tool_calls=[{"id": cid, "type": "function", "function": {
            "name": tool, "arguments": json.dumps(args, ensure_ascii=False)}}]))
        obs = call(tool, args)
        ro.messages.append(_msg("tool", obs, tool_call_id=cid, name=tool))
        ro.calls.append((cid, tool, args, obs))
        return cid

    act("list_files", {"path": specs})
    names = [f.name for f in t.functions]
    for op, name in _schedule(plan):
        if op == "read":
            act("read_file", {"path": spec_path(t, t.functions[names.index(name)])})
            read_at[name] = turn["n"]
            continue
        i = names.index(name)
        args = {"path": path, "content": plan.chunk(i, buggy=name == bug)}
        cid = act("write_file", {**args, "append": True} if i else args)
        _label(ro, cid, name, read_at, turn["n"], plan)
    act("run_tests", {"path": path})
    if bug is not None:
        ro.bug_shown = True
        cid = act("write_file", {"path": path, "content": plan.module()})
        _label(ro, cid, bug, read_at, turn["n"], plan, depth=False)
        act("run_tests", {"path": path})
    ro.final = verdict(Suite(t.module, plan.module(), tests))
    ro.messages.append(_msg("assistant", f"Done: {ro.final.passed} of {ro.final.total} tests pass."))
    return ro


def _label(ro: Rollout, cid: str, name: str, read_at: dict[str, int], now: int, plan: EpisodePlan,
           depth: bool = True) -> None:
    if name not in read_at:
        ro.nonderivable.append(cid)
    elif depth:
        ro.depths.append(now - read_at[name])
    if name in plan.repaired:
        ro.repaired.append(cid)
