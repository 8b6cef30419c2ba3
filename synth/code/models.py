"""Contracts of the code domain: the recipe, tasks with their spec graph, test outcomes, the manifest.

Pydantic and the standard library only. A :class:`CodeTask` is one small multi-function Python module:
each :class:`CodeFunction` has a natural-language spec and at most one dependency on an earlier function
of the module (its spec refers to that function's output, the way a tool chain links calls). A task
whose dependency graph has a cycle, or that depends on a function the module does not define, is refused
when it is built (:meth:`CodeTask._graph`), naming the cycle.
"""

from __future__ import annotations

import difflib
import graphlib
import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from synth.errors import RecipeError

__all__ = ["CODE_AXIS_KNOBS", "CodeRecipe", "CodeFunction", "TestCase", "CodeTask", "SuiteResult", "CodeManifest",
           "CodeRejected", "dependency_cycle"]

CODE_AXIS_KNOBS: tuple[str, ...] = ("tool_diversity", "task_count", "db_diversity", "spec_dependency",
                                    "repair_rate", "support_depth")
"""Recipe fields of the code domain that are grid axes. ``tool_diversity`` counts library APIs,
``db_diversity`` repositories; ``spec_dependency`` is the domain's own quality axis."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CodeRecipe(_Frozen):
    """The knobs of one grid point of the code domain: what the dataset of code tasks should look like."""

    domain: Literal["code"] = "code"
    """Always ``code`` (part of the dataset id, so code and tool datasets never share a key)."""
    tool_diversity: int = Field(default=16, ge=1)
    """Distinct library APIs the tasks may call (the first T of a seeded order), in APIs."""
    task_count: int = Field(default=128, ge=1)
    """Tasks synthesised (modules, before the jail and the checks filter), in tasks."""
    db_diversity: int = Field(default=2, ge=1)
    """Distinct repositories (name, conventions, spec and code style) the tasks are spread over, in repositories."""
    spec_dependency: float = Field(default=0.5, ge=0.0, le=1.0)
    """Probability that a function after a module's first depends on an earlier one (its spec refers to
    that function's output), a fraction; the share measured is in the manifest."""
    repair_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    """Share of non-derivable edits (a function written without reading its spec) re-synthesised so that the
    spec is read first, a fraction."""
    support_depth: int = Field(default=1, ge=1, le=6)
    """Most assistant turns between reading a spec and writing its function (reads run ahead), in turns."""
    defect_rate: float = Field(default=0.3, ge=0.0, le=1.0)
    """Probability that a function is written without its spec being read (before repair)."""
    error_rate: float = Field(default=0.2, ge=0.0, le=1.0)
    """Probability that a task's first version of one function has a bug that ``run_tests`` shows and the
    next write fixes (the run_tests output of both versions comes from the jail)."""
    min_functions: int = Field(default=2, ge=1, le=6)
    """Fewest functions of a module."""
    max_functions: int = Field(default=3, ge=1, le=6)
    """Most functions of a module."""
    tests_per_function: int = Field(default=2, ge=1, le=6)
    """Hidden test cases per function."""
    backend: Literal["emulator", "live"] = "emulator"
    """``emulator``: the workspace tools run in-process (the jail still runs every test); ``live``: every
    call goes to the stdio MCP server (:mod:`synth.code.server`)."""
    include_heldout: bool = False
    """Allow the held-out APIs (benchmarks only; never for training data)."""
    seed: int = 0
    """Seed of every random choice (same recipe and seed: byte-identical dataset)."""

    @model_validator(mode="after")
    def _check(self) -> "CodeRecipe":
        if self.max_functions < self.min_functions:
            raise ValueError(f"max_functions ({self.max_functions}) must be >= min_functions ({self.min_functions})")
        return self

    @classmethod
    def from_axes(cls, levels: dict[str, Any], seed: int = 0, **settings: Any) -> "CodeRecipe":
        """A recipe from grid axis levels plus ``[synth]`` settings the code domain takes.

        Integer knobs are rounded. An unknown knob raises :class:`~synth.errors.RecipeError` naming it.

        >>> CodeRecipe.from_axes({"tool_diversity": 12.4, "spec_dependency": 0.5}, seed=3).tool_diversity
        12
        """
        data: dict[str, Any] = {}
        for key, value in {**levels, **settings}.items():
            if key not in cls.model_fields or key in ("seed", "domain"):
                close = difflib.get_close_matches(key, list(cls.model_fields), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise RecipeError(f"unknown code-domain knob {key!r}{hint}; expected one of "
                                  f"{', '.join(k for k in cls.model_fields if k not in ('seed', 'domain'))}")
            if cls.model_fields[key].annotation is int and isinstance(value, float):
                if not math.isfinite(value):
                    raise RecipeError(f"recipe knob {key!r} must be a finite number, got {value!r}")
                value = int(round(value))
            data[key] = value
        try:
            return cls.model_validate({**data, "seed": seed})
        except ValidationError as err:
            e = err.errors()[0]
            loc = ".".join(str(x) for x in e["loc"]) or "recipe"
            raise RecipeError(f"code recipe knob {loc}: {e['msg'].removeprefix('Value error, ')} "
                              f"(got {e.get('input')!r})") from None

    def identity(self) -> dict[str, Any]:
        """The recipe as hashed into dataset ids (its JSON dump; ``domain`` keeps it apart from tool recipes)."""
        return self.model_dump(mode="json")

    def axes(self) -> dict[str, float]:
        """The requested axis values ``{axis: value}``."""
        return {k: float(getattr(self, k)) for k in CODE_AXIS_KNOBS}


class CodeFunction(_Frozen):
    """One function of a task's module: its spec and the API it applies."""

    name: str = Field(pattern=r"^[a-z_][a-z0-9_]*$")
    """Function name (a Python identifier, unique in the module)."""
    api: str
    """The library API it applies (:data:`synth.code.catalog.API_CATALOG` name)."""
    const: Any = None
    """The API's constant ``k`` (None when it has none)."""
    depends_on: str | None = None
    """The earlier function whose output it takes (its spec says so); None: it works on its own input."""
    param: str
    """Its parameter's name."""
    kin: str
    """Kind of its parameter (the root input kind of its dependency chain)."""
    kout: str
    """Kind of what it returns."""
    spec: str
    """The natural-language spec (one paragraph, without the signature line)."""


class TestCase(_Frozen):
    """One hidden test: a call of a function and the value it must return."""

    __test__ = False  # not a pytest class

    function: str
    """Function called."""
    argument: Any
    """Its one argument (JSON value)."""
    expected: Any
    """Expected return value (JSON value), from the catalog's reference."""


class CodeTask(_Frozen):
    """One task: a module of functions with specs, a spec dependency graph and hidden tests."""

    task_id: str
    """Stable id within the dataset."""
    repo: str
    """Repository (folder of the workspace) the module lives in."""
    module: str = Field(pattern=r"^[a-z_][a-z0-9_]*$")
    """Module name (``REPO/MODULE.py``)."""
    doc: str
    """The module's one-line docstring."""
    functions: list[CodeFunction] = Field(min_length=1)
    """Functions in writing order (a dependency comes before its dependants)."""
    tests: list[TestCase] = Field(min_length=1)
    """Hidden tests, grouped by function in writing order."""
    style: dict[str, Any] = Field(default_factory=dict)
    """The repository's conventions (type hints, docstrings, spec layout)."""
    seed: int = 0
    """Per-task seed."""

    @model_validator(mode="after")
    def _graph(self) -> "CodeTask":
        names = [f.name for f in self.functions]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"task {self.task_id}: function names repeat: {', '.join(dup)}")
        unknown = [f"{f.name} -> {f.depends_on}" for f in self.functions if f.depends_on and f.depends_on not in names]
        if unknown:
            raise ValueError(f"task {self.task_id}: depends on a function the module does not define: "
                             f"{', '.join(unknown)}")
        cycle = dependency_cycle({f.name: [f.depends_on] if f.depends_on else [] for f in self.functions})
        if cycle:
            raise ValueError(f"task {self.task_id}: the spec dependency graph has a cycle: {' -> '.join(cycle)}")
        order = {n: i for i, n in enumerate(names)}
        late = [f.name for f in self.functions if f.depends_on and order[f.depends_on] > order[f.name]]
        if late:
            raise ValueError(f"task {self.task_id}: functions come before what they depend on: {', '.join(late)}")
        return self

    @property
    def dependent_share(self) -> float:
        """Share of the functions after the first that depend on another (0 for one function)."""
        rest = self.functions[1:]
        return sum(f.depends_on is not None for f in rest) / len(rest) if rest else 0.0

    def depth(self, name: str) -> int:
        """Length of the dependency chain ending at ``name`` (0 for a function that depends on nothing)."""
        by = {f.name: f for f in self.functions}
        d, cur = 0, by[name]
        while cur.depends_on is not None:
            d, cur = d + 1, by[cur.depends_on]
        return d


