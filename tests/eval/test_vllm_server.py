"""GPU evaluation's protocol, on CPU: a real model behind ``toolscale serve-model``, which answers vLLM's
``/v1/completions`` with token-id prompts and ``prompt_logprobs`` exactly as ``vllm serve`` does.

bpb scored through that protocol (ids tokenized and masked here, log-probabilities summed over the mask) equals
the in-process transformers scorer's on the same model; ``vllm serve`` itself is stood in for by an executable
that starts serve-model with vLLM's command line, so the server's life cycle and the resumable evaluation run
end to end.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from eval.backends import TransformersBackend, scored_ids
from eval.benchmarks import load_items
from eval.errors import BackendError
from eval.prompts import reference_request
from eval.resumable import evaluate_run
from eval.runner import evaluate, likelihood_metrics, select_items
from eval.vllm_server import VLLMServer, VLLMServerBackend, prompt_logprob_sum
from toolscale.config import EvalSpec

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def items():
    return select_items(load_items("heldout-calls"), 6, seed=0)


def test_bpb_through_the_vllm_protocol_equals_the_transformers_scorer(served_model, tiny_model_dir, items):
    local = TransformersBackend(str(tiny_model_dir), threads=1)
    remote = VLLMServerBackend(served_model.model, endpoint=served_model.url, tokenizer_dir=str(tiny_model_dir),
                               concurrency=4)
    try:
        requests = [reference_request(it) for it in items]
        a, b = local.score(requests), remote.score(requests)
        assert [s.n_tokens for s in a] == [s.n_tokens for s in b] and all(s.n_tokens > 0 for s in a)
        assert [s.n_bytes for s in a] == [s.n_bytes for s in b]
        for x, y in zip(a, b):
            assert abs(x.logprob - y.logprob) <= 1e-4 * max(1.0, abs(x.logprob))
        info = __import__("eval.benchmarks", fromlist=["get_benchmark"]).get_benchmark("heldout-calls")
        bpb = {name: next(m.score for m in likelihood_metrics(info, [(s.logprob, s.n_tokens, s.n_bytes) for s in ss])
                          if m.metric == "bpb") for name, ss in (("local", a), ("remote", b))}
        assert abs(bpb["local"] - bpb["remote"]) <= 1e-4
        # the whole benchmark path (items with a reference call are scored): server against in-process
        rows = {m.metric: m.score for m in evaluate(str(tiny_model_dir), "heldout-calls", items=items,
                                                      backend=remote)}
        here = {m.metric: m.score for m in evaluate(str(tiny_model_dir), "heldout-calls", items=items,
                                                      backend=local)}
        assert abs(rows["bpb"] - here["bpb"]) <= 1e-4 and abs(rows["loss"] - here["loss"]) <= 1e-4
        assert 0.0 <= rows["score"] <= 1.0 and remote.generated_tokens > 0
    finally:
        remote.close()


def test_prompt_logprobs_must_hold_the_prompt_token():
    ids, mask = [5, 6, 7], [0, 1, 1]
    good = {"choices": [{"prompt_logprobs": [None, {"6": {"logprob": -1.0}}, {"7": {"logprob": -0.5},
                                                                              "9": {"logprob": -0.1}}]}]}
    assert prompt_logprob_sum(good, ids, mask) == (-1.5, 2)
    with pytest.raises(ValueError, match=r"prompt_logprobs\[2\] lacks the prompt token 7"):
        prompt_logprob_sum({"choices": [{"prompt_logprobs": [None, {"6": {"logprob": -1.0}}, {"9": {}}]}]}, ids, mask)
    with pytest.raises(ValueError, match="no choices"):
        prompt_logprob_sum({"choices": []}, ids, mask)
    with pytest.raises(ValueError, match="2 positions for 3 prompt tokens"):
        prompt_logprob_sum({"choices": [{"prompt_logprobs": [None, {}]}]}, ids, mask)


FAKE_VLLM = """\
#!/bin/sh
# Stands in for `vllm serve MODEL --served-model-name NAME --host H --port P [args]` on CPU: the same
# OpenAI-compatible routes, served by toolscale serve-model over the same model folder.
echo "start $* pid $$ $(grep SigIgn /proc/$$/status)" >> "{log}"
model="$2"; shift 2
while [ $# -gt 0 ]; do
  case "$1" in
    --served-model-name) name="$2"; shift 2;;
    --port) port="$2"; shift 2;;
    *) shift;;
  esac
