"""The user's servers live: a real stdio git MCP server (mcp-server-git from PyPI) over a scratch repository."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from synth.dataset import synthesize
from synth.models import Recipe
from synth.userservers import ServerQuarantined, UserServers

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
    with UserServers([git_command(repo)]) as live:
        docs = live.docs()
        (server, tools), = docs.items()
        names = {d.name for d in tools}
        assert {"git_status", "git_log", "git_show"} <= names
        status = live.call(server, (0, 0), "git_status", {"repo_path": str(repo)})
        log = live.call(server, (0, 0), "git_log", {"repo_path": str(repo)})
        assert "untracked-okapi.txt" in json.dumps(status) and "zebra-catalogue" in json.dumps(log)
        assert live.connects == 1 and live.calls == 2


def test_synthesis_executes_the_servers_tools_live(repo):
    recipe = Recipe(task_count=24, tool_diversity=19, domains=("travel",), seed=0, error_rate=0.0,
                    servers=(git_command(repo),), arg_values={"repo_path": [str(repo)]})
    live = UserServers(recipe.servers).open()
    try:
        res = synthesize(recipe, user_servers=live)
    finally:
        live.close()
    m = res.manifest
    assert "mcp-git" in m.servers and any(t.startswith("mcp-git.") for t in m.tools)
    rows = [json.loads(r) for r in res.rows]
    git_rows = [r for r in rows if json.loads(r["meta"])["server"] == "mcp-git"]
    assert git_rows and all(json.loads(r["meta"])["db_id"] == "mcp-git:live" for r in git_rows)
    outputs = " ".join(msg["content"] for r in git_rows for msg in r["messages"] if msg["role"] == "tool")
    assert "zebra-catalogue" in outputs or "untracked-okapi.txt" in outputs  # what is really in the repository
    assert live.connects == 1 and live.calls >= len(git_rows)  # one session for every trajectory


def test_a_server_that_exits_at_once_is_quarantined_with_its_stderr(tmp_path):
    with pytest.raises(ServerQuarantined) as err:
        UserServers([git_command(tmp_path / "missing")]).open()
    msg = str(err.value)
    assert "\n" not in msg and "quarantined" in msg and "does not exist" in msg  # the server's own stderr line
    crash = f"{sys.executable} -c \"import sys; sys.stderr.write('license key expired\\n'); sys.exit(3)\""
    with pytest.raises(ServerQuarantined, match="license key expired"):
        UserServers([crash]).open()