def dependency_cycle(graph: dict[str, list[str]]) -> list[str]:
    """A cycle of ``graph`` (``node -> nodes it depends on``) as ``[a, b, ..., a]``, or ``[]`` when acyclic.

    >>> dependency_cycle({"a": ["b"], "b": ["a"]})
    ['a', 'b', 'a']
    >>> dependency_cycle({"a": [], "b": ["a"]})
    []
    """
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as err:
        nodes = list(err.args[1])
        return nodes[::-1] if nodes else ["?"]
    return []


class SuiteResult(_Frozen):
    """The hidden tests of one module version, run in the jail."""

    passed: int = 0
    """Tests that passed."""
    total: int = 0
    """Tests run."""
    failures: list[str] = Field(default_factory=list)
    """One line per failed test (``test_top_1: got [3, 5]``)."""
    error: str = ""
    """Why the whole run failed (a jail limit, a policy violation, a module that does not import); empty if not."""
    status: str = "ok"
    """The jail's status (``ok``, ``cpu_limit``, ``wall_limit``, ``memory_limit``, ``violation``, ``crashed``)."""

    @property
    def all_passed(self) -> bool:
        """True when every test ran and passed."""
        return not self.error and self.total > 0 and self.passed == self.total

    def text(self) -> str:
        """What ``run_tests`` shows the agent."""
        if self.error:
            return f"error: the tests could not run: {self.error}"
        head = f"ran {self.total} tests: {self.passed} passed" + (
            f", {self.total - self.passed} failed" if self.passed < self.total else "")
        return "\n".join([head, *(f"FAILED {f}" for f in self.failures)])


