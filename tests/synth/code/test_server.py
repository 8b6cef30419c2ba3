"""The workspace as a real stdio MCP server: the tools over MCP, write-through to disk, tests run in the jail."""

from __future__ import annotations

import pytest

from synth.code.live import LiveWorkspace
from synth.code.models import CodeRecipe
from synth.code.render import module_path
from synth.code.server import load_workspace
from synth.code.tasks import plan_tasks
from synth.code.trajectory import plan_episode


def test_load_workspace_maps_hidden_tests_to_modules_and_writes_through(tmp_path):
    (tmp_path / "ws" / "r" / "specs").mkdir(parents=True)
    (tmp_path / "ws" / "r" / "specs" / "f.md").write_text("spec")
    (tmp_path / "hidden" / "r" / "tests").mkdir(parents=True)
    (tmp_path / "hidden" / "r" / "tests" / "test_m.py").write_text("from m import *\n\n\ndef test_a():\n    assert f() == 1\n")
    ws = load_workspace(tmp_path / "ws", tmp_path / "hidden")
    assert ws.read_file("r/specs/f.md") == "spec" and set(ws.hidden) == {"r/m.py"}
    ws.write_file("r/m.py", "def f():\n    return 1\n")
    assert (tmp_path / "ws" / "r" / "m.py").read_text() == "def f():\n    return 1\n"
    assert ws.run_tests("r/m.py") == "ran 1 tests: 1 passed"  # in the jail


@pytest.mark.integration
def test_tools_over_stdio_mcp():
    """One server start (the MCP SDK's imports: 3-30 s on a busy 2-core machine), then a few calls."""
    task = next(p.task for p in plan_tasks(CodeRecipe(task_count=1, seed=3)))
    plan = plan_episode(task, CodeRecipe(seed=3, error_rate=0.0))
    with LiveWorkspace([task]) as live:
        path = module_path(task)
        assert live.call("read_file", {"path": "x/../../etc/passwd"}).startswith("error: bad path")
        n = len(task.tests)
        assert live.call("run_tests", {"path": path}).startswith(f"ran {n} tests: 0 passed, {n} failed")  # no module yet
        live.call("write_file", {"path": path, "content": plan.module()})
        assert live.call("run_tests", {"path": path}) == f"ran {len(task.tests)} tests: {len(task.tests)} passed"
        live.call("write_file", {"path": path, "content": "def oops(:\n"})
        assert "does not import" in live.call("run_tests", {"path": path})
    assert live.folder is None  # removed on close
