"""Knobs -> dataset: format, determinism, and knobs moving the measured axes."""

from __future__ import annotations

import json

import pytest

from synth.dataset import build_dataset, synthesize
from synth.errors import RecipeError
from synth.models import Manifest, Recipe, TrajectoryMeta, TrajectoryRow
from synth.servers.db import HELDOUT_DOMAINS

BASE = dict(task_count=96, tool_diversity=16, seed=1)


def _m(**kw) -> Manifest:
    return synthesize(Recipe(**{**BASE, **kw})).manifest


def test_rows_follow_the_pinned_format(tmp_path):
    m = build_dataset(Recipe(**BASE), tmp_path)
    lines = (tmp_path / "train.jsonl").read_text().splitlines()
    assert len(lines) == m.counts["accepted"] > 0
    saved = Manifest.model_validate_json((tmp_path / "manifest.json").read_text())
    assert saved == m and len(m.files["train.jsonl"]) == 64
    for line in lines:
        raw = json.loads(line)
        assert set(raw) == {"messages", "tools", "meta"} and isinstance(raw["tools"], str)
        row = TrajectoryRow.model_validate(raw)
        meta = TrajectoryMeta.model_validate_json(row.meta)
        assert meta.structure in ("chain", "fan-in", "fan-out", "parallel")
        tools = {t["function"]["name"] for t in json.loads(row.tools)}
        ids = set()
        for msg in raw["messages"]:
            assert set(msg) == {"role", "content", "tool_calls", "tool_call_id", "name"}
            for c in msg["tool_calls"] or []:
                assert c["function"]["name"] in tools and isinstance(json.loads(c["function"]["arguments"]), dict)
                ids.add(c["id"])
            if msg["role"] == "tool":
                assert msg["tool_call_id"] in ids
        assert set(meta.nonderivable_calls) <= ids and set(meta.repaired_calls) <= ids
        assert raw["messages"][-1]["role"] == "assistant" and not raw["messages"][-1]["tool_calls"]


def test_readable_by_datasets(tmp_path):
    from datasets import load_dataset

    build_dataset(Recipe(task_count=32, tool_diversity=8, seed=2), tmp_path)
    ds = load_dataset("json", data_files=str(tmp_path / "train.jsonl"), split="train")
    first = ds[0]["messages"]
    call = next(m for m in first if m["tool_calls"])["tool_calls"][0]
    assert isinstance(call["function"]["arguments"], str) and set(call["function"]) == {"name", "arguments"}


def test_same_recipe_same_bytes(tmp_path):
    r = Recipe(**BASE, coverage_quota=0.2, support_depth=3, repair_rate=0.5)
    build_dataset(r, tmp_path / "a")
    build_dataset(r, tmp_path / "b")
    for f in ("train.jsonl", "manifest.json"):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes()
    build_dataset(r.model_copy(update={"seed": 2}), tmp_path / "c")
    assert (tmp_path / "a" / "train.jsonl").read_bytes() != (tmp_path / "c" / "train.jsonl").read_bytes()


def test_more_tool_diversity_more_distinct_tools():
    got = [_m(tool_diversity=t, task_count=160).measured["tool_diversity"] for t in (4, 12, 36)]
    assert got[0] < got[1] < got[2] and got[0] <= 4


def test_higher_repair_rate_higher_derivable_share():
    shares = [_m(repair_rate=r, defect_rate=0.4, task_count=160).measured["derivable_share"] for r in (0.0, 0.5, 1.0)]
    assert shares[0] < shares[1] < shares[2] == 1.0


def test_defect_rate_zero_gives_no_nonderivable_labels():
    m = _m(defect_rate=0.0)
    assert m.counts["nonderivable_calls"] == 0 and m.measured["derivable_share"] == 1.0


def test_coverage_quota_raises_min_structure_share():
    low, high = _m(coverage_quota=0.0, task_count=200), _m(coverage_quota=0.2, task_count=200)
    assert high.measured["coverage_quota"] > low.measured["coverage_quota"]
    assert high.measured["coverage_quota"] >= 0.15
    assert all(high.structure_counts[s] > 0 for s in ("chain", "fan-in", "fan-out", "parallel"))


def test_support_depth_bounds_and_moves_measured_depth():
    d1, d4 = _m(support_depth=1, task_count=160), _m(support_depth=4, task_count=160)
    assert d1.measured["support_depth"] <= 1 and d4.measured["support_depth"] <= 4
    assert d4.measured["mean_support_depth"] > d1.measured["mean_support_depth"]


def test_db_diversity_counts_instances():
    assert _m(db_diversity=1).measured["db_diversity"] == 1.0
    assert _m(db_diversity=4).measured["db_diversity"] == 4.0


def test_heldout_servers_never_in_training_data():
    m = _m(tool_diversity=50, task_count=200)
    assert not set(m.servers) & set(HELDOUT_DOMAINS)
    assert not any(t.split(".")[0] in HELDOUT_DOMAINS for t in m.tools)