done
exec "{python}" -m toolscale.cli serve-model "$model" --model-name "$name" --port "$port" --threads 1
"""


@pytest.fixture
def fake_vllm_env(tmp_path):
    env = tmp_path / "vllm-env"
    (env / "bin").mkdir(parents=True)
    exe = env / "bin" / "vllm"
    exe.write_text(FAKE_VLLM.format(log=tmp_path / "starts.log", python=sys.executable))
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return env


def test_evaluation_serves_the_model_saves_each_benchmark_and_resumes(tiny_model_dir, fake_vllm_env, tmp_path,
                                                                     monkeypatch):
    """Two server starts (a stop between benchmarks, then the resumed job), each a subprocess that loads torch
    and the model: about 60-120 s on 2 busy cores."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    spec = EvalSpec(benchmarks=["heldout-calls", "heldout-servers"], limit=3, backend="vllm-server",
                    vllm=str(fake_vllm_env), concurrency=4, vllm_startup_s=120)
    out = tmp_path / "eval"
    calls = []

    def stop_before_second(where):
        calls.append(where)
        if where == "benchmark heldout-servers":
            raise KeyboardInterrupt("stop requested")

    with pytest.raises(KeyboardInterrupt):
        evaluate_run(tiny_model_dir, spec, out, run_name="run-7", should_stop=stop_before_second)
    assert (out / "heldout-calls.json").is_file() and not (out / "heldout-servers.json").exists()
    starts = (tmp_path / "starts.log").read_text().splitlines()
    assert len(starts) == 1 and starts[0].startswith(f"start serve {tiny_model_dir} --served-model-name run-7 ")
    words = starts[0].split()
    assert int(words[-1], 16) & (1 << (signal.SIGUSR2 - 1))  # the server ignores SLURM's time-limit signal
    assert subprocess.run(["kill", "-0", words[words.index("pid") + 1]], capture_output=True).returncode != 0
    rows = evaluate_run(tiny_model_dir, spec, out, run_name="run-7")  # the requeued job: only what is missing
    assert {m.benchmark for m in rows} == {"heldout-calls", "heldout-servers"}
    assert {m.metric for m in rows} >= {"score", "bpb", "loss"}
    assert len((tmp_path / "starts.log").read_text().splitlines()) == 2
    again = evaluate_run(tiny_model_dir, spec, out, run_name="run-7")  # everything saved: no server at all
    assert again == rows and len((tmp_path / "starts.log").read_text().splitlines()) == 2
    saved = json.loads((out / "heldout-calls.json").read_text())
    assert saved["identity"]["seed"] == 0 and saved["identity"]["train_stats"]


def test_a_server_that_dies_at_start_is_one_clear_error(tmp_path):
    env = tmp_path / "bad-env"
    (env / "bin").mkdir(parents=True)
    exe = env / "bin" / "vllm"
    exe.write_text("#!/bin/sh\necho 'CUDA error: no kernel image is available' >&2\nexit 1\n")
    exe.chmod(0o755)
    with pytest.raises(BackendError, match="exited with code 1 before it was healthy:\n.*no kernel image"):
        with VLLMServer(env, tmp_path, "r", log=tmp_path / "vllm.log", startup_s=30):
            pass
    from toolscale.errors import UsageError

    with pytest.raises(UsageError, match="is not a vLLM environment"):
        VLLMServer(tmp_path / "nowhere", tmp_path, "r", log=tmp_path / "x.log")


def test_scored_ids_are_the_same_for_both_backends(tiny_model_dir, items):
    """The one tokenization both scorers use: the server is handed exactly these ids."""
    local = TransformersBackend(str(tiny_model_dir), threads=1)
    request = reference_request(items[0])
    assert local._scored_ids(request) == scored_ids(local.tokenizer, request)