class CodeRejected(_Frozen):
    """One row of ``rejected.jsonl`` of a code dataset: a task that was not kept, and why."""

    task_id: str
    """The task's id."""
    repo: str
    """Its repository."""
    stage: Literal["task", "jail", "rollout"]
    """Where it was rejected: generation (untestable, a cycle), the jail (tests fail, limit, escape), rollout."""
    reasons: list[str] = Field(min_length=1)
    """Countable reasons (keys of the manifest's ``rejections``)."""
    detail: str | None = None
    """One line for people (the jail's reason, the cycle)."""


class CodeManifest(_Frozen):
    """What a code dataset was asked to be and what it measured to be (``DIR/manifest.json``).

    Keys shared with the tool domain's manifest (``dataset_id``, ``requested``, ``measured``, ``counts``,
    ``files``, ``probe``, ``warnings``) mean the same, so the pipeline, probes and allocator read both.
    """

    domain: Literal["code"] = "code"
    """The domain."""
    dataset_id: str
    """Content hash of the recipe and the synthesis version."""
    synth_version: str
    """Version of the code factory's output format."""
    recipe: CodeRecipe
    """The recipe built."""
    requested: dict[str, float]
    """Requested axis values."""
    measured: dict[str, float]
    """Measured: APIs used, tasks kept, repositories used, ``spec_dependency`` (share of dependent specs),
    ``mean_dependency_depth``, ``derivable_share``, ``mean_support_depth``, ``golden_pass_rate``..."""
    counts: dict[str, int]
    """Counts: tasks, trajectories, accepted, rejected, functions, tests, tool calls, jail runs, tokens..."""
    rejections: dict[str, int]
    """Rejected tasks per reason."""
    apis: list[str]
    """APIs offered (the first ``tool_diversity`` of the order), sorted."""
    repos: list[str]
    """Repositories used, sorted."""
    tools: list[str]
    """The workspace tools the agent has."""
    roles: dict[str, str] = Field(default_factory=dict)
    """Implementation of each role (``coder``: ``template``; ``workspace``: ``in-process`` or ``mcp-stdio``)."""
    files: dict[str, str] = Field(default_factory=dict)
    """Written files (name -> sha256)."""
    probe: dict[str, Any] | None = None
    """Filled by probes/."""
    warnings: list[str] = Field(default_factory=list)
    """What the user should know."""