def test_judge_that_raises_rejects_everything(tmp_path):
    class Broken:
        def score(self, messages):
            raise TimeoutError("judge timed out")

    m = build_dataset(Recipe(task_count=16, tool_diversity=8), tmp_path, judge=Broken())
    assert m.counts["accepted"] == 0 and m.judge_failure_rate == 1.0
    assert m.rejections == {"judge_error:TimeoutError": m.counts["trajectories"]}
    assert (tmp_path / "train.jsonl").read_text() == ""


@pytest.mark.parametrize("kw,match", [
    (dict(tool_diversity=500), "tool_diversity = 500 exceeds"),
    (dict(domains=("mars",)), "unknown domain 'mars'"),
    (dict(domains=(HELDOUT_DOMAINS[0],)), "held out for evaluation"),
])
def test_impossible_recipes_error_and_keep_old_files(tmp_path, kw, match):
    (tmp_path / "train.jsonl").write_text("old\n")
    with pytest.raises(RecipeError, match=match):
        build_dataset(Recipe(**{**BASE, **kw}), tmp_path)
    assert (tmp_path / "train.jsonl").read_text() == "old\n"


def test_from_axes_unknown_knob():
    with pytest.raises(RecipeError, match="did you mean 'task_count'"):
        Recipe.from_axes({"task_cont": 3})
    r = Recipe.from_axes({"tool_diversity": 11.6, "support_depth": 2.2, "repair_rate": 0.5}, seed=4,
                         error_rate=0.1, servers=[])
    assert (r.tool_diversity, r.support_depth, r.seed, r.error_rate) == (12, 2, 4, 0.1)


def test_narratives_written_on_request(tmp_path):
    m = build_dataset(Recipe(task_count=32, tool_diversity=10, narratives=True), tmp_path)
    docs = [json.loads(x) for x in (tmp_path / "narratives.jsonl").read_text().splitlines()]
    kinds = {d["kind"] for d in docs}
    assert {"ecosystem", "trajectory"} <= kinds and "narratives.jsonl" in m.files
    eco = next(d["text"] for d in docs if d["kind"] == "ecosystem")
    assert "can be passed as" in eco


def test_config_heldout_servers_respected():
    m = _m(heldout_servers=("travel", "shop"), tool_diversity=40, task_count=64)
    assert not {"travel", "shop"} & set(m.servers) and "weather" in m.servers
    with pytest.raises(RecipeError, match="unknown held-out server 'mars'"):
        _m(heldout_servers=("mars",))


# ---- rejected.jsonl and the LLM roles --------------------------------------------------------------------

def _judge_script(score: int | None):
    """A scripted rubric-judge endpoint: every dimension gets ``score`` 1-5 (None: a reply without a score)."""
    from synth.llm.scripted import reply

    text = "no idea" if score is None else json.dumps({"score": score})
    return lambda n, body: reply(text, prompt_tokens=2000, completion_tokens=100)


def _llm_recipe(url: str, **kw) -> Recipe:
    judge = {"base_url": url, "model": "scripted", "concurrency": 2, "price_in": 1.0, "price_out": 4.0}
    return Recipe(task_count=12, tool_diversity=8, seed=3, llm={"judge": judge}, **kw)


def test_rejected_rows_give_every_rejection_its_reasons(tmp_path):
    from synth.models import RejectedRow

    m = build_dataset(Recipe(task_count=48, tool_diversity=8, seed=1, judge_threshold=0.9), tmp_path)
    rows = [RejectedRow.model_validate_json(x) for x in (tmp_path / "rejected.jsonl").read_text().splitlines()]
    assert len(rows) == m.counts["rejected"] > 0 and "rejected.jsonl" in m.files
    counted: dict[str, int] = {}
    for r in rows:
        assert r.reasons and r.task_id.startswith("t")
        counted[r.reasons[0]] = counted.get(r.reasons[0], 0) + 1
    assert counted == m.rejections
    judged = [r for r in rows if r.stage == "judge"]
    assert judged and all(r.messages and r.judge["mean"] < 0.9 for r in judged)
    assert m.llm == {}  # no LLM role configured: nothing to account


