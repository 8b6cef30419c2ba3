"""evaluate(): item selection, aggregation, and the gold pseudo-model scoring 1.0."""

from __future__ import annotations

import math

import pytest

from eval.benchmarks import get_benchmark
from eval.errors import UnknownBenchmarkError
from eval.models import CallItem, ContinuationScore, MatchResult
from eval.runner import call_metrics, evaluate, mean_stderr, select_items
from toolscale.errors import UsageError

from .test_bfcl import needs_wheel


def _items(n_per_cat=5):
    return [CallItem(id=f"{c}{i}", category=c, messages=[{"role": "user", "content": "q"}],
                     functions=[{"name": "f", "parameters": {"type": "object", "properties": {}}}],
                     ground_truth=[] if c == "irrelevance" else [{"f": {}}])
            for c in ("simple", "parallel", "irrelevance") for i in range(n_per_cat)]


def test_select_items_stratified_and_seeded():
    items = _items()
    chosen = select_items(items, 6, seed=1)
    assert sorted(i.category for i in chosen) == ["irrelevance"] * 2 + ["parallel"] * 2 + ["simple"] * 2
    assert select_items(items, 6, seed=1) == chosen
    assert select_items(items, 6, seed=2) != chosen
    assert select_items(items, None) == items
    assert len(select_items(items, 100)) == 15
    with pytest.raises(UsageError, match="limit must be a positive integer, got 0"):
        select_items(items, 0)


def test_reference_budget():
    from eval.runner import reference_budget

    class Counter_:
        def token_count(self, text):
            return len(text)

    assert reference_budget(Counter_(), ["x" * 10, "y" * 20], cap=256) == 30 + 16
    assert reference_budget(Counter_(), ["x" * 1000], cap=256) == 256
    assert reference_budget(object(), ["x"], cap=99) == 99  # a backend that cannot count tokens


def test_mean_stderr():
    assert mean_stderr([1.0, 0.0, 1.0, 0.0]) == (0.5, pytest.approx(math.sqrt(1 / 3 / 4)))
    assert mean_stderr([1.0]) == (1.0, 0.0)


def test_call_metrics_category_mean_and_likelihoods():
    items = _items(2)
    results = [MatchResult(valid=v, field_match=0.5) for v in (True, True, False, False, True, False)]
    scores = [ContinuationScore(logprob=-4.0, n_tokens=2)] * 6
    rows = {m.metric: m for m in call_metrics(get_benchmark("bfcl"), items, results, scores)}
    assert rows["score"].score == pytest.approx((1.0 + 0.0 + 0.5) / 3)
    assert rows["score"].n_items == 6 and rows["score"].version == get_benchmark("bfcl").version
    assert rows["acc_simple"].score == 1.0 and rows["acc_parallel"].score == 0.0
    assert rows["field_match"].score == 0.5
    assert rows["call_logprob"].score == -4.0 and rows["call_logprob"].n_items == 4  # irrelevance left out
    assert rows["loss"].score == 2.0 and not rows["loss"].higher_is_better
    flat = {m.metric: m for m in call_metrics(get_benchmark("heldout-calls"), items, results)}
    assert flat["score"].score == pytest.approx(0.5)
    assert "loss" not in flat


@needs_wheel
def test_gold_scores_one_on_bfcl():
    rows = evaluate("gold", "bfcl", limit=60, seed=3)
    head = rows[0]
    assert head.metric == "score" and head.score == 1.0 and head.n_items == 60
    assert {m.metric for m in rows} >= {"field_match", "acc_simple", "acc_irrelevance"}
    assert all(m.score == 1.0 for m in rows)


def test_unknown_benchmark():
    with pytest.raises(UnknownBenchmarkError, match="unknown benchmark 'bfcl4'.*did you mean 'bfcl'"):
        evaluate("gold", "bfcl4")


# ------------------------------------------------------------------------------------ heldout-env episodes

@pytest.fixture(scope="module")
def env_items():
    pytest.importorskip("synth.envs.api")
    from eval.heldout import load_heldout_env

    return load_heldout_env(n=4)


class Scripted:
    """An in-process fake backend: answers each request with ``reply(request)``."""

    name = "scripted"

    def __init__(self, reply):
        self.reply = reply
        self.requests = []

    def generate(self, requests, *, max_new_tokens):
        self.requests.extend(requests)
        return [self.reply(r) for r in requests]

    def score(self, requests):
        return None


def test_gold_passes_every_episode(env_items):
    rows = {m.metric: m for m in evaluate("gold", "heldout-env", items=env_items)}
    assert rows["score"].score == 1.0 and rows["f1"].score == 1.0 and rows["score"].n_items == len(env_items)


def test_wrong_and_malformed_policies_score_zero_without_crashing(env_items):
    from eval.parsing import format_tool_call

    tool = env_items[0].sample["tools"][0]["function"]["name"]
    for reply in (lambda r: "I do not know.", lambda r: '<tool_call>{"name": broken', lambda r: "\x00" * 30):
        rows = {m.metric: m for m in evaluate("x", "heldout-env", items=env_items, backend=Scripted(reply))}
        assert rows["score"].score == 0.0 and rows["f1"].score == 0.0
    # calling an unrelated tool with junk arguments every turn: the episode runs to its call budget, F1 0
    spam = Scripted(lambda r: format_tool_call({"name": tool, "arguments": {"zz": 1}}))
    rows = {m.metric: m for m in evaluate("x", "heldout-env", items=env_items[:1], backend=spam)}
    assert rows["f1"].score == 0.0
    assert len(spam.requests) == env_items[0].sample.get("max_turns", 32)
    assert spam.requests[-1].messages[-1]["role"] == "tool"  # observations are fed back


