"""The code dataset builder: golden trajectories whose tests pass in the jail, labels, rejections with reasons."""

from __future__ import annotations

import json

import pytest

from synth.code.dataset import build_code_dataset, synthesize_code
from synth.code.models import CodeRecipe, CodeRejected
from synth.code.render import module_path
from synth.code.runner import Suite, run_suites
from synth.code.trajectory import template_coder
from synth.envs.models import SandboxLimits


def _rows(folder):
    return [json.loads(line) for line in (folder / "train.jsonl").read_text().splitlines()]


def _final_module(row) -> str:
    """The module a row's episode leaves behind, rebuilt from its write_file calls alone."""
    text = ""
    for m in row["messages"]:
        for c in m["tool_calls"] or []:
            if c["function"]["name"] == "write_file":
                args = json.loads(c["function"]["arguments"])
                text = text + args["content"] if args.get("append") else args["content"]
    return text


def test_every_kept_golden_trajectory_passes_its_hidden_tests_when_replayed_in_the_jail(tmp_path):
    recipe = CodeRecipe(task_count=24, tool_diversity=12, spec_dependency=0.7, support_depth=2, error_rate=0.5,
                        seed=4)
    m = build_code_dataset(recipe, tmp_path)
    rows = _rows(tmp_path)
    assert m.counts["accepted"] == len(rows) == 24 and m.measured["golden_pass_rate"] == 1.0
    from synth.code.tasks import plan_tasks
    from synth.code.render import tests_source as render_tests

    tasks = {p.task.task_id: p.task for p in plan_tasks(recipe)}
    suites = []
    for row in rows:
        meta = json.loads(row["meta"])
        task = tasks[meta["task_id"]]
        assert row["messages"][-2]["content"].startswith(f"ran {len(task.tests)} tests: {len(task.tests)} passed")
        suites.append(Suite(task.module, _final_module(row), render_tests(task)))
    results = run_suites(suites)
    assert all(results[s.key].all_passed for s in suites)  # 100%: every kept one replayed


def test_labels_and_measured_axes(tmp_path):
    m = build_code_dataset(CodeRecipe(task_count=40, tool_diversity=8, spec_dependency=1.0, defect_rate=0.5,
                                      repair_rate=0.0, error_rate=0.0, seed=1), tmp_path)
    rows = _rows(tmp_path)
    metas = [json.loads(r["meta"]) for r in rows]
    writes = [c["id"] for r in rows for msg in r["messages"] for c in msg["tool_calls"] or []
              if c["function"]["name"] == "write_file"]
    nonderiv = [c for meta in metas for c in meta["nonderivable_calls"]]
    assert set(nonderiv) <= set(writes) and 0 < len(nonderiv) < len(writes)
    assert m.measured["derivable_share"] == pytest.approx(1 - len(nonderiv) / len(writes), abs=1e-6)
    assert m.measured["spec_dependency"] > 0.85 and m.measured["tool_diversity"] <= 8
    for r, meta in zip(rows, metas):  # a non-derivable write is one whose spec was never read before it
        read = set()
        for msg in r["messages"]:
            for c in msg["tool_calls"] or []:
                args = json.loads(c["function"]["arguments"])
                if c["function"]["name"] == "read_file":
                    read.add(args["path"].rsplit("/", 1)[-1].removesuffix(".md"))
                if c["function"]["name"] == "write_file":
                    name = args["content"].split("def ", 1)[1].split("(", 1)[0]
                    assert (c["id"] in meta["nonderivable_calls"]) == (name not in read)
    repaired = build_code_dataset(CodeRecipe(task_count=40, tool_diversity=8, spec_dependency=1.0, defect_rate=0.5,
                                             repair_rate=1.0, error_rate=0.0, seed=1), tmp_path / "r")
    assert repaired.measured["derivable_share"] == 1.0 and repaired.measured["repair_rate"] == 1.0


def test_same_recipe_same_bytes(tmp_path):
    r = CodeRecipe(task_count=10, seed=6)
    a, b = build_code_dataset(r, tmp_path / "a"), build_code_dataset(r, tmp_path / "b")
    assert a.dataset_id == b.dataset_id and a.files == b.files


def _bad_coder(task, index, buggy):
    """Writes one task's code to hang, another's to open a network socket, a third's wrong; the rest as usual."""
    src = template_coder(task, index, buggy)
    if index != 0:
        return src
    sig = next(line for line in src.splitlines() if line.startswith("def "))[4:].rstrip(":")
    if task.task_id.endswith("0"):
        return f"def {sig}:\n    while True:\n        pass\n"
    if task.task_id.endswith("1"):
        return f"def {sig}:\n    import socket\n    socket.create_connection(('10.0.0.1', 80), timeout=1)\n"
    if task.task_id.endswith("2"):
        return f"def {sig}:\n    return None\n"
    return src


def test_code_that_hangs_or_escapes_is_killed_by_the_jail_and_its_task_rejected_with_the_reason():
    """About 10 s: the hanging module is stopped by its CPU limit once per split of its batch."""
    recipe = CodeRecipe(task_count=4, tool_diversity=10, error_rate=0.0, seed=2)
    limits = SandboxLimits(cpu_s=1.0, wall_s=20.0)
    out = synthesize_code(recipe, coder=_bad_coder, limits=limits)
    rejected = {r.task_id: r for r in (CodeRejected.model_validate_json(x) for x in out.rejected)}
    assert set(rejected) == {"code-00000", "code-00001", "code-00002"}
    assert rejected["code-00000"].reasons == ["jail_cpu_limit"] and "CPU" in rejected["code-00000"].detail
    assert rejected["code-00001"].reasons == ["jail_violation"] and "network" in rejected["code-00001"].detail
    assert rejected["code-00002"].reasons == ["tests_fail"] and "got None" in rejected["code-00002"].detail
    assert out.manifest.counts["accepted"] == 1 and out.manifest.rejections == {
        "jail_cpu_limit": 1, "jail_violation": 1, "tests_fail": 1}
    assert all(r.stage == "jail" for r in rejected.values())


@pytest.mark.integration
def test_the_stdio_mcp_server_gives_the_same_dataset_as_the_in_process_workspace(tmp_path):
    """Every tool call of every episode goes over stdio MCP (run_tests jailed by the server itself). The
    server's start is most of the time (the MCP SDK's imports, 3-30 s on a busy 2-core machine)."""
    recipe = CodeRecipe(task_count=4, tool_diversity=10, error_rate=1.0, seed=8)
    build_code_dataset(recipe, tmp_path / "mem")
    build_code_dataset(recipe.model_copy(update={"backend": "live"}), tmp_path / "mcp")
    assert (tmp_path / "mem" / "train.jsonl").read_bytes() == (tmp_path / "mcp" / "train.jsonl").read_bytes()
    rows = _rows(tmp_path / "mcp")
    assert any("FAILED" in m["content"] for r in rows for m in r["messages"] if m["role"] == "tool")


def test_an_unwritable_output_is_one_error(tmp_path):
    (tmp_path / "f").write_text("x")
    from synth.errors import RecipeError

    with pytest.raises(RecipeError, match="exists and is not a directory"):
        build_code_dataset(CodeRecipe(task_count=2), tmp_path / "f")
    assert module_path  # the path helper the rows use
