"""Real SFT runs with TRL on the hand-written rows: loss falls, masks, accounting, determinism, resume."""

from __future__ import annotations

import json

import pytest
import torch

from grid.models import TrainStats
from toolscale.config import ModelSize
from toolscale.errors import UsageError
from train.checkpoint import last_checkpoint
from train.data import read_rows, tokenize_rows
from train.errors import TrainDataError
from train.proxy import build_model, load_model
from train.sft import make_trainer, read_stats, sft_config, train_sft
from train.tokenizer import load_tokenizer

SIZE = ModelSize(name="t", hidden_size=32, num_layers=1, num_heads=2, vocab_size=400, max_steps=40,
                 batch_size=4, learning_rate=3e-3, max_seq_len=512)


@pytest.fixture(scope="module")
def run(tiny_data, tmp_path_factory):
    torch.set_num_threads(1)
    out = tmp_path_factory.mktemp("run")
    stats = train_sft(tiny_data, SIZE, out, seed=0, save_steps=0)
    return out, stats


def _assistant_loss(model, examples) -> float:
    """Mean next-token loss over assistant tokens (the SFT objective) of ``examples``."""
    total, n = 0.0, 0
    with torch.no_grad():
        for ex in examples:
            ids = torch.tensor([ex["input_ids"]])
            labels = torch.tensor([[t if m else -100 for t, m in zip(ex["input_ids"], ex["assistant_masks"])]])
            k = int((labels[0, 1:] != -100).sum())
            total += float(model(input_ids=ids, labels=labels).loss) * k
            n += k
    return total / n


def test_loss_falls_and_accounting(run):
    out, stats = run
    saved = read_stats(out)
    curve = saved["loss_curve"]
    assert [p["step"] for p in curve] == list(range(1, 41))
    assert sum(p["loss"] for p in curve[-5:]) / 5 < sum(p["loss"] for p in curve[:5]) / 5 - 1.0
    assert isinstance(stats, TrainStats) and stats.steps == 40
    assert stats.params == SIZE.approx_params and stats.params_nonembedding == SIZE.approx_params_nonembedding
    assert stats.train_tokens == curve[-1]["tokens"] > 0
    assert stats.train_flops_6nd == 6 * stats.params_nonembedding * stats.train_tokens
    context = stats.train_tokens / (40 * SIZE.batch_size)  # the mean sequence trained (attention's context)
    assert stats.train_flops == pytest.approx(6 * stats.train_tokens * (
        stats.params_nonembedding + SIZE.num_layers * context * SIZE.hidden_size + SIZE.vocab_size * SIZE.hidden_size))
    assert stats.train_flops > stats.train_flops_6nd  # attention and the unembedding counted (Kaplan Table 1)
    assert stats.final_loss == curve[-1]["loss"] and stats.wall_s > 0
    assert TrainStats.model_validate(saved["train"]) == stats
    assert saved["data"]["n_rows"] == 8


def test_tokens_seen_count_real_tokens_only(run, tiny_data):
    """D counts non-padding tokens: at most batch x steps sequences, each at most its true length."""
    out, stats = run
    lengths = [len(e["input_ids"]) for e in
               tokenize_rows(read_rows(tiny_data), load_tokenizer(out), SIZE.max_seq_len)["examples"]]
    per_epoch = sum(lengths)
    steps_per_epoch = len(lengths) / SIZE.batch_size
    assert stats.train_tokens == per_epoch * (40 / steps_per_epoch)  # 8 rows, batch 4: exact epochs
    assert stats.train_tokens < 40 * SIZE.batch_size * max(lengths)


def test_saved_folder_reloads_trained_weights(run, tiny_data):
    out, _ = run
    tokenizer = load_tokenizer(out)
    examples = tokenize_rows(read_rows(tiny_data), tokenizer, SIZE.max_seq_len)["examples"]
    trained = load_model(out).eval()
    again = load_model(out).eval()
    ids = torch.tensor([examples[0]["input_ids"]])
    with torch.no_grad():
        assert torch.equal(trained(ids).logits, again(ids).logits)
    fresh = build_model(SIZE, seed=0).eval()
    assert _assistant_loss(trained, examples) < _assistant_loss(fresh, examples) - 1.0
    assert tokenizer.chat_template and "generation" in tokenizer.chat_template


