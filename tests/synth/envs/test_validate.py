"""synth/envs/validate.py: the final-artifact replay catches both defects of the public ASTRA release.

Fixtures are regenerated with ``.venv/bin/python tests/synth/envs/fixtures/make_fixtures.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from synth.envs.io import load_envs
from synth.envs.models import SandboxLimits
from synth.envs.validate import arguments_problems, check_file, check_sample

pytestmark = pytest.mark.integration

FIX = Path(__file__).parent / "fixtures"
FAST = SandboxLimits(cpu_s=1, wall_s=30, memory_mb=256)


def test_fixed_baggage_row_passes():
    (res,) = check_file(FIX / "astra_baggage_fixed.jsonl", limits=FAST)
    assert res.ok, res.reasons
    assert res.isolation == "namespaces"


def test_duplicate_payment_processor_is_caught():
    rows = [json.loads(line) for line in (FIX / "astra_duplicate_name.jsonl").read_text().splitlines()]
    names = [t["function"]["name"] for t in rows[0]["tools"]]
    assert len(names) == 9 and len(set(names)) == 8     # the released shape: 9 schemas, 8 unique names
    (res,) = check_file(FIX / "astra_duplicate_name.jsonl", limits=FAST)
    assert not res.ok
    assert any(r.startswith("(a) duplicate tool name 'payment_processor'") for r in res.reasons)


def test_random_transaction_id_is_caught():
    (res,) = check_file(FIX / "astra_random_txn.jsonl", limits=FAST)
    assert not res.ok
    assert any(r.startswith("(c) target q4: payment_processor is not deterministic") for r in res.reasons)
    assert any(r.startswith("(b) target q4") for r in res.reasons)


def test_bad_inputs_are_each_rejected_with_a_reason_and_the_batch_goes_on():
    # 3 s of CPU, not 1: on a loaded machine the memory bomb's page faults could spend 1 s of system time
    # before it reached 256 MB, and the CPU limit, not the memory limit, then stopped it
    results = check_file(FIX / "bad_inputs.jsonl", limits=FAST.model_copy(update={"cpu_s": 3}))
    by_id = {r.env_id: r for r in results}
    assert len(results) == 8
    assert by_id["good-probe"].ok
    expect = {"bad-cyclic": "cyclic dependency graph", "bad-no-answer": "node q2 has no answer",
              "bad-infinite-loop": "CPU-time limit exceeded", "bad-memory-bomb": "memory limit exceeded",
              "bad-network": "network access attempted", "bad-write-outside": "outside the work directory"}
    for env_id, text in expect.items():
        assert not by_id[env_id].ok
        assert any(text in r for r in by_id[env_id].reasons), (env_id, by_id[env_id].reasons)
    not_json = [r for r in results if r.row == 7]
    assert not_json and not not_json[0].ok and "not JSON" in not_json[0].reasons[0]


def test_edited_target_answer_is_caught_on_the_artifact(tmp_path: Path):
    row = json.loads((FIX / "astra_baggage_fixed.jsonl").read_text())
    row["targets"][2]["answer"] = "700"
    row["nodes"][2]["answer"] = "700"
    path = tmp_path / "edited.jsonl"
    path.write_text(json.dumps(row) + "\n")
    (res,) = check_file(path, limits=FAST)
    assert not res.ok and any("(b) target q3" in r and "'700'" in r for r in res.reasons)


def test_unreachable_argument_is_caught():
    (sample,) = load_envs(FIX / "astra_baggage_fixed.jsonl")
    nodes = [n.model_copy(update={"arguments": {**n.arguments, "reservation_id": "RES000000"}})
             if n.id == "q2" else n for n in sample.nodes]
    targets = [t.model_copy(update={"arguments": {"reservation_id": "RES000000"}}) if t.node == "q2" else t
               for t in sample.targets]
    res = check_sample(sample.model_copy(update={"nodes": nodes, "targets": targets}), limits=FAST)
    assert not res.ok
    assert any("reservation_id='RES000000'" in r for r in res.reasons)


def test_arguments_against_schema():
    schema = {"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"],
        "additionalProperties": False}}}
    assert arguments_problems(schema, {"a": 1}) == []
    assert arguments_problems(schema, {}) == ["missing required argument 'a'"]
    assert arguments_problems(schema, {"a": "1", "b": 2}) == ["argument a='1' is not of type integer",
                                                            "unknown argument 'b' (expected one of ['a'])"]


def test_committed_fixtures_match_their_generator():
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_fixtures", FIX / "make_fixtures.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    expected = {"astra_baggage_fixed": [mod.fixed()], "astra_duplicate_name": [mod.duplicate_name()],
                "astra_random_txn": [mod.random_txn()]}
    for name, rows in expected.items():
        got = [json.loads(line) for line in (FIX / f"{name}.jsonl").read_text().splitlines()]
        assert got == rows, (f"{name}.jsonl is stale; regenerate with "
                             f".venv/bin/python tests/synth/envs/fixtures/make_fixtures.py")
    assert (FIX / "bad_inputs.jsonl").read_text().splitlines() == mod.bad_inputs(), \
        "bad_inputs.jsonl is stale; regenerate with .venv/bin/python tests/synth/envs/fixtures/make_fixtures.py"
