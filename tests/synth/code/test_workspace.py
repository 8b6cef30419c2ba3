"""The four workspace tools: what the agent can see, write and run; hidden tests stay hidden."""

from __future__ import annotations

import json

from synth.code.models import SuiteResult
from synth.code.runner import Suite
from synth.code.workspace import TOOL_NAMES, TOOL_SCHEMAS, Workspace, normalise_path


def _ws(calls: list | None = None) -> Workspace:
    def suites(s: Suite) -> SuiteResult:
        if calls is not None:
            calls.append(s)
        ok = "return 3" in s.source
        return SuiteResult(passed=1 if ok else 0, total=1, failures=[] if ok else ["test_f_1: got None"])
    return Workspace({"r/specs/m/f.md": "# f(n) -> int\n", "r/README.md": "hi"},
                     {"r/m.py": ("m", "def test_f_1():\n    assert f(1) == 3\n")}, suites=suites)


def test_list_read_write_append():
    ws = _ws()
    assert json.loads(ws.call("list_files", {"path": "r/specs"})) == ["r/specs/m/f.md"]
    assert json.loads(ws.list_files("")) == ["r/README.md", "r/specs/m/f.md"]
    assert ws.call("read_file", {"path": "r/specs/m/f.md"}) == "# f(n) -> int\n"
    assert ws.call("write_file", {"path": "r/m.py", "content": "def f(n):\n"}) == "wrote r/m.py (1 lines)"
    assert ws.call("write_file", {"path": "r/m.py", "content": "    return 3\n", "append": True}) == \
        "appended to r/m.py (2 lines)"
    assert ws.files["r/m.py"] == "def f(n):\n    return 3\n"
    assert ws.call("run_tests", {"path": "r/m.py"}) == "ran 1 tests: 1 passed"


def test_hidden_tests_are_never_listed_read_or_written_and_paths_stay_inside():
    ws = _ws()
    assert "tests" not in ws.list_files("r")
    assert ws.read_file("r/tests/test_m.py").startswith("error: no such file")
    assert ws.write_file("r/tests/test_m.py", "x").startswith("error:")
    for bad in ("../etc/passwd", "/etc/passwd", "r/../../x", ""):
        assert ws.read_file(bad).startswith("error: bad path"), bad
    assert normalise_path("r/./m.py") == "r/m.py" and normalise_path("a/../..") is None


def test_bad_calls_are_error_observations_not_exceptions():
    ws = _ws()
    assert ws.call("rm", {}).startswith("error: unknown tool 'rm'")
    assert ws.call("read_file", {"file": "x"}).startswith("error: bad arguments for read_file")
    assert ws.call("write_file", {"path": "r/m.py", "content": 3}).startswith("error: content must be a string")
    assert ws.run_tests("r/other.py") == "error: no tests for r/other.py"
    assert ws.write_file("r/big.py", "x" * 30_000).startswith("error: file too large")


def test_run_tests_reports_failures_from_the_suite_runner():
    seen: list = []
    ws = _ws(seen)
    ws.write_file("r/m.py", "def f(n):\n    return None\n")
    assert ws.run_tests("r/m.py") == "ran 1 tests: 0 passed, 1 failed\nFAILED test_f_1: got None"
    assert seen[0].module == "m" and "return None" in seen[0].source and "assert f(1) == 3" in seen[0].tests


def test_schemas_name_the_four_tools():
    assert TOOL_NAMES == ("list_files", "read_file", "write_file", "run_tests")
    write = next(t for t in TOOL_SCHEMAS if t["function"]["name"] == "write_file")["function"]["parameters"]
    assert write["required"] == ["path", "content"] and write["properties"]["append"]["type"] == "boolean"
