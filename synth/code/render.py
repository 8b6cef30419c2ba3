"""Text of a code task: repositories and their conventions, spec files, module versions, hidden tests.

Pure functions of a :class:`~synth.code.models.CodeTask`. A repository's conventions (``db_diversity``
counts repositories) shape everything the agent reads and writes: the spec layout and phrasing, type
hints and docstrings in the code, the module docstring, the README.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from synth.code.catalog import PARAM_NAMES, PY_TYPES, api
from synth.code.models import CodeFunction, CodeTask

__all__ = ["Repo", "make_repo", "repo_files", "spec_path", "module_path", "tests_path", "spec_text", "module_source",
           "tests_source", "module_name", "spec_dir", "chunk", "function_lines", "buggy_function"]

_NOUN = ("ledger", "atlas", "harbor", "quarry", "compass", "lantern", "orchard", "foundry", "beacon", "archive",
         "meadow", "workshop", "canvas", "signal", "garden", "bridge", "engine", "market", "studio", "vault")
_MOD_A = ("text", "word", "num", "calc", "stat", "list", "data", "seq", "char", "date", "code", "tally", "parse",
          "form", "count", "rank", "sort", "mix", "step", "grid")
_MOD_B = ("tools", "utils", "kit", "ops", "helpers", "lib", "fns", "core", "base", "misc", "works", "bits",
          "funcs", "aids", "box", "set", "pack", "lab", "shop", "hub")
_VERBS = ("Return", "Returns", "Should return", "Compute and return")


@dataclass(frozen=True)
class Repo:
    """One repository: its name and conventions."""

    name: str
    """Folder name (``ledger7``)."""
    hints: bool
    """Type hints on signatures."""
    docstrings: bool
    """A one-line docstring in each function (the spec's phrase)."""
    layout: int
    """Spec file layout (0, 1 or 2)."""
    verb: str
    """How a spec starts (``Return``, ``Returns``...)."""
    seed: int
    """The repository's seed."""

    def style(self) -> dict[str, Any]:
        """The conventions as a dict (stored with each task)."""
        return {"hints": self.hints, "docstrings": self.docstrings, "layout": self.layout, "verb": self.verb}


def make_repo(seed: int) -> Repo:
    """The repository of ``seed``: name and conventions drawn from it (same seed, same repository). The name ends
    in ``seed % 1000``: a training run's repositories (seeds ``run_seed * 1000 + i``) end in 0-499, the
    benchmarks' (:mod:`synth.code.bench`) in 500-799, so no benchmark repository shares a training one's name."""
    rng = random.Random(f"code-repo:{seed}")
    name = f"{rng.choice(_NOUN)}{seed % 1000}"
    return Repo(name=name, hints=rng.random() < 0.6, docstrings=rng.random() < 0.3, layout=rng.randrange(3),
                verb=rng.choice(_VERBS), seed=seed)


def module_name(rng: random.Random, taken: set[str]) -> str:
    """A module name not in ``taken`` (``textkit``, ``numops_3``...), drawn with ``rng``."""
    for _ in range(20):
        name = rng.choice(_MOD_A) + rng.choice(_MOD_B)
        if name not in taken:
            return name
    base, n = rng.choice(_MOD_A) + rng.choice(_MOD_B), 2
    while f"{base}_{n}" in taken:
        n += 1
    return f"{base}_{n}"


def spec_path(task: CodeTask, fn: CodeFunction) -> str:
    """``REPO/specs/MODULE/FUNCTION.md``."""
    return f"{task.repo}/specs/{task.module}/{fn.name}.md"


def spec_dir(task: CodeTask) -> str:
    """``REPO/specs/MODULE``."""
    return f"{task.repo}/specs/{task.module}"


def module_path(task: CodeTask) -> str:
    """``REPO/MODULE.py``."""
    return f"{task.repo}/{task.module}.py"


def tests_path(task: CodeTask) -> str:
    """``REPO/tests/test_MODULE.py`` (hidden: never listed or readable by the agent)."""
    return f"{task.repo}/tests/test_{task.module}.py"


def _signature(fn: CodeFunction, hints: bool) -> str:
    if hints:
        return f"{fn.name}({fn.param}: {PY_TYPES[fn.kin]}) -> {PY_TYPES[fn.kout]}"
    return f"{fn.name}({fn.param})"


def spec_text(task: CodeTask, fn: CodeFunction) -> str:
    """The spec file of one function, in its repository's layout."""
    sig = _signature(fn, True)
    layout = int(task.style.get("layout", 0))
    if layout == 1:
        return f"Function: {sig}\nBehaviour: {fn.spec}\n"
    if layout == 2:
        return f"## {fn.name}\n\n`{sig}`\n\n{fn.spec}\n"
    return f"# {sig}\n\n{fn.spec}\n"


def function_lines(task: CodeTask, fn: CodeFunction, *, buggy: bool = False) -> list[str]:
    """The source lines of one function (no trailing blank line)."""
    a = api(fn.api)
    hints = bool(task.style.get("hints"))
    lines = [f"def {_signature(fn, hints)}:"]
    if task.style.get("docstrings"):
        doc = fn.spec.removeprefix(task.style.get("verb", "Return")).strip().rstrip(".")
        lines.append(f'    """Return {doc}."""')
    if fn.depends_on is None:
        var = fn.param
    else:
        dep = next(f for f in task.functions if f.name == fn.depends_on)
        names = {f.name for f in task.functions} | {fn.param}
        var = next(v for v in (PARAM_NAMES[dep.kout], "result", "found", "value_") if v not in names)
        lines.append(f"    {var} = {dep.name}({fn.param})")
    expr = a.code.format(x=var, k=fn.const)
    if buggy:
        expr = buggy_function(expr, fn)
    lines.append(f"    return {expr}")
    return lines


def buggy_function(expr: str, fn: CodeFunction) -> str:
    """A plausible wrong version of a return expression, by output kind (what a first draft gets wrong)."""
    if fn.kout in ("int", "num"):
        return f"{expr} + 1"
    if fn.kout == "text":
        return f"{expr}.strip() + '.'"
    return f"{expr}[:-1]"


def chunk(task: CodeTask, index: int, *, buggy: str | None = None) -> str:
    """What writing function ``index`` adds to the module: the imports it needs that earlier functions did
    not, then the function (two blank lines before each part after the first)."""
    fn = task.functions[index]
    before = {m for f in task.functions[:index] for m in api(f.api).imports}
    new = sorted(set(api(fn.api).imports) - before)
    lines = ["", ""] if index else []
    if new:
        lines += [f"import {m}" for m in new] + ["", ""]
    lines += function_lines(task, fn, buggy=fn.name == buggy)
    return "\n".join(lines) + "\n"


def module_source(task: CodeTask, upto: int, *, buggy: str | None = None) -> str:
    """The module with its first ``upto`` functions: the chunks of :func:`chunk` one after the other."""
    return "".join(chunk(task, i, buggy=buggy) for i in range(upto))


def tests_source(task: CodeTask, upto: int | None = None) -> str:
    """The hidden test file (tests of the first ``upto`` functions; all by default)."""
    names = [f.name for f in task.functions[: upto if upto is not None else len(task.functions)]]
    lines = [f"from {task.module} import *", ""]
    counters: dict[str, int] = {}
    for t in task.tests:
        if t.function not in names:
            continue
        counters[t.function] = counters.get(t.function, 0) + 1
        lines += ["", f"def test_{t.function}_{counters[t.function]}():",
                  f"    got = {t.function}({t.argument!r})",
                  f"    assert got == {t.expected!r}, f\"got {{got!r}}\"", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def repo_files(task: CodeTask) -> dict[str, str]:
    """The files the agent can see at the start of the task: one spec per function."""
    return {spec_path(task, fn): spec_text(task, fn) for fn in task.functions}
