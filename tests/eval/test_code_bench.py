"""The code benchmarks through eval: pinned items, gold passes every item in the jail, wrong answers do not."""

from __future__ import annotations

import pytest

from eval.benchmarks import get_benchmark, load_items
from eval.code_bench import match_code_items, written_module
from eval.heldout import items_digest
from eval.models import ToolCall
from eval.parsing import parse_output
from eval.runner import evaluate


@pytest.mark.parametrize("name", ["code-indist", "code-heldout-apis", "code-valid"])
def test_items_are_pinned(name):
    info = get_benchmark(name)
    assert info.kind == "code" and "bpb" in info.metrics
    assert items_digest(load_items(name)) == info.digest


def test_gold_passes_every_generated_item_and_scores_like_a_call_benchmark():
    """24 items of each benchmark, their tests in one jail batch each (a few seconds)."""
    for name in ("code-indist", "code-heldout-apis"):
        rows = {m.metric: m for m in evaluate("gold", name, limit=24)}
        assert rows["score"].score == 1.0 and rows["field_match"].score == 1.0 and rows["score"].n_items == 24


def _answer(call: dict) -> object:
    return parse_output(f'<tool_call>{{"name": "write_file", "arguments": {__import__("json").dumps(call)}}}'
                        "</tool_call>")


def test_wrong_answers_fail_with_their_reason():
    items = load_items("code-indist")
    it = next(i for i in items if i.prefix and not i.dependent)  # a later function: an append adds to the file
    gold = it.ground_truth[0]["write_file"]
    ok = _answer({"path": it.path, "content": gold["content"][0], "append": True})
    whole = _answer({"path": it.path, "content": it.prefix + gold["content"][0]})
    lost = _answer({"path": it.path, "content": gold["content"][0]})  # replaces the file: earlier functions gone
    other = _answer({"path": "elsewhere.py", "content": gold["content"][0], "append": True})
    broken = _answer({"path": it.path, "content": "def (:\n", "append": True})
    res = match_code_items([it] * 5, [ok, whole, lost, other, broken])
    assert [r.valid for r in res] == [True, True, False, False, False]
    assert 0 < res[2].field_match < 1 and res[2].error_type == "tests_fail"
    assert res[3].error_type == "no_write" and "expected" in res[3].error
    assert res[4].error_type == "module_error" and "does not import" in res[4].error
    assert written_module(it, parse_output("no call at all"))[0] is None
    assert ToolCall(name="write_file").arguments == {}


def test_the_validation_split_shares_no_item_or_repository_with_the_tests():
    valid = load_items("code-valid")
    tests = load_items("code-indist") + load_items("code-heldout-apis")
    key = lambda it: (str(it.messages), str(it.ground_truth))  # noqa: E731
    assert not {key(i) for i in valid} & {key(i) for i in tests}
    assert not {i.messages[0]["content"] for i in valid} & {i.messages[0]["content"] for i in tests}  # repositories


def test_no_benchmark_repository_is_named_like_a_training_one():
    from synth.code.models import CodeRecipe
    from synth.code.tasks import repositories

    train = {r.name for seed in range(10) for r in repositories(CodeRecipe(db_diversity=64, seed=seed))}
    bench = {i.messages[0]["content"].split(" the ")[1].split(" ")[0] for name in
             ("code-indist", "code-heldout-apis", "code-valid") for i in load_items(name)}
    assert len(bench) == 24 and not bench & train
