"""grid/staging.py: an import killed mid-way leaves its staging folder, and the next import removes it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from grid.staging import STAGE_PREFIX, sweep_stale_stages

REPO = Path(__file__).resolve().parents[2]


def _owner(tmp: Path, then: str) -> subprocess.Popen:
    """A process that makes a staging folder under ``tmp``, prints it, then runs ``then``."""
    code = textwrap.dedent(f"""
        import os, signal, sys, time
        from grid.staging import new_stage
        print(new_stage(), flush=True)
        {then}
    """)
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)


def test_a_killed_imports_folder_is_removed_and_a_live_ones_kept(tmp_path) -> None:
    dead = _owner(tmp_path, "os.kill(os.getpid(), signal.SIGKILL)")
    dead_folder = Path(dead.stdout.readline().strip())
    assert dead.wait() == -signal.SIGKILL and dead_folder.is_dir()  # what a kill -9 used to leave behind
    live = _owner(tmp_path, "time.sleep(60)")
    try:
        live_folder = Path(live.stdout.readline().strip())
        assert not dead_folder.exists()  # the next import's start removed it
        orphan = tmp_path / (STAGE_PREFIX + "old-format")  # no lock file, older than the grace period
        orphan.mkdir()
        os.utime(orphan, (0, 0))
        fresh = tmp_path / (STAGE_PREFIX + "being-made")  # no lock file yet: another import creating it
        fresh.mkdir()
        removed = sweep_stale_stages(tmp_path)
        assert removed == [str(orphan)]
        assert live_folder.is_dir() and fresh.is_dir()
    finally:
        live.kill()
        live.wait()
    assert sweep_stale_stages(tmp_path) == [str(live_folder)]