def test_only_assistant_tokens_carry_loss(rows, tokenizer, tmp_path):
    """TRL's labels are -100 on system, user and tool tokens; the plain loss equals TRL's fused loss."""
    data = tokenize_rows(rows, tokenizer, 512)
    from datasets import Dataset

    model = build_model(SIZE, seed=0)
    trainer = make_trainer(model, tokenizer, Dataset.from_list(data["examples"]),
                           sft_config(SIZE, tmp_path, max_steps=1))
    for ex, prepared in zip(data["examples"], trainer.train_dataset, strict=True):
        learned = [t for t, lab in zip(prepared["input_ids"], prepared["labels"]) if lab != -100]
        assert learned == [t for t, m in zip(ex["input_ids"], ex["assistant_masks"]) if m]
    text = tokenizer.decode([t for t, lab in zip(trainer.train_dataset[7]["input_ids"],
                                                 trainer.train_dataset[7]["labels"]) if lab != -100])
    for m in rows[7]["messages"]:
        if m["role"] in ("user", "tool"):
            assert m["content"] not in text
    batch = next(iter(trainer.get_train_dataloader()))
    fused = make_trainer(model, tokenizer, Dataset.from_list(data["examples"]),
                         sft_config(SIZE, tmp_path, max_steps=1), plain_loss=False)
    with torch.no_grad():
        plain_loss = trainer.compute_loss(model, dict(batch))
        fused_loss = fused.compute_loss(model, dict(batch))
    assert torch.allclose(plain_loss, fused_loss, rtol=1e-4)


def test_seeded_runs_are_deterministic(tiny_data, tmp_path):
    size = SIZE.model_copy(update={"max_steps": 6})
    a = train_sft(tiny_data, size, tmp_path / "a", seed=3, save_steps=0)
    b = train_sft(tiny_data, size, tmp_path / "b", seed=3, save_steps=0)
    train_sft(tiny_data, size, tmp_path / "c", seed=4, save_steps=0)
    curve = lambda p: [x["loss"] for x in read_stats(p)["loss_curve"]]  # noqa: E731
    assert curve(tmp_path / "a") == curve(tmp_path / "b") != curve(tmp_path / "c")
    assert a.train_tokens == b.train_tokens


class _Preempted(Exception):
    pass


def test_preempted_run_resumes_from_last_checkpoint(tiny_data, tmp_path):
    size = SIZE.model_copy(update={"max_steps": 10})
    whole = train_sft(tiny_data, size, tmp_path / "whole", seed=1, save_steps=0)

    def preempt(step, total, loss):
        if step == 6:
            raise _Preempted

    out = tmp_path / "cut"
    with pytest.raises(_Preempted):
        train_sft(tiny_data, size, out, seed=1, save_steps=4, on_step=preempt)
    assert last_checkpoint(out).name == "checkpoint-4" and read_stats(out) is None
    resumed = train_sft(tiny_data, size, out, seed=1, save_steps=4)
    assert read_stats(out)["resumed_from"] == "checkpoint-4"
    assert resumed.steps == 10 and resumed.train_tokens == whole.train_tokens
    a, b = read_stats(tmp_path / "whole")["loss_curve"], read_stats(out)["loss_curve"]
    assert [p["step"] for p in b] == list(range(1, 11))
    assert [p["loss"] for p in b] == pytest.approx([p["loss"] for p in a], rel=1e-5)
    # a finished identical run is not trained again
    assert train_sft(tiny_data, size, out, seed=1, save_steps=4) == resumed


def test_no_resume_starts_over(tiny_data, tmp_path):
    size = SIZE.model_copy(update={"max_steps": 4})
    train_sft(tiny_data, size, tmp_path, seed=0, save_steps=2)
    assert last_checkpoint(tmp_path).name == "checkpoint-4"
    train_sft(tiny_data, size, tmp_path, seed=0, save_steps=0, resume=False)
    assert last_checkpoint(tmp_path) is None and read_stats(tmp_path)["resumed_from"] is None


def test_pretrained_rung_trains_from_a_folder(run, tiny_data, tmp_path):
    out, _ = run
    size = ModelSize(name="p", pretrained=str(out), max_steps=3, batch_size=4, learning_rate=1e-3, max_seq_len=512)
    stats = train_sft(tiny_data, size, tmp_path, save_steps=0)
    assert stats.steps == 3 and stats.params == SIZE.approx_params
    assert json.loads((tmp_path / "config.json").read_text())["model_type"] == "llama"


