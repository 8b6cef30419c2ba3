"""probes/copyprobe.py: the training-free copy-aware scorer."""

from __future__ import annotations

import json

import pytest

from probes.copyprobe import NOTHING_TO_SCORE, copy_scores, fit_prior, run_copy, value_drop, visible_history
from probes.provenance import parse_row, trace_trajectory
from probes.toydata import make_dataset

HISTORY = '{"count": 1, "customers": [{"customer_id": "CS-8707", "name": "Jun Okafor"}]}\nCancel order OR-5658 please.'


def _synth_prior():
    from synth.dataset import synthesize
    from synth.models import Recipe

    rows = [json.loads(x) for x in synthesize(Recipe(task_count=40, seed=9)).rows]
    return fit_prior(m["content"] for r in rows for m in r["messages"] if m["role"] in ("user", "tool"))


PRIOR = _synth_prior()  # character statistics of ordinary synth observations


def test_copied_values_gain_fabricated_ones_do_not():
    copied = value_drop("CS-8707", "customer_id", HISTORY, PRIOR)
    from_user = value_drop("OR-5658", "order_id", HISTORY, PRIOR)
    fabricated = value_drop("CS-3141", "customer_id", HISTORY, PRIOR)
    assert copied > 10 and from_user > 10
    assert fabricated < copied / 2  # only the format prefix "CS-" is copyable
    assert value_drop("CS-8707", "customer_id", "", PRIOR) <= 0.0  # nothing visible: nothing to copy


def test_case_and_separator_changes_still_copy():
    shown = "Cancel order or 5658 please."
    assert value_drop("OR-5658", "order_id", shown, PRIOR) > 0 > value_drop("OR-9913", "order_id", shown, PRIOR)


def _row(args_by_call, user="Cancel order OR-5658 for customer CS-8707.", injected=()):
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": user}]
    for n, args in enumerate(args_by_call, 1):
        messages.append({"role": "assistant", "content": "", "tool_calls": [
            {"id": f"call_{n}", "type": "function", "function": {"name": "f", "arguments": json.dumps(args)}}]})
        messages.append({"role": "tool", "tool_call_id": f"call_{n}", "content": '{"ok": true}'})
    return {"messages": messages, "meta": json.dumps({"nonderivable_calls": list(injected)})}


def test_the_weakest_argument_decides_and_booleans_are_not_scored():
    rows = [parse_row(_row([{"order_id": "OR-5658", "customer_id": "CS-8707"},
                            {"order_id": "OR-5658", "customer_id": "CS-2290"},
                            {"force": True}, {}], injected=["call_2"]))]
    provs = [trace_trajectory(rows[0])]
    s = {x.call_id: x for x in copy_scores(rows, provs)}
    assert s["call_1"].groundedness > 5 > s["call_2"].groundedness
    assert s["call_3"].groundedness == s["call_4"].groundedness == NOTHING_TO_SCORE
    assert s["call_2"].injected and not s["call_1"].injected


def test_history_is_what_the_agent_saw_and_no_provenance_label_is_read():
    raw = _row([{"order_id": "OR-7777"}, {"order_id": "OR-7777"}])
    row = parse_row(raw)
    # the agent's own earlier argument is not history
    assert "OR-7777" not in visible_history(row, 4)
    prov = trace_trajectory(row)
    flipped = prov.model_copy(update={"actions": [a.model_copy(update={"derivable": not a.derivable, "supports": [1]})
                                                  for a in prov.actions]})
    a = [x.groundedness for x in copy_scores([row], [prov])]
    b = [x.groundedness for x in copy_scores([row], [flipped])]
    assert a == b


def test_run_copy_separates_toy_defects_and_spends_nothing():
    raw = make_dataset(60, defect_rate=0.5, seed=4, id_digits=4)
    rows = [parse_row(r, i) for i, r in enumerate(raw)]
    provs = [trace_trajectory(r, i) for i, r in enumerate(rows)]
    seen = []
    run = run_copy(rows, provs, None, None, lambda stage, done, total: seen.append((stage, done, total)))
    assert run.params == 0 and run.train_tokens == 0 and run.score_tokens == 0
    assert seen[-1] == ("score", 60, 60)
    good = [s.groundedness for s in run.scores if s.injected is False]
    bad = [s.groundedness for s in run.scores if s.injected]
    auc = sum((g > b) + 0.5 * (g == b) for g in good for b in bad) / (len(good) * len(bad))
    assert auc > 0.9


def test_malformed_actions_are_not_scored():
    raw = _row([{"order_id": "OR-5658"}])
    raw["messages"][2]["tool_calls"][0]["function"]["arguments"] = "{not json"
    row = parse_row(raw)
    (s,) = copy_scores([row], [trace_trajectory(row)])
    assert s.groundedness is None and s.error.startswith("not scored")


@pytest.mark.parametrize("kind", ["nope", "hf:"])
def test_unknown_kinds_list_the_kinds(kind):
    from probes.kinds import get_probe
    from toolscale.errors import UsageError

    with pytest.raises(UsageError, match="known kinds: copy, lm, hf:MODEL_DIR"):
        get_probe(kind)