def test_half_right_policy_gets_partial_f1(env_items):
    """Golden calls plus one useless repeat per turn: all targets hit with twice the calls -> F1 = 2n/(n+2n)."""
    from eval.parsing import format_tool_call
    from eval.episodes import golden_calls

    plans = {it.sample["prompt"]: golden_calls(it) for it in env_items}

    def reply(r):
        plan = plans[r.messages[1]["content"]]
        turn = sum(m["role"] == "assistant" for m in r.messages)
        if turn >= len(plan):
            return "Done."
        return format_tool_call(plan[turn]) + format_tool_call(plan[turn])

    rows = {m.metric: m for m in evaluate("x", "heldout-env", items=env_items, backend=Scripted(reply))}
    assert rows["score"].score == 0.0
    assert rows["f1"].score == pytest.approx(2 / 3)


def test_evaluate_spec_runs_every_benchmark_of_the_config():
    from eval.runner import evaluate_spec
    from toolscale.config import EvalSpec

    rows = evaluate_spec("gold", EvalSpec(benchmarks=["heldout-calls"], limit=10))
    assert [(m.benchmark, m.metric) for m in rows][0] == ("heldout-calls", "score")
    assert rows[0].score == 1.0 and rows[0].n_items == 10


def test_generate_limit_generates_a_fixed_subset_and_scores_all():
    from eval.runner import evaluate_spec
    from toolscale.config import EvalSpec

    rows = {m.metric: m for m in evaluate_spec("gold", EvalSpec(benchmarks=["indist-calls"], limit=40,
                                                                 generate_limit=12))}
    assert rows["score"].n_items == 12 and rows["score"].score == 1.0
    with pytest.raises(UsageError, match="generate_limit must be a positive integer, got 0"):
        evaluate("gold", "indist-calls", limit=5, generate_limit=0)


@pytest.mark.slow
def test_a_model_trained_on_the_references_scores_them_right(tmp_path):
    """End to end through train's chat template: memorise 6 items' answers, then generate, parse, match."""
    torch = pytest.importorskip("torch")
    from eval.backends import TransformersBackend
    from eval.heldout import build_heldout_calls
    from eval.prompts import reference_request
    from toolscale.config import ModelSize
    from train.chat import render
    from train.proxy import build_model
    from train.tokenizer import train_tokenizer

    torch.set_num_threads(1)
    torch.manual_seed(0)
    items = build_heldout_calls(calls_per_domain=2, parallel_per_domain=1, irrelevant_per_domain=1)[:6]
    refs = [reference_request(i) for i in items]
    tok = train_tokenizer([render(r.messages, r.tools) for r in refs], vocab_size=512)
    model = build_model(ModelSize(name="t", hidden_size=64, num_layers=2, num_heads=2, vocab_size=512,
                                  max_seq_len=2048), vocab_size=len(tok))
    backend = TransformersBackend("mem", model_obj=model, tokenizer_obj=tok)
    before = {m.metric: m.score for m in evaluate("mem", "heldout-calls", items=items, backend=backend,
                                                  max_new_tokens=8)}
    enc = [backend._scored_ids(r) for r in refs]
    width = max(len(x) for x, _ in enc)
    ids = torch.zeros(len(enc), width, dtype=torch.long)
    attn = torch.zeros_like(ids)
    labels = torch.full_like(ids, -100)
    for i, (x, m) in enumerate(enc):
        ids[i, :len(x)] = torch.tensor(x)
        attn[i, :len(x)] = 1
        labels[i, :len(x)] = torch.tensor([t if k else -100 for t, k in zip(x, m)])
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(120):
        loss = model(input_ids=ids, attention_mask=attn, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    after = {m.metric: m.score for m in evaluate("mem", "heldout-calls", items=items, backend=backend,
                                                 max_new_tokens=80)}
    assert after["score"] >= 5 / 6 and after["acc_multiple"] == 1.0
    assert after["loss"] < 0.1 < before["loss"] and after["field_match"] > before["field_match"]


def test_token_prob_is_exp_of_minus_loss_and_higher_is_better() -> None:
    from eval.benchmarks import get_benchmark
    from eval.runner import likelihood_metrics

    info = get_benchmark("heldout-calls")
    rows = {r.metric: r for r in likelihood_metrics(info, [(-4.0, 2), (-2.0, 2)])}
    assert rows["loss"].score == pytest.approx(1.5) and not rows["loss"].higher_is_better
    assert rows["token_prob"].score == pytest.approx(math.exp(-1.5)) and rows["token_prob"].higher_is_better
    assert rows["token_prob"].stderr == pytest.approx(math.exp(-1.5) * rows["loss"].stderr)
    assert likelihood_metrics(info, []) == []
    assert "bpb" not in rows  # bytes not counted: no bits per byte


def test_bpb_is_nats_over_bytes_in_bits_and_lower_is_better() -> None:
    from eval.benchmarks import get_benchmark
    from eval.runner import likelihood_metrics

    info = get_benchmark("indist-calls")
    rows = {r.metric: r for r in likelihood_metrics(info, [(-4.0, 2, 8), (-2.0, 2, 2)])}
    assert rows["bpb"].score == pytest.approx(6.0 / (math.log(2) * 10)) and not rows["bpb"].higher_is_better
    per_item = [4.0 / (math.log(2) * 8), 2.0 / (math.log(2) * 2)]
    assert rows["bpb"].stderr == pytest.approx(abs(per_item[0] - per_item[1]) / 2)
    assert rows["loss"].score == pytest.approx(1.5)
