"""The transformers backend on a tiny random model: generation, scoring, save/load offline, garbage scored wrong."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

torch = pytest.importorskip("torch")

from eval.backends import OpenAIBackend, TransformersBackend, get_backend, tool_calls_to_text  # noqa: E402
from eval.errors import BackendError  # noqa: E402
from eval.heldout import build_heldout_calls  # noqa: E402
from eval.models import ChatRequest  # noqa: E402
from eval.parsing import parse_output  # noqa: E402
from eval.prompts import item_request, reference_request  # noqa: E402
from eval.runner import evaluate  # noqa: E402
from toolscale.errors import UsageError  # noqa: E402

from .tiny_model import save_tiny_model  # noqa: E402


@pytest.fixture(scope="module")
def items():
    return build_heldout_calls(calls_per_domain=6, parallel_per_domain=2, irrelevant_per_domain=2)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory, items):
    """A randomly initialised tiny Llama with a BPE tokenizer trained on the items' text, saved to a folder."""
    return save_tiny_model(tmp_path_factory.mktemp("model"), items)


@pytest.fixture(scope="module")
def backend(model_dir):
    return TransformersBackend(model_dir, batch_size=4, threads=1)


def test_left_padded_batch_equals_one_by_one(backend, items):
    """Greedy generation in a left-padded batch gives the same text as one prompt at a time."""
    reqs = [item_request(it) for it in items[:4]]
    assert len({len(backend._prompt_ids(r)) for r in reqs}) > 1  # different lengths: padding is exercised
    batched = backend.generate(reqs, max_new_tokens=12)
    single = [backend.generate([r], max_new_tokens=12)[0] for r in reqs]
    assert batched == single
    assert all(isinstance(t, str) for t in batched)


def test_per_request_budgets_do_not_depend_on_batch_mates(backend, items):
    reqs = [item_request(it) for it in items[:4]]
    limits = [3, 12, 5, 9]
    batched = backend.generate(reqs, max_new_tokens=limits)
    for r, n, text in zip(reqs, limits, batched):
        assert text == backend.generate([r], max_new_tokens=n)[0]
    longer = backend.generate(reqs[:1], max_new_tokens=12)[0]
    assert longer.startswith(batched[0]) and len(longer) > len(batched[0])  # cut at 3 tokens, same start
    with pytest.raises(UsageError, match="2 budgets for 4 requests"):
        backend.generate(reqs, max_new_tokens=[1, 2])


def test_score_equals_the_models_own_loss(backend, items):
    req = reference_request(items[0])
    (s,) = backend.score([req])
    ids, mask = backend._scored_ids(req)
    assert 0 < s.n_tokens == sum(mask[1:]) < len(ids)
    x = torch.tensor([ids])
    labels = torch.tensor([[t if m else -100 for t, m in zip(ids, mask)]])
    with torch.no_grad():
        loss = backend.model(input_ids=x, labels=labels).loss.item()
    assert -s.logprob / s.n_tokens == pytest.approx(loss, rel=1e-4)
    # batched scoring (left padding, explicit positions, last-K logits) gives the same numbers as one by one
    reqs = [reference_request(it) for it in items[:4]]
    assert len({len(backend._scored_ids(r)[0]) for r in reqs}) > 1
    batch = backend.score(reqs)
    for r, b in zip(reqs, batch):
        (one,) = backend.score([r])
        assert b.n_tokens == one.n_tokens and b.logprob == pytest.approx(one.logprob, rel=1e-4)
    assert batch[0].logprob == pytest.approx(s.logprob, rel=1e-4)


def test_score_counts_the_bytes_of_the_scored_text(backend, items):
    req = reference_request(items[0])
    (s,) = backend.score([req])
    ids, mask = backend._scored_ids(req)
    text = backend.tokenizer.decode([t for t, m in zip(ids, mask) if m], skip_special_tokens=False)
    assert s.n_bytes == len(text.encode("utf-8")) > s.n_tokens  # byte-level BPE: a token holds >= 1 byte


def test_assistant_mask_covers_only_the_reference_answer(backend, items):
    req = reference_request(items[0])
    ids, mask = backend._scored_ids(req)
    scored = backend.tokenizer.decode([t for t, m in zip(ids, mask) if m])
    assert scored.startswith("<tool_call>") and items[0].ground_truth[0].keys() <= {
        c.name for c in parse_output(scored).calls}


def test_reload_offline_gives_same_outputs(model_dir, backend, items):
    again = TransformersBackend(model_dir, batch_size=2)
    reqs = [item_request(it) for it in items[:2]]
    assert again.generate(reqs, max_new_tokens=8) == backend.generate(reqs, max_new_tokens=8)
    assert again.score([reference_request(items[0])])[0].logprob == pytest.approx(
        backend.score([reference_request(items[0])])[0].logprob)


