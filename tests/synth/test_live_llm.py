"""A new user's run: a real stdio git MCP server (mcp-server-git, from PyPI) over a scratch repository,
driven live by the LLM policy, a tiny model trained here and served by ``toolscale serve-model``.

The model is trained in seconds on conversations that call ``git_branch`` on the repository and then
answer; at synthesis it writes real generations that the policy parses, executes on the live server and
the judge scores. The trajectories' tool outputs must hold what is really in that repository (its
branch name), and every task must end kept or rejected under a counted reason.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from synth.dataset import build_dataset
from synth.models import Recipe, RejectedRow
from synth.rollout import message
from synth.userservers import UserServers

pytestmark = [pytest.mark.integration, pytest.mark.slow]

BRANCH = "zebra-okapi-branch"
"""The scratch repository's only branch: a name that can only come from the repository."""


def _recipe(repo, **kw) -> Recipe:
    # seed 0 orders mcp-git first, so tool_diversity = 3 is three git tools (git_add, git_branch, git_checkout)
    return Recipe(task_count=kw.pop("task_count", 6), tool_diversity=3, domains=("travel",), seed=0, error_rate=0.0,
                  defect_rate=0.0, servers=(f"{sys.executable} -m mcp_server_git --repository {repo}",),
                  arg_values={"repo_path": [str(repo)]}, **kw)


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    d = tmp_path_factory.mktemp("scratch") / "repo"
    d.mkdir()
    run = lambda *a: subprocess.run(["git", *a], cwd=d, check=True, capture_output=True)  # noqa: E731
    run("init", "-q", "-b", BRANCH)
    run("config", "user.email", "t@example.com")
    run("config", "user.name", "Test")
    (d / "README.md").write_text("scratch\n")
    run("add", "README.md")
    run("commit", "-q", "-m", "scratch")
    return d


@pytest.fixture(scope="module")
def git_agent(repo, tmp_path_factory):
    """A tiny model that answers any request about the repository with a git_branch call, then a summary.

    Its training conversations are the template synthesis's queries over the live server, with the
    server's real git_branch output; about a minute on one core.
    """
    from toolscale.config import ModelSize
    from train.sft import train_sft

    recipe = _recipe(repo, task_count=8, judge_threshold=0.0)
    args = {"repo_path": str(repo), "branch_type": "local"}
    root = tmp_path_factory.mktemp("agent")
    with UserServers(recipe.servers) as live:
        build_dataset(recipe, root / "template", user_servers=live)
        out = live.call("mcp-git", (0, 0), "git_branch", args)
    rows = []
    for line in (root / "template" / "train.jsonl").read_text().splitlines():
        r = json.loads(line)
        call = {"id": "call_1", "type": "function", "function": {"name": "git_branch", "arguments": json.dumps(args)}}
        rows.append({"messages": [r["messages"][0], r["messages"][1],
                                  message("assistant", "I will call git_branch.", tool_calls=[call]),
                                  message("tool", json.dumps(out, sort_keys=True), tool_call_id="call_1",
                                          name="git_branch"),
                                  message("assistant", "git_branch lists the branches of the repository.")],
                     "tools": r["tools"], "meta": r["meta"]})
    assert rows
    (root / "data").mkdir()
    (root / "data" / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    size = ModelSize(name="git-agent", hidden_size=96, num_layers=2, num_heads=2, vocab_size=512, max_seq_len=1024,
                     max_steps=200, batch_size=4, learning_rate=5e-3)
    train_sft(root / "data", size, root / "model", threads=1, save_steps=0, resume=False)
    return root / "model"


def test_llm_policy_drives_the_live_git_server(repo, git_agent, model_server, tmp_path):
    with model_server(git_agent, "git-agent") as served:
        role = {"base_url": served.url, "model": served.model, "max_tokens": 64, "timeout_s": 120.0,
                "concurrency": 1}
        recipe = _recipe(repo, llm={"policy": role})
        live = UserServers(recipe.servers).open()
        try:
            m = build_dataset(recipe, tmp_path / "out", user_servers=live, llm_cache=tmp_path / "cache")
        finally:
            live.close()
    assert m.roles["policy"] == "llm" and live.connects == 1
    kept = [json.loads(x) for x in (tmp_path / "out" / "train.jsonl").read_text().splitlines()]
    rejected = [RejectedRow.model_validate_json(x)
                for x in (tmp_path / "out" / "rejected.jsonl").read_text().splitlines()]
    assert len(kept) + len(rejected) == m.counts["tasks_planned"]
    assert all(r.reasons for r in rejected)
    assert kept, f"no trajectory kept; rejections {m.rejections}"
    for row in kept:
        calls = [c for msg in row["messages"] for c in (msg["tool_calls"] or [])]
        outputs = [msg["content"] for msg in row["messages"] if msg["role"] == "tool"]
        assert calls and all(c["function"]["name"] in {"git_add", "git_branch", "git_checkout"} for c in calls)
        assert any(BRANCH in o for o in outputs), outputs  # what is really in the repository
    assert m.llm["policy"].requests >= len(kept) * 2  # a tool-call turn and an answer turn each
