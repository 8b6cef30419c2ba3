"""Hidden tests of generated modules, run in the jail (:func:`synth.envs.sandbox.run_calls`), many at once.

The jail's public API runs *calls* of *tools*: here the one tool is :data:`HARNESS`, a function
``run_suite(module, source, tests)`` that imports the module source as a module, runs every ``test_*``
function of the test source and returns ``{"results": [[name, passed, message], ...]}`` (or
``{"import_error": ...}``). Generated code never runs in this process.

:func:`run_suites` sends up to :data:`BATCH` suites per jail run. A run that fails as a whole (a limit, a
policy violation: code that hangs or tries to escape) is split in halves until the suite that broke it is
alone; that suite's :class:`~synth.code.models.SuiteResult` carries the jail's reason and status, and the
others are run again. So one bad module costs its neighbours nothing but time.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from synth.code.models import SuiteResult
from synth.envs.models import SandboxLimits

__all__ = ["HARNESS", "BATCH", "SUITE_LIMITS", "Suite", "suite_key", "run_suites", "parse_outcome"]

HARNESS = r'''
def run_suite(module, source, tests):
    import sys, types
    mod = types.ModuleType(module)
    sys.modules[module] = mod
    try:
        exec(compile(source, module + ".py", "exec"), mod.__dict__)
    except BaseException as exc:
        return {"import_error": type(exc).__name__ + ": " + str(exc)[:200]}
    ns = {"__name__": "test_" + module}
    exec(compile(tests, "test_" + module + ".py", "exec"), ns)
    results = []
    for name in [n for n in list(ns) if n.startswith("test_") and callable(ns[n])]:
        try:
            ns[name]()
            results.append([name, True, ""])
        except AssertionError as exc:
            results.append([name, False, str(exc)[:200]])
        except BaseException as exc:
            results.append([name, False, type(exc).__name__ + ": " + str(exc)[:200]])
    return {"results": results}
'''
"""The in-jail test harness (standard library only), the source of the jail's one tool ``run_suite``."""

BATCH = 48
"""Suites per jail run."""
SUITE_LIMITS = SandboxLimits(cpu_s=5.0, memory_mb=512, wall_s=60.0, output_chars=65536)
"""Limits of one jail run of suites: CPU seconds, memory, wall seconds (the whole batch)."""


@dataclass(frozen=True)
class Suite:
    """One module version and its hidden tests."""

    module: str
    """Module name (what the tests import)."""
    source: str
    """The module's source."""
    tests: str
    """The test file's source."""

    @property
    def key(self) -> str:
        """Content hash of the three (the cache key of its result)."""
        return suite_key(self.module, self.source, self.tests)


def suite_key(module: str, source: str, tests: str) -> str:
    """SHA-256 (24 hex digits) of a module name, its source and its tests."""
    blob = json.dumps([module, source, tests], ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def parse_outcome(ok: bool, output: str) -> SuiteResult:
    """A :class:`SuiteResult` from one harness call's outcome (``ok``, its JSON output or error text)."""
    if not ok:
        return SuiteResult(error=f"the test harness failed: {output[:200]}", status="ok")
    try:
        data = json.loads(output)
    except ValueError:
        return SuiteResult(error="the test harness returned no result", status="ok")
    if "import_error" in data:
        return SuiteResult(error=f"the module does not import: {data['import_error']}", status="ok")
    results = data.get("results") or []
    failures = [f"{name}: {msg}" if msg else name for name, passed, msg in results if not passed]
    return SuiteResult(passed=sum(bool(r[1]) for r in results), total=len(results), failures=failures)


Runner = Callable[..., object]


def run_suites(suites: Sequence[Suite], *, limits: SandboxLimits | None = None, batch: int = BATCH,
               runner: Runner | None = None) -> dict[str, SuiteResult]:
    """Run every suite in the jail; ``{suite.key: SuiteResult}`` (duplicates run once).

    Parameters
    ----------
    suites : the module versions with their tests.
    limits : jail limits of one run (default :data:`SUITE_LIMITS`; ``isolation="insecure"`` for debugging).
    batch : suites per jail run.
    runner : ``run_calls`` of :mod:`synth.envs.sandbox` (default); tests may pass another with its signature.

    Raises
    ------
    synth.envs.errors.SandboxError
        When the jail cannot be set up: no generated code has run.
    """
    if runner is None:
        from synth.envs.sandbox import run_calls as runner
    limits = limits or SUITE_LIMITS
    unique = {s.key: s for s in suites}
    out: dict[str, SuiteResult] = {}
    keys = list(unique)
    for i in range(0, len(keys), batch):
        _run_group([unique[k] for k in keys[i:i + batch]], limits, runner, out)
    return out


def _run_group(group: list[Suite], limits: SandboxLimits, runner: Runner, out: dict[str, SuiteResult]) -> None:
    calls = [{"name": "run_suite", "arguments": {"module": s.module, "source": s.source, "tests": s.tests}}
             for s in group]
    run = runner({"run_suite": HARNESS}, calls, limits=limits)
    outcomes = list(getattr(run, "calls", []) or [])
    if run.failed or len(outcomes) != len(group):  # type: ignore[attr-defined]
        if len(group) == 1:
            out[group[0].key] = SuiteResult(error=run.reason() or "the jail run failed",  # type: ignore[attr-defined]
                                            status=run.status)  # type: ignore[attr-defined]
            return
        half = len(group) // 2
        _run_group(group[:half], limits, runner, out)
        _run_group(group[half:], limits, runner, out)
        return
    for s, o in zip(group, outcomes, strict=True):
        out[s.key] = parse_outcome(o.ok, o.output)
