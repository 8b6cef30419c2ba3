"""The user's servers live: a real stdio git MCP server (mcp-server-git from PyPI) over a scratch repository."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys

import pytest

from synth.dataset import synthesize
from synth.models import Recipe
from synth.errors import UsageError
from synth.userservers import ServerQuarantined, UserServers
from toolscale.config import UserServer

pytestmark = pytest.mark.integration


def git_command(repo) -> str:
    return f"{sys.executable} -m mcp_server_git --repository {repo}"


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """A scratch repository: one commit with a distinctive message, one untracked file."""
    d = tmp_path_factory.mktemp("scratch") / "repo"
    d.mkdir()
    run = lambda *a: subprocess.run(["git", *a], cwd=d, check=True, capture_output=True)  # noqa: E731
    run("init", "-q", "-b", "main")
    run("config", "user.email", "t@example.com")
    run("config", "user.name", "Test")
    (d / "README.md").write_text("zebra-catalogue readme\n")
    run("add", "README.md")
    run("commit", "-q", "-m", "add the zebra-catalogue readme")
    (d / "untracked-okapi.txt").write_text("draft\n")
    return d


def test_tools_collected_and_called_over_one_session(repo):
    with UserServers([git_command(repo)], arg_values={"repo_path": [str(repo)]}) as live:
        docs = live.docs()
        (server, tools), = docs.items()
        names = {d.name for d in tools}
        assert {"git_status", "git_log", "git_show"} <= names
        assert not names & {"git_commit", "git_reset", "git_checkout", "git_add"}  # write tools left out...
        assert any("git_reset" in w and "scratch" in w for w in live.warnings)  # ...with a warning naming them
        calls = live.calls
        status = live.call(server, (0, 0), "git_status", {"repo_path": str(repo)})
        log = live.call(server, (0, 0), "git_log", {"repo_path": str(repo)})
        assert "untracked-okapi.txt" in json.dumps(status) and "zebra-catalogue" in json.dumps(log)
        assert live.connects == 1 and live.calls == calls + 2
        seen = live.observed(server)  # what its read-only tools returned, by field
        assert "untracked-okapi.txt" in seen["untracked_files"] and "main" in seen["branch"]


def _digest(root) -> str:
    h = hashlib.sha256()
    for dirpath, dirs, files in sorted(os.walk(root)):
        dirs.sort()
        for f in sorted(files):
            h.update(os.path.join(dirpath, f).encode())
            h.update(open(os.path.join(dirpath, f), "rb").read())
    return h.hexdigest()


@pytest.mark.slow
def test_write_tools_run_on_a_scratch_copy_and_the_repository_stays_byte_identical(repo):
    """A synthesis that calls git_add, git_commit, git_checkout... on the user's repository: they run on a
    per-job copy, the rows name the repository, and every byte of the repository (.git included) is
    unchanged. About 20 s (a live server over 60 tasks)."""
    before = _digest(repo)
    entry = UserServer(command=git_command(repo), scratch=f"copy:{repo}")
    recipe = Recipe(task_count=60, tool_diversity=12, domains=("travel",), seed=0, servers=(entry,),
                    arg_values={"repo_path": [str(repo)]})
    with UserServers(recipe.servers, arg_values=recipe.arg_values) as live:
        res = synthesize(recipe, user_servers=live)
        writes = {d.name for d in live.docs()["mcp-git"] if d.read_only is False}
    rows = [json.loads(r) for r in res.rows if json.loads(json.loads(r)["meta"])["server"] == "mcp-git"]
    called = {c["function"]["name"] for r in rows for m in r["messages"] for c in (m["tool_calls"] or [])}
    assert called & writes, "no write tool was used"
    text = json.dumps(rows)
    assert str(repo) in text and "toolscale-scratch" not in text  # results name the repository, not the copy
    assert _digest(repo) == before
    multi = sum(len(json.loads(r["meta"])["chain"]) >= 2 for r in rows)
    assert multi / len(rows) >= 0.3  # chains of the user's own tools, edges from what they returned


def test_synthesis_executes_the_servers_tools_live(repo):
    recipe = Recipe(task_count=24, tool_diversity=12, domains=("travel",), seed=2, error_rate=0.0,
                    servers=(git_command(repo),), arg_values={"repo_path": [str(repo)]})
    live = UserServers(recipe.servers, arg_values=recipe.arg_values).open()
    try:
        res = synthesize(recipe, user_servers=live)
    finally:
        live.close()
    m = res.manifest
    assert m.servers[0] == "mcp-git" and any(t.startswith("mcp-git.") for t in m.tools)  # first, never cut
    rows = [json.loads(r) for r in res.rows]
    git_rows = [r for r in rows if json.loads(r["meta"])["server"] == "mcp-git"]
    assert git_rows and all(json.loads(r["meta"])["db_id"] == "mcp-git:live" for r in git_rows)
    outputs = " ".join(msg["content"] for r in git_rows for msg in r["messages"] if msg["role"] == "tool")
    assert "zebra-catalogue" in outputs or "untracked-okapi.txt" in outputs  # what is really in the repository
    assert not any("-" in str(v) and re.fullmatch(r"[a-z]+-\d{3}", str(v)) for r in git_rows
                   for msg in r["messages"] for c in (msg["tool_calls"] or [])
                   for v in json.loads(c["function"]["arguments"]).values())  # no generated "branch-249"
    assert live.connects == 1 and any("left out" in w for w in m.warnings)


def test_a_scratch_path_that_does_not_exist_is_one_line(tmp_path):
    entry = UserServer(command=f"{sys.executable} -m mcp_server_git --repository {tmp_path / 'nope'}",
                       scratch=f"copy:{tmp_path / 'nope'}")
    with pytest.raises(UsageError, match="scratch path .* does not exist") as err:
        UserServers([entry]).open()
    assert "\n" not in str(err.value)


def test_an_idle_server_is_a_warning_and_an_error_with_strict(repo, tmp_path):
    from synth.dataset import build_dataset
    from synth.errors import RecipeError

    recipe = Recipe(task_count=3, tool_diversity=12, domains=("travel",), seed=0, servers=(git_command(repo),),
                    arg_values={"repo_path": [str(repo)]}, judge_threshold=1.0)  # nothing can be kept
    with UserServers(recipe.servers, arg_values=recipe.arg_values) as live:
        m = build_dataset(recipe, tmp_path / "a", user_servers=live)
        assert any(w.startswith("server mcp-git contributed no task") for w in m.warnings)
        with pytest.raises(RecipeError, match="--strict: server mcp-git contributed no task"):
            build_dataset(recipe, tmp_path / "b", user_servers=live, strict=True)
    assert not (tmp_path / "b").exists()


def test_a_server_that_exits_at_once_is_quarantined_with_its_stderr(tmp_path):
    with pytest.raises(ServerQuarantined) as err:
        UserServers([git_command(tmp_path / "missing")]).open()
    msg = str(err.value)
    assert "\n" not in msg and "quarantined" in msg and "does not exist" in msg  # the server's own stderr line
    crash = f"{sys.executable} -c \"import sys; sys.stderr.write('license key expired\\n'); sys.exit(3)\""
    with pytest.raises(ServerQuarantined, match="license key expired"):
        UserServers([crash]).open()