def test_bad_arguments(tiny_data, tmp_path):
    with pytest.raises(UsageError, match="max_steps"):
        train_sft(tiny_data, SIZE, tmp_path, max_steps=0)
    with pytest.raises(TrainDataError, match="does not exist"):
        train_sft(tmp_path / "none", SIZE, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_downweighted_calls_leave_the_loss(tmp_path, rows, write_rows):
    """The probes' downweight repair, end to end: weight-0 calls carry no loss in the trained run."""
    from probes.repair import repair_row
    from train.data import read_rows as read

    weighted = [repair_row(r, ["call_1"], "downweight", weight=0.0)[0] for r in rows]
    plain = train_sft(write_rows(tmp_path / "plain", rows), SIZE.model_copy(update={"max_steps": 2}),
                      tmp_path / "a", save_steps=0)
    light = train_sft(write_rows(tmp_path / "light", weighted), SIZE.model_copy(update={"max_steps": 2}),
                      tmp_path / "b", save_steps=0)
    tok = load_tokenizer(tmp_path / "b")
    mask_of = {i: e["assistant_masks"] for i, e in
               enumerate(tokenize_rows(read(tmp_path / "light"), tok, SIZE.max_seq_len)["examples"])}
    plain_mask = {i: e["assistant_masks"] for i, e in
                  enumerate(tokenize_rows(rows, tok, SIZE.max_seq_len)["examples"])}
    assert all(sum(mask_of[i]) < sum(plain_mask[i]) for i in plain_mask)  # call_1 left every row's loss
    assert light.train_tokens == plain.train_tokens  # the tokens are still there, only not in the loss


def test_folder_of_another_run_is_refused(tiny_data, tmp_path, rows, write_rows):
    size = SIZE.model_copy(update={"max_steps": 2})
    first = train_sft(tiny_data, size, tmp_path / "out", save_steps=0)
    other = write_rows(tmp_path / "other", rows[:4])
    with pytest.raises(UsageError, match="different dataset_id"):
        train_sft(other, size, tmp_path / "out", save_steps=0)
    with pytest.raises(UsageError, match="different seed, steps"):
        train_sft(tiny_data, size, tmp_path / "out", seed=5, max_steps=3, save_steps=0)
    assert read_stats(tmp_path / "out")["train"] == first.model_dump(mode="json")  # nothing lost
    replaced = train_sft(other, size, tmp_path / "out", save_steps=0, resume=False)
    assert read_stats(tmp_path / "out")["train"] == replaced.model_dump(mode="json")


def test_resume_ignores_resource_fields(tiny_data, tmp_path):
    size = SIZE.model_copy(update={"max_steps": 2})
    first = train_sft(tiny_data, size, tmp_path, save_steps=0)
    more = size.model_copy(update={"mem_gb": 64.0, "timeout_min": 999, "cpus": 8})
    assert train_sft(tiny_data, more, tmp_path, save_steps=0) == first


def test_cpu_settings_override_trl_defaults(tmp_path):
    """TRL's SFTConfig(use_cpu=True) defaults to bf16, gradient checkpointing and lr 2e-5: all replaced."""
    config = sft_config(SIZE, tmp_path, max_steps=40)
    assert config.use_cpu and not config.bf16 and not config.fp16
    assert not config.gradient_checkpointing and not config.activation_checkpointing
    assert config.learning_rate == SIZE.learning_rate and not config.packing
    assert config.per_device_train_batch_size == SIZE.batch_size and config.max_length == SIZE.max_seq_len
    assert config.include_num_input_tokens_seen == "non_padding" and config.report_to == []


@pytest.mark.integration
def test_trains_on_a_real_synth_dataset(tmp_path):
    """synth's own output (pinned interfaces 1 and 6: null fields, meta column, manifest) trains as is."""
    from synth.dataset import build_dataset
    from synth.models import Recipe

    build_dataset(Recipe(task_count=12, tool_diversity=6, seed=0), tmp_path / "data")
    size = SIZE.model_copy(update={"max_steps": 12, "vocab_size": 600, "max_seq_len": 1024})
    stats = train_sft(tmp_path / "data", size, tmp_path / "model", save_steps=0)
    curve = read_stats(tmp_path / "model")["loss_curve"]
    assert stats.steps == 12 and curve[-1]["loss"] < curve[0]["loss"] - 0.5
    assert read_stats(tmp_path / "model")["data"]["n_rows"] == len(read_rows(tmp_path / "data"))


def test_a_diverging_loss_stops_the_run_with_its_log_tail():
    from types import SimpleNamespace

    from train.sft import DivergedError, divergence_callback

    cb = divergence_callback(tail=2)
    state = SimpleNamespace(global_step=1, max_steps=9)
    for step, loss in [(1, 5.0), (2, 4.0), (3, float("nan"))]:
        state.global_step = step
        if step < 3:
            cb.on_log(None, state, None, logs={"loss": loss})
    with pytest.raises(DivergedError, match=r"diverged \(nan\) at step 3 of 9; last logged losses: step 2: 4, "
                                            r"step 3: nan"):
        cb.on_log(None, state, None, logs={"loss": float("nan")})
    cb.on_log(None, state, None, logs={"learning_rate": 1.0})  # logs without a loss are ignored


def test_too_many_epochs_are_refused_before_training_naming_the_run(tiny_data, tmp_path):
    with pytest.raises(UsageError, match=r"run r-17: 20.00 epochs \(40 steps x 4 sequences over 8 rows\) exceed "
                                         r"train.max_epochs = 4"):
        train_sft(tiny_data, SIZE, tmp_path / "m", max_epochs=4.0, label="r-17")
    assert not (tmp_path / "m").exists()  # nothing was written: refused before training


def test_more_checkpoints_than_steps_are_refused_before_training_naming_the_run(tiny_data, tmp_path):
    with pytest.raises(UsageError, match=r"run r-18: \[eval\] checkpoints = 6 \(linear\): 6 linear-spaced "
                                         r"checkpoints need at least 6 steps; the run has 3; keep fewer"):
        train_sft(tiny_data, SIZE, tmp_path / "m", max_steps=3, snapshots=6, label="r-18")
    with pytest.raises(UsageError, match=r"run r-19: \[eval\] checkpoints = 4 \(log\): 4 log-spaced checkpoints "
                                         r"need at least 6 steps; the run has 5"):  # 5 steps are enough for 4 linear
        train_sft(tiny_data, SIZE, tmp_path / "m", max_steps=5, snapshots=4, snapshot_spacing="log", label="r-19")
    assert not (tmp_path / "m").exists()


def test_kept_checkpoints_are_snapshots_with_their_tokens_and_wsd_and_weight_decay_are_identity(tiny_data, tmp_path):
    """Three real training steps each (four runs of a tiny model)."""
    from train.checkpoint import snapshot_steps
    from train.sft import read_stats

    assert snapshot_steps(6, 3) == [2, 4, 6] and snapshot_steps(5, 2) == [2, 5] and snapshot_steps(4, 0) == []
    train_sft(tiny_data, SIZE, tmp_path / "m", max_steps=4, save_steps=0, snapshots=2, weight_decay=0.1,
              schedule="wsd")
    snaps = read_stats(tmp_path / "m")["snapshots"]
    assert [s["step"] for s in snaps] == [2, 4] and snaps[-1]["path"] == str(tmp_path / "m")
    assert 0 < snaps[0]["tokens"] < snaps[1]["tokens"]
    assert (tmp_path / "m" / "snapshots" / "step-2" / "config.json").is_file()
    with pytest.raises(UsageError, match="different optimiser"):  # the run's identity includes the optimiser
        train_sft(tiny_data, SIZE, tmp_path / "m", max_steps=4, save_steps=0, snapshots=2, weight_decay=0.0,
                  schedule="wsd")
    # log spacing: each kept step half the next ([1, 2, 4], not [1, 3, 4]); the spacing is part of the identity
    assert snapshot_steps(4, 3) == [1, 3, 4] and snapshot_steps(4, 3, "log") == [1, 2, 4]
    train_sft(tiny_data, SIZE, tmp_path / "g", max_steps=4, save_steps=0, snapshots=3, snapshot_spacing="log")
    assert [s["step"] for s in read_stats(tmp_path / "g")["snapshots"]] == [1, 2, 4]
    assert json.loads((tmp_path / "g" / "run.json").read_text())["keep_spacing"] == "log"
    assert "keep_spacing" not in json.loads((tmp_path / "m" / "run.json").read_text())  # linear: as before
    with pytest.raises(UsageError, match="different keep_spacing"):
        train_sft(tiny_data, SIZE, tmp_path / "g", max_steps=4, save_steps=0, snapshots=3)


def test_shared_tokenizer_and_learning_rate_override(tiny_data, tmp_path):
    from train.data import render_corpus
    from train.tokenizer import tokenizer_id, train_tokenizer

    shared = tmp_path / "tok"
    train_tokenizer(render_corpus(read_rows(tiny_data)) * 2, SIZE.vocab_size).save_pretrained(shared)
    stats = train_sft(tiny_data, SIZE, tmp_path / "m", max_steps=2, save_steps=0, tokenizer_dir=shared,
                      learning_rate=0.02)
    assert stats.steps == 2 and tokenizer_id(tmp_path / "m") == tokenizer_id(shared)
    run = json.loads((tmp_path / "m" / "run.json").read_text())
    assert run["tokenizer_id"] == tokenizer_id(shared) and run["model_size"]["learning_rate"] == 0.02
    with pytest.raises(UsageError, match="learning_rate must be a positive number, got -1"):
        train_sft(tiny_data, SIZE, tmp_path / "m2", max_steps=2, learning_rate=-1)


def test_skipping_trls_dataset_preparation_trains_exactly_as_trl_prepares(tiny_data, tmp_path):
    """train_sft hands TRL ready labels (its preparation skipped); TRL preparing the same rows trains the same."""
    from datasets import Dataset

    from train.sft import quiet_progress

    size = SIZE.model_copy(update={"max_steps": 6})
    train_sft(tiny_data, size, tmp_path / "ours", seed=2, save_steps=0)
    ours = [(p["loss"], p["tokens"]) for p in read_stats(tmp_path / "ours")["loss_curve"]]
    tok = load_tokenizer(tmp_path / "ours")
    examples = tokenize_rows(read_rows(tiny_data), tok, size.max_seq_len, seed=2)["examples"]
    config = sft_config(size, tmp_path / "trl", max_steps=6, seed=2, save_steps=0, logging_steps=1)
    with quiet_progress():
        trainer = make_trainer(build_model(size, seed=2), tok, Dataset.from_list(examples), config)
        trainer.train()
    theirs = [(h["loss"], h["num_input_tokens_seen"]) for h in trainer.state.log_history if "loss" in h]
    assert len(ours) == 6 and [t for _, t in ours] == [t for _, t in theirs]
    assert [lo for lo, _ in ours] == pytest.approx([lo for lo, _ in theirs], rel=1e-6)


def test_the_tokenised_dataset_cache_is_exact_and_shared_by_runs(tiny_data, tmp_path, rows, write_rows):
    from train.data import dataset_id
    from train.tokenized import cached_tokenize

    size = SIZE.model_copy(update={"max_steps": 3})
    a = train_sft(tiny_data, size, tmp_path / "a", seed=0, save_steps=0, cache_dir=tmp_path / "cache")
    b = train_sft(tiny_data, size, tmp_path / "b", seed=0, save_steps=0, cache_dir=tmp_path / "cache")
    assert len(list((tmp_path / "cache").glob("tok-*.npz"))) == 1  # the second run read the first one's
    assert read_stats(tmp_path / "a")["loss_curve"] == read_stats(tmp_path / "b")["loss_curve"]
    assert a.train_tokens == b.train_tokens
    tok = load_tokenizer(tmp_path / "a")
    fresh = tokenize_rows(read_rows(tiny_data), tok, 512, seed=0)
    first, hit1 = cached_tokenize(read_rows(tiny_data), tok, 512, seed=0, dataset_id=dataset_id(tiny_data),
                                  folder=tmp_path / "c2")
    again, hit2 = cached_tokenize(lambda: pytest.fail("a hit reads no rows"), tok, 512, seed=0,
                                  dataset_id=dataset_id(tiny_data), folder=tmp_path / "c2")
    assert (hit1, hit2) == (False, True)
    assert again.examples() == first.examples() == fresh["examples"]
    assert again.counts == first.counts == {k: v for k, v in fresh.items() if k != "examples"}
    other, hit3 = cached_tokenize(read_rows(tiny_data), tok, 64, seed=0, dataset_id=dataset_id(tiny_data),
                                  folder=tmp_path / "c2")  # another max_len: another entry
    assert not hit3 and other.counts["n_truncated"] > 0 and len(list((tmp_path / "c2").glob("tok-*.npz"))) == 2
    labels = again.dataset()["labels"]  # what TRL's preparation would build: -100 outside the assistant mask
    assert labels == [[t if m else -100 for t, m in zip(e["input_ids"], e["assistant_masks"])]
                      for e in fresh["examples"]]
def test_report_to_reaches_trl_with_the_run_id_as_run_name(tmp_path):
    """``[train] report_to`` is passed to TRL (not hard-coded to none) and names the run by its toolscale id."""
    from toolscale.config import TrainSpec
    from train.sft import _reporting

    assert TrainSpec().report_to == "none" and TrainSpec(report_to="tensorboard").report_to == "tensorboard"
    assert sft_config(SIZE, tmp_path, max_steps=1, **_reporting("none", "r-1")).report_to == []
    config = sft_config(SIZE, tmp_path, max_steps=1, **_reporting("tensorboard", "r-1"))
    assert config.report_to == ["tensorboard"] and config.run_name == "r-1"


def test_the_final_model_is_saved_in_the_requested_dtype(run, tiny_data, tmp_path):
    """save_dtype="bfloat16" (the cluster's default for pretrained rungs): every floating tensor on disk is
    bf16 and equals the same seeded run's fp32 weights rounded to bf16; config.json records the dtype."""
    from safetensors import safe_open

    out, _ = run
    size = ModelSize(name="p", pretrained=str(out), max_steps=2, batch_size=4, learning_rate=1e-3, max_seq_len=512)
    train_sft(tiny_data, size, tmp_path / "fp32", seed=3, save_steps=0)
    train_sft(tiny_data, size, tmp_path / "bf16", seed=3, save_steps=0, save_dtype="bfloat16")

    def tensors(folder):
        with safe_open(str(folder / "model.safetensors"), framework="pt") as f:
            return {k: f.get_tensor(k) for k in f.keys()}

    full, half = tensors(tmp_path / "fp32"), tensors(tmp_path / "bf16")
    assert full.keys() == half.keys() and {v.dtype for v in full.values()} == {torch.float32}
    assert {v.dtype for v in half.values()} == {torch.bfloat16}
    assert all(torch.equal(half[k], full[k].to(torch.bfloat16)) for k in full)
    assert json.loads((tmp_path / "bf16" / "config.json").read_text())["dtype"] == "bfloat16"
    assert load_model(tmp_path / "bf16") is not None


def test_loss_on_every_token_labels_the_prompt_and_is_part_of_the_identity(rows, tokenizer, tiny_data, tmp_path):
    """``loss_on="all"`` (the warm start's language-modelling option): every token is a label, system, user and
    tool turns included; the run records it, so a folder of the other kind is refused."""
    from train.tokenized import IGNORE_INDEX, TokenizedArrays

    arrays = TokenizedArrays.of(tokenize_rows(rows, tokenizer, 512))
    masked, every = arrays.dataset(), arrays.dataset(all_tokens=True)
    assert every[7]["labels"] == every[7]["input_ids"]
    assert IGNORE_INDEX in masked[7]["labels"]  # the default keeps the prompt out of the loss
    assert sum(lab != IGNORE_INDEX for lab in masked[7]["labels"]) < len(every[7]["labels"])
    stats = train_sft(tiny_data, SIZE, tmp_path / "m", max_steps=2, save_steps=0, loss_on="all")
    assert stats.steps == 2 and json.loads((tmp_path / "m" / "run.json").read_text())["loss_on"] == "all"
    with pytest.raises(UsageError, match="different loss_on"):
        train_sft(tiny_data, SIZE, tmp_path / "m", max_steps=2, save_steps=0)
    with pytest.raises(UsageError, match="loss_on must be one of assistant, all, got 'prompt'"):
        train_sft(tiny_data, SIZE, tmp_path / "m3", max_steps=2, loss_on="prompt")
