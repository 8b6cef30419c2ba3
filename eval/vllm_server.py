"""Evaluation on GPUs: a ``vllm serve`` process per run, and a backend that generates *and scores* through it.

:class:`VLLMServer` starts ``vllm serve MODEL_DIR --served-model-name RUN`` from the separate vLLM environment
named in the config (vLLM pins its own torch, so it cannot live in the training venv), waits for ``/health``,
and stops it (its whole process group) afterwards. The server ignores ``SIGUSR2``: SLURM's time-limit warning
is for the job, which saves and requeues, not for the server.

:class:`VLLMServerBackend` talks to it through the concurrent, retrying client of ``synth.llm`` (up to
``concurrency`` requests in flight, retries on 429/5xx/timeouts):

* ``generate``: ``/v1/chat/completions`` per request with its own ``max_tokens`` budget, greedy, the
  completion text kept raw (no server-side tool parser), so ``<tool_call>`` blocks are parsed by eval itself;
* ``score``: bits per byte from vLLM too. Each conversation is tokenized *here* with the run's tokenizer and
  assistant mask (:func:`eval.backends.scored_ids`, the same function the transformers scorer uses), sent to
  ``/v1/completions`` as token ids with ``prompt_logprobs: 0`` (vLLM returns the log-probability of every prompt
  token given its prefix), and the masked positions are summed locally. Token ids in, so the server cannot
  re-tokenize differently; the byte count is :func:`eval.backends.scored_bytes`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eval.backends import budgets, scored_bytes, scored_ids, tool_calls_to_text
from eval.errors import BackendError
from eval.models import ChatRequest, ContinuationScore
from toolscale.errors import UsageError

__all__ = ["VLLMServer", "VLLMServerBackend", "vllm_executable", "prompt_logprob_sum"]


def vllm_executable(where: str | Path) -> Path:
    """The ``vllm`` executable of a vLLM environment folder (``ENV/bin/vllm``), or ``where`` itself if it is one.

    Raises :class:`~toolscale.errors.UsageError` naming the path when there is none."""
    path = Path(where).expanduser()
    for candidate in (path / "bin" / "vllm", path):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise UsageError(f"eval.vllm {str(where)!r} is not a vLLM environment (no executable bin/vllm) nor the "
                     "vllm executable; create one with: python3 -m venv ~/vllm-env && ~/vllm-env/bin/pip install vllm")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ignore_usr2() -> None:  # pragma: no cover - runs in the child before exec
    signal.signal(signal.SIGUSR2, signal.SIG_IGN)  # SIG_IGN survives exec: the server ignores it too


class VLLMServer:
    """``vllm serve`` on a free local port for the duration of a ``with`` block.

    Parameters
    ----------
    vllm : the vLLM environment folder or executable (:func:`vllm_executable`).
    model_dir : the model folder to serve (``from_pretrained`` layout, with its chat template).
    served_name : the model name requests use (the run id).
    args : extra ``vllm serve`` arguments (``--tensor-parallel-size 4``, ``--max-model-len 8192``...).
    log : file receiving the server's output.
    startup_s : seconds to wait for ``/health`` (first starts compile kernels).
    """

    def __init__(self, vllm: str | Path, model_dir: str | Path, served_name: str, *, args: Sequence[str] = (),
                 log: str | Path, startup_s: float = 1200.0) -> None:
        self.exe = vllm_executable(vllm)
        self.model_dir, self.served_name = str(model_dir), served_name
        self.args, self.log, self.startup_s = list(args), Path(log), float(startup_s)
        self.port = 0
        self.proc: subprocess.Popen | None = None

    @property
    def endpoint(self) -> str:
        """Base URL of the OpenAI-compatible API (``http://127.0.0.1:PORT/v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        """The ``vllm serve`` command line."""
        return [str(self.exe), "serve", self.model_dir, "--served-model-name", self.served_name,
                "--host", "127.0.0.1", "--port", str(self.port), *self.args]

    def __enter__(self) -> "VLLMServer":
        self.port = _free_port()
        self.log.parent.mkdir(parents=True, exist_ok=True)
        out = open(self.log, "ab")  # noqa: SIM115 - the child keeps writing to it
        try:
            self.proc = subprocess.Popen(self.command(), stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                         preexec_fn=_ignore_usr2, env={**os.environ, "VLLM_NO_USAGE_STATS": "1"})
        finally:
            out.close()
        try:
            self._wait_healthy()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self.startup_s
        url = f"http://127.0.0.1:{self.port}/health"
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise BackendError(f"vllm serve exited with code {self.proc.returncode} before it was healthy:\n"
                                   + self._log_tail())
            with contextlib.suppress(urllib.error.URLError, OSError):
                with urllib.request.urlopen(url, timeout=5) as resp:  # noqa: S310 - our own local server
                    if resp.status == 200:
                        return
            time.sleep(0.5)
        raise BackendError(f"vllm serve was not healthy within {self.startup_s:g} s:\n" + self._log_tail())

    def _log_tail(self, n: int = 20) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log.read_text(encoding="utf-8", errors="replace").splitlines()[-n:])
        return ""

    def __exit__(self, *exc: Any) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def prompt_logprob_sum(reply: dict[str, Any], ids: list[int], mask: list[int]) -> tuple[float, int]:
    """``(sum of log p over masked positions, positions summed)`` from one ``/v1/completions`` reply.

    Position ``t`` (``t >= 1``) of ``prompt_logprobs`` holds ``{str(token id): {"logprob": ...}}``; the
    prompt's own token ``ids[t]`` must be among them. Raises ``ValueError`` for a reply of another shape.
    """
    try:
        rows = reply["choices"][0]["prompt_logprobs"]
    except (KeyError, IndexError, TypeError):
        raise ValueError("the reply has no choices[0].prompt_logprobs (is the server vLLM?)") from None
    if not isinstance(rows, list) or len(rows) != len(ids):
        raise ValueError(f"prompt_logprobs has {len(rows) if isinstance(rows, list) else '?'} positions for "
                         f"{len(ids)} prompt tokens")
    total, n = 0.0, 0
    for t in range(1, len(ids)):
        if not mask[t]:
            continue
        entry = (rows[t] or {}).get(str(ids[t]))
        if not isinstance(entry, dict) or not isinstance(entry.get("logprob"), int | float):
            raise ValueError(f"prompt_logprobs[{t}] lacks the prompt token {ids[t]}")
        total += float(entry["logprob"])
        n += 1
    return total, n