def test_llm_judge_usage_per_role_and_a_cached_rerun_costs_nothing(tmp_path):
    from synth.llm.scripted import ScriptedEndpoint

    with ScriptedEndpoint(_judge_script(5)) as ep:
        recipe = _llm_recipe(ep.url)
        m = build_dataset(recipe, tmp_path / "a", llm_cache=tmp_path / "cache")
        first = ep.requests
        m2 = build_dataset(recipe, tmp_path / "b", llm_cache=tmp_path / "cache")
        assert ep.requests == first  # the rerun sent no request
    u, u2 = m.llm["judge"], m2.llm["judge"]
    judged = m.counts["trajectories"]  # every rolled-out trajectory is scored (rule failures included)
    assert first == u.requests == 7 * judged > 0 and u.cache_hits == 0  # one rubric prompt per dimension
    assert (u2.requests, u2.cache_hits, u2.dollars_spent) == (0, u.requests, 0.0)
    per_reply = 2000 * 1.0 / 1e6 + 100 * 4.0 / 1e6
    assert u.dollars == pytest.approx(u.requests * per_reply) == u2.dollars
    assert u.dollars_per_accepted == pytest.approx(u.dollars / m.counts["accepted"])
    for name in ("train.jsonl", "rejected.jsonl"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    assert m.roles["judge"] == "llm" and m.roles["policy"] == "template"
    assert all(json.loads(json.loads(x)["meta"])["judge"]["mean"] == 1.0
               for x in (tmp_path / "a" / "train.jsonl").read_text().splitlines())
    assert m.dataset_id == m2.dataset_id != build_dataset(Recipe(task_count=12, tool_diversity=8, seed=3),
                                                          tmp_path / "c").dataset_id


def test_llm_judge_without_usable_scores_rejects_everything_with_a_reason(tmp_path):
    from synth.llm.scripted import ScriptedEndpoint

    with ScriptedEndpoint(_judge_script(None)) as ep:
        m = build_dataset(_llm_recipe(ep.url), tmp_path, llm_cache=tmp_path / "cache")
    assert m.counts["accepted"] == 0 and m.rejections.get("judge_error:JudgeError", 0) > 0
    assert m.judge_failure_rate == 1.0 and m.llm["judge"].dollars_per_accepted is None


def test_llm_endpoint_down_fails_fast_and_writes_nothing(tmp_path):
    import socket
    import time

    from synth.errors import LLMEndpointError

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    t = time.perf_counter()
    with pytest.raises(LLMEndpointError, match=url):
        build_dataset(_llm_recipe(url), tmp_path / "out", llm_cache=tmp_path / "cache")
    assert time.perf_counter() - t < 5 and not (tmp_path / "out").exists()


@pytest.mark.integration
def test_whole_llm_path_on_real_generations_fails_closed(served_model, tmp_path):
    """Policy and judge played by a real (tiny, weak) model behind serve-model: every task is kept only
    through the judge's parsed scores, or rejected under a counted reason; a rerun is served by the cache."""
    from synth.models import RejectedRow

    role = {"base_url": served_model.url, "model": served_model.model, "max_tokens": 48, "timeout_s": 120.0,
            "concurrency": 1, "price_in": 0.5, "price_out": 2.0}
    recipe = Recipe(task_count=6, tool_diversity=4, seed=0, domains=("travel",), error_rate=0.0,
                    llm={"policy": role, "judge": role})
    m = build_dataset(recipe, tmp_path / "a", llm_cache=tmp_path / "cache")
    assert m.roles["policy"] == m.roles["judge"] == "llm"
    rows = [RejectedRow.model_validate_json(x) for x in (tmp_path / "a" / "rejected.jsonl").read_text().splitlines()]
    assert m.counts["accepted"] + len(rows) == m.counts["tasks_planned"]
    assert all(r.reasons[0].startswith(("policy:", "judge_error:", "below_threshold", "exceeds_support_depth"))
               for r in rows), [r.reasons for r in rows]
    for line in (tmp_path / "a" / "train.jsonl").read_text().splitlines():
        assert json.loads(json.loads(line)["meta"])["judge"]["mean"] >= recipe.judge_threshold
    u = m.llm["policy"]
    assert u.requests > 0 and u.tokens_in > 0 and u.tokens_out > 0 and u.dollars > 0
    again = build_dataset(recipe, tmp_path / "b", llm_cache=tmp_path / "cache")
    assert all(v.requests == 0 and v.cache_hits == m.llm[k].requests for k, v in again.llm.items())
    for name in ("train.jsonl", "rejected.jsonl"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


@pytest.mark.integration
def test_llm_chain_check_and_task_writer_on_real_generations_fail_closed(served_model, tmp_path):
    """ASTRA's chain-coherence check and the task writer played by a real (tiny, weak) model behind
    serve-model: every chain is sent once and kept only on a parsed score at or above the threshold;
    the rest are rejected under a counted chain reason, and the manifest counts every request."""
    from synth.models import RejectedRow

    role = {"base_url": served_model.url, "model": served_model.model, "max_tokens": 48, "timeout_s": 120.0,
            "concurrency": 1}
    recipe = Recipe(task_count=6, tool_diversity=4, seed=0, domains=("travel",), error_rate=0.0,
                    llm={"task_writer": role})
    m = build_dataset(recipe, tmp_path / "a", llm_cache=tmp_path / "cache")
    assert m.roles["task_writer"] == "llm"
    checks = m.role_stats["chain_check"]
    rows = [RejectedRow.model_validate_json(x) for x in (tmp_path / "a" / "rejected.jsonl").read_text().splitlines()]
    chain_rejects = [r for r in rows if r.reasons[0].startswith("chain:")]
    assert checks["requests"] >= 1 and checks["rejected"] <= checks["requests"]
    assert {r.reasons[0] for r in chain_rejects} <= {"chain:incoherent", "chain:gate_error"}
    # a rejection per rejected distinct chain at least (a verdict is remembered per chain), never a silent pass
    assert (checks["rejected"] == 0) == (not chain_rejects)
    assert m.counts["accepted"] + len(rows) == m.counts["tasks_planned"]
    assert m.llm["task_writer"].requests >= checks["requests"]