def test_scores_do_not_depend_on_the_scoring_batch(model_dir, items):
    """One row at a time and right-padded, unmasked batches of rows of different lengths give the same
    log-probabilities (under the causal mask no real token sees the padding after it)."""
    from eval.backends import SCORE_BATCH_SIZE

    assert TransformersBackend(model_dir, threads=1).score_batch_size == SCORE_BATCH_SIZE
    one = TransformersBackend(model_dir, threads=1, score_batch_size=1)
    padded = TransformersBackend(model_dir, threads=1, score_batch_size=4)
    reqs = [reference_request(it) for it in items[::max(1, len(items) // 6)][:6]]
    assert len({len(one._scored_ids(r)[0]) for r in reqs}) > 1  # rows of different lengths: padding is there
    for a, b in zip(one.score(reqs), padded.score(reqs)):
        assert a.n_tokens == b.n_tokens and a.n_bytes == b.n_bytes
        assert a.logprob == pytest.approx(b.logprob, rel=1e-4, abs=1e-3)


def test_random_model_is_scored_wrong_without_crashing(model_dir, items):
    rows = {m.metric: m for m in evaluate(model_dir, "heldout-calls", items=items, limit=6, max_new_tokens=24,
                                          batch_size=3)}
    assert rows["score"].n_items == 6
    assert rows["acc_multiple"].score == 0.0 and rows["acc_parallel"].score == 0.0
    assert rows["loss"].score > 1.0 and not rows["loss"].higher_is_better
    assert rows["call_logprob"].score < 0
    assert 0.0 <= rows["field_match"].score <= 1.0


def test_model_without_chat_template(tmp_path, model_dir):
    import shutil

    from transformers import PreTrainedTokenizerFast

    folder = tmp_path / "nochat"
    shutil.copytree(model_dir, folder)
    tok = PreTrainedTokenizerFast.from_pretrained(str(folder))
    tok.chat_template = None
    (folder / "chat_template.jinja").unlink(missing_ok=True)
    tok.save_pretrained(str(folder))
    with pytest.raises(BackendError, match="has no chat template"):
        TransformersBackend(str(folder))


def test_importing_eval_does_not_import_torch():
    import subprocess
    import sys

    code = ("import sys, eval.runner, eval.benchmarks, eval.heldout, eval.bfcl, toolscale.cli.eval; "
            "print(any(m in sys.modules for m in ('torch', 'transformers')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_bad_model_folder(tmp_path):
    with pytest.raises(BackendError, match="does not exist"):
        TransformersBackend(str(tmp_path / "missing"))
    with pytest.raises(BackendError, match="cannot load a tokenizer"):
        TransformersBackend(str(tmp_path))
    with pytest.raises(UsageError, match="unknown backend 'tpu'"):
        get_backend("tpu", "x")


# ------------------------------------------------------------------ OpenAI-compatible endpoint (a real local server)

class _Handler(BaseHTTPRequestHandler):
    replies: list[dict] = []
    seen: list[dict] = []

    def do_GET(self):  # noqa: N802
        self._send({"data": [{"id": "served-model"}]})

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.seen.append(body)
        self._send({"choices": [{"message": self.replies[len(self.seen) - 1]}]})

    def _send(self, obj):
        data = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture()
def server():
    httpd = HTTPServer(("127.0.0.1", 0), _Handler)
    _Handler.seen = []
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_port}/v1"
    httpd.shutdown()
    httpd.server_close()


def test_openai_backend_structured_and_text_calls(server, items):
    _Handler.replies = [
        {"content": None, "tool_calls": [{"id": "c1", "type": "function",
                                          "function": {"name": "f", "arguments": "{\"x\": 1}"}}]},
        {"content": "<tool_call>{\"name\": \"g\", \"arguments\": {}}</tool_call>"},
        {"content": "", "tool_calls": [{"function": {"name": "h", "arguments": "{broken"}}]},
    ]
    b = OpenAIBackend("auto", endpoint=server)
    assert b.model == "served-model"
    req = ChatRequest(messages=[{"role": "user", "content": "hi", "tool_calls": None}], tools=item_request(items[0]).tools)
    texts = b.generate([req, req, req], max_new_tokens=10)
    assert parse_output(texts[0]).calls[0].arguments == {"x": 1}
    assert parse_output(texts[1]).calls[0].name == "g"
    assert parse_output(texts[2]).malformed and not parse_output(texts[2]).calls
    sent = _Handler.seen[0]
    assert sent["model"] == "served-model" and sent["temperature"] == 0.0 and sent["tools"]
    assert "tool_calls" not in sent["messages"][0]  # None fields are not sent
    assert b.score([req]) is None


def test_openai_backend_errors():
    with pytest.raises(UsageError, match="needs an endpoint"):
        OpenAIBackend("m")
    with pytest.raises(BackendError, match="cannot reach"):
        OpenAIBackend("m", endpoint="http://127.0.0.1:9/v1", timeout_s=2).generate(
            [ChatRequest(messages=[{"role": "user", "content": "x"}])])
    assert tool_calls_to_text("hi", None) == "hi"


def test_vllm_backend_needs_vllm():
    import importlib.util

    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vllm is installed here")
    with pytest.raises(BackendError, match="needs the vllm package.*--backend openai"):
        get_backend("vllm", "some/model")


def test_random_model_in_environments(model_dir):
    pytest.importorskip("synth.envs.api")
    from eval.heldout import load_heldout_env

    env_items = load_heldout_env(n=2)
    rows = {m.metric: m for m in evaluate(model_dir, "heldout-env", items=env_items, max_new_tokens=16)}
    assert rows["score"].score == 0.0 and rows["score"].n_items == 2
    assert rows["loss"].score > 1.0 and rows["call_logprob"].n_items == 2


@pytest.mark.gpu
def test_cuda_matches_cpu(model_dir, backend, items):
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    gpu = TransformersBackend(model_dir, batch_size=4, device="cuda")
    req = reference_request(items[0])
    assert gpu.score([req])[0].logprob == pytest.approx(backend.score([req])[0].logprob, rel=1e-3)
    assert all(isinstance(t, str) for t in gpu.generate([item_request(it) for it in items[:4]], max_new_tokens=8))
