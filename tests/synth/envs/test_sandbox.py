"""synth/envs/sandbox.py: limits, no network, no writes outside the work dir, per-call isolation."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from synth.envs.models import SandboxLimits
from synth.envs.sandbox import run_calls

pytestmark = pytest.mark.integration

FAST = SandboxLimits(cpu_s=1, wall_s=5, memory_mb=256)


def _one(body: str, limits: SandboxLimits = FAST, **args):
    src = "def f(**kw):\n" + "".join("    " + line + "\n" for line in body.splitlines())
    return run_calls({"f": src}, [{"name": "f", "arguments": args}], limits=limits)


def test_batch_of_calls_runs_in_one_process_with_error_observations():
    src = "def add(a, b):\n    return {'sum': a + b}\n"
    run = run_calls({"add": src}, [{"name": "add", "arguments": {"a": 1, "b": 2}},
                                   {"name": "add", "arguments": {"a": 1}},
                                   {"name": "missing", "arguments": {}}], limits=FAST)
    assert run.status == "ok"
    assert [c.ok for c in run.calls] == [True, False, False]
    assert run.calls[0].output == '{"sum": 3}'
    assert "missing 1 required positional argument" in run.calls[1].output
    assert "unknown tool 'missing'" in run.calls[2].output


def test_calls_share_no_state():
    src = "_N = []\ndef count():\n    _N.append(1)\n    return len(_N)\n"
    run = run_calls({"count": src}, [{"name": "count", "arguments": {}}] * 3, limits=FAST)
    assert [c.output for c in run.calls] == ["1", "1", "1"]


def test_infinite_loop_is_stopped_by_the_cpu_limit():
    run = _one("while True:\n    pass", limits=SandboxLimits(cpu_s=1, wall_s=30))
    assert run.failed and run.status == "cpu_limit"
    assert "CPU-time limit" in run.reason()


def test_sleeping_forever_is_stopped_by_the_wall_clock():
    run = _one("import time\ntime.sleep(60)", limits=SandboxLimits(cpu_s=5, wall_s=1))
    assert run.failed and run.status == "wall_limit"


def test_memory_bomb_is_stopped_by_the_memory_limit():
    run = _one("x = []\nwhile True:\n    x.append(bytearray(10_000_000))")
    assert run.failed and run.status == "memory_limit"


def test_network_attempt_is_blocked_and_rejected():
    body = ("import socket\ns = socket.socket()\ns.settimeout(1)\ntry:\n    s.connect(('1.1.1.1', 80))\n"
            "    return 'connected'\nexcept OSError as e:\n    return 'refused: ' + str(e)")
    run = _one(body, limits=SandboxLimits(cpu_s=2, wall_s=5))
    assert run.failed and run.status == "violation" and run.isolation == "namespaces"
    assert any("network access attempted" in v for v in run.violations)  # the tripwire, written at once
    # the kernel's record: a socket other than AF_UNIX kills the call's process, which no tool code can undo
    assert any("SIGSYS" in v for v in run.violations) and run.calls[0].output == "killed by SIGSYS"


def test_insecure_mode_is_a_plain_child_whose_hook_refuses():
    body = ("import os, socket\ntry:\n    socket.socket()\n    net = 'made'\nexcept PermissionError:\n"
            "    net = 'refused'\nreturn {'net': net, 'uid': os.getuid()}")
    run = _one(body, limits=SandboxLimits(cpu_s=2, wall_s=5, isolation="insecure"))
    assert run.isolation == "insecure" and run.status == "violation"
    assert run.calls[0].output == '{"net": "refused", "uid": %d}' % os.getuid()


def test_write_outside_work_dir_is_refused(tmp_path: Path):
    target = tmp_path / "escaped.txt"
    run = _one(f"open({str(target)!r}, 'w').write('x')\nreturn 1")
    assert run.failed and any("outside the work directory" in v for v in run.violations)
    assert not target.exists()
    assert not run.calls[0].ok  # the kernel refused it: the hook only records inside the jail


def test_writes_inside_the_empty_work_dir_are_allowed():
    run = _one("import os\nbefore = os.listdir('.')\nopen('a.txt', 'w').write('hi')\n"
               "return {'before': before, 'read': open('a.txt').read()}")
    assert run.status == "ok"
    assert run.calls[0].output == '{"before": [], "read": "hi"}'


def test_environment_is_stripped_and_no_site_packages():
    run = _one("import os, sys\nreturn {'env': sorted(os.environ), 'site': any('site-packages' in p for p in sys.path)}")
    assert run.status == "ok"
    out = run.calls[0].output
    assert '"site": false' in out
    assert "HOME" not in out and "VIRTUAL_ENV" not in out


def test_subprocess_is_a_violation():
    run = _one("import subprocess\nreturn subprocess.run(['true']).returncode")
    assert run.failed and any("process control" in v for v in run.violations)


def test_huge_output_is_a_failed_call():
    run = _one("return 'x' * 100000")
    assert run.status == "ok" and not run.calls[0].ok and "OutputTooLarge" in run.calls[0].output


def test_no_jail_means_no_run(monkeypatch):
    from synth.envs import jail
    from synth.envs.errors import SandboxError

    monkeypatch.setattr(jail, "_bwrap", lambda: None)
    jail.jail_problem.cache_clear()
    try:
        with pytest.raises(SandboxError, match="bubblewrap \\(bwrap\\) is not installed"):
            _one("return 1")
    finally:
        monkeypatch.undo()
        jail.jail_problem.cache_clear()