class VLLMServerBackend:
    """Generation and scoring through a vLLM (OpenAI-compatible) server; see the module docstring.

    Parameters
    ----------
    model : the served model name (the run id).
    endpoint : base URL, e.g. ``http://127.0.0.1:8000/v1``.
    tokenizer_dir : folder of the run's tokenizer (the model folder): prompts are tokenized here.
    concurrency, timeout_s, max_tries : client limits (requests in flight, seconds per request, attempts).
    """

    name = "vllm-server"

    def __init__(self, model: str, *, endpoint: str | None = None, tokenizer_dir: str | None = None,
                 concurrency: int = 32, timeout_s: float = 600.0, max_tries: int = 4, **_: Any) -> None:
        from synth import LLMClient
        from toolscale.config import LLMRoleSpec
        from train import load_tokenizer

        if not endpoint:
            raise UsageError("the vllm-server backend needs an endpoint URL (a running `vllm serve`)")
        self.model = model
        self.tokenizer = load_tokenizer(tokenizer_dir or model)
        spec = LLMRoleSpec(base_url=endpoint, model=model, concurrency=int(concurrency), timeout_s=float(timeout_s),
                           max_tries=int(max_tries))
        self.client = LLMClient({"policy": spec})  # the model under evaluation is the policy
        self.generated_tokens = 0

    def close(self) -> None:
        """Close the HTTP connections."""
        self.client.close()

    def token_count(self, text: str) -> int:
        """Tokens of ``text`` under the run's tokenizer (sizes per-item generation budgets)."""
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def generate(self, requests: list[ChatRequest], *, max_new_tokens: int | Sequence[int] = 128) -> list[str]:
        """Greedy chat completions, all requests in flight together (up to ``concurrency``)."""
        from eval.backends import _clean_messages

        bodies = []
        for r, limit in zip(requests, budgets(max_new_tokens, len(requests)), strict=True):
            body: dict[str, Any] = {"model": self.model, "messages": _clean_messages(r.messages), "temperature": 0.0,
                                    "max_tokens": limit, "skip_special_tokens": True,
                                    "chat_template_kwargs": {"enable_thinking": False}}
            if r.tools:
                body["tools"] = r.tools
            bodies.append(body)
        replies = self._post("/chat/completions", bodies, _check_chat)
        out = []
        for reply in replies:
            msg = reply["choices"][0]["message"]
            self.generated_tokens += int((reply.get("usage") or {}).get("completion_tokens") or 0)
            out.append(tool_calls_to_text(msg.get("content"), msg.get("tool_calls")))
        return out

    def score(self, requests: list[ChatRequest]) -> list[ContinuationScore]:
        """Log-likelihood of each conversation's assistant tokens (nats), from vLLM's ``prompt_logprobs``."""
        encoded = [scored_ids(self.tokenizer, r) for r in requests]
        bodies = [{"model": self.model, "prompt": ids, "max_tokens": 1, "temperature": 0.0, "prompt_logprobs": 0}
                  for ids, _ in encoded]
        replies = self._post("/completions", bodies, lambda data: _check_logprobs(data))
        out = []
        for (ids, mask), reply in zip(encoded, replies, strict=True):
            try:
                total, n = prompt_logprob_sum(reply, ids, mask)
            except ValueError as err:
                raise BackendError(f"{self.client.spec('policy').base_url}/completions: {err}") from None
            out.append(ContinuationScore(logprob=total, n_tokens=n, n_bytes=scored_bytes(self.tokenizer, ids, mask)))
        return out

    def _post(self, path: str, bodies: list[dict[str, Any]], check: Any) -> list[dict[str, Any]]:
        from synth import LLMEndpointError, LLMReplyError

        if not bodies:
            return []
        try:
            return self.client.post_many("policy", path, bodies, check=check)
        except (LLMEndpointError, LLMReplyError) as err:
            raise BackendError(str(err)) from None


def _check_chat(data: Any) -> None:
    if not isinstance(data, dict) or not isinstance((data.get("choices") or [{}])[0].get("message"), dict):
        raise ValueError("no choices[0].message")


def _check_logprobs(data: Any) -> None:
    if not isinstance(data, dict) or not isinstance((data.get("choices") or [{}])[0].get("prompt_logprobs"), list):
        raise ValueError("no choices[0].prompt_logprobs")
