"""Shared test fixtures: a fixed random seed and small torch thread counts (CI has 2 cores)."""

from __future__ import annotations

import contextlib
import os
import random

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(autouse=True)
def _seeded() -> None:
    random.seed(0)
    np.random.seed(0)


# ---- a real generating model behind a real OpenAI-compatible server (LLM roles, serve-model) -------------

SERVE_TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Current weather of a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
"""The one tool of the tiny served model's training conversations."""

SERVED_MODEL_NAME = "tiny-served"
"""Model name ``served_model`` serves under."""


def _serve_rows() -> list[dict]:
    """Short conversations the tiny model memorises: a weather question, one tool call, an answer."""
    import json as _json

    rows = []
    for city in ("Oslo", "Lima", "Rome", "Kyiv"):
        call = {"id": "call_0", "type": "function",
                "function": {"name": "get_weather", "arguments": _json.dumps({"city": city})}}
        rows.append({"messages": [
            {"role": "user", "content": f"What is the weather in {city}?"},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "content": _json.dumps({"city": city, "sky": "sunny"}), "tool_call_id": "call_0",
             "name": "get_weather"},
            {"role": "assistant", "content": f"It is sunny in {city}."}],
            "tools": _json.dumps(SERVE_TOOLS), "meta": "{}"})
    return rows


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """A tiny causal LM trained with TRL (train.sft.train_sft) on a few short tool-call conversations.

    About 10 s on one core. It answers a weather question with a ``get_weather`` tool call most of the
    time and with weak text otherwise: real generations, for the parsing and fail-closed paths.
    """
    import json as _json

    import torch

    from toolscale.config import ModelSize
    from train.sft import train_sft

    root = tmp_path_factory.mktemp("served")
    data = root / "data"
    data.mkdir()
    (data / "train.jsonl").write_text("".join(_json.dumps(r) + "\n" for r in _serve_rows() * 4), encoding="utf-8")
    size = ModelSize(name="tiny-served", hidden_size=64, num_layers=1, num_heads=2, vocab_size=512, max_seq_len=4096,
                     max_steps=120, batch_size=4, learning_rate=1e-2)
    before = torch.get_num_threads()
    try:
        train_sft(data, size, root / "model", threads=1, save_steps=0, resume=False)
    finally:
        torch.set_num_threads(before)
    return root / "model"


class ServedModel:
    """A ``toolscale serve-model`` subprocess: ``url`` (``http://127.0.0.1:PORT/v1``), ``model``, ``proc``."""

    def __init__(self, url: str, model: str, proc):
        self.url, self.model, self.proc = url, model, proc


@contextlib.contextmanager
def serve_model(model_dir, name: str):
    """``toolscale serve-model MODEL_DIR`` on a free port as a real subprocess; yields a :class:`ServedModel`."""
    import re
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-m", "toolscale.cli", "serve-model", str(model_dir), "--port", "0",
                             "--model-name", name], stderr=subprocess.PIPE, text=True, env=env)
    line = proc.stderr.readline()
    m = re.search(r"at (http://127\.0\.0\.1:\d+/v1)", line)
    if m is None:
        proc.kill()
        raise RuntimeError(f"serve-model did not start: {line}{proc.stderr.read()[-2000:]}")
    try:
        yield ServedModel(m.group(1), name, proc)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stderr.close()


@pytest.fixture(scope="session")
def served_model(tiny_model_dir):
    """``toolscale serve-model`` over :func:`tiny_model_dir` on a free port, as a real subprocess."""
    with serve_model(tiny_model_dir, SERVED_MODEL_NAME) as served:
        yield served


@pytest.fixture(scope="session")
def model_server():
    """:func:`serve_model`, for tests that serve a model of their own: ``with model_server(dir, name) as s:``."""
    return serve_model


# ---- golden files: one way to regenerate them (`make golden`) ------------------------------------------------


def pytest_addoption(parser) -> None:
    parser.addoption("--regen-golden", action="store_true",
                     help="rewrite the golden files the golden tests compare with (`make golden`)")


def pytest_collection_modifyitems(config, items) -> None:
    """Every test that uses the ``golden`` fixture is marked ``golden`` (``make golden`` runs ``-m golden``)."""
    for item in items:
        if "golden" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.golden)


class Golden:
    """Golden-file helper: rewrite the file when regenerating, then read it back; a numeric diff with tolerance."""

    command = "make golden"
    """The one command that regenerates every golden file (``pytest -m golden --regen-golden``)."""

    def __init__(self, regen: bool) -> None:
        self.regen = regen

    def check_in(self, path, text: str) -> str:
        """Write ``text`` to ``path`` when regenerating; return the golden file's text (fails when missing)."""
        from pathlib import Path

        path = Path(path)
        if self.regen:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        assert path.is_file(), f"missing golden file {path}; create it with: {self.command}"
        return path.read_text(encoding="utf-8")

    @staticmethod
    def diff(got, want, path: str = "", *, rel: float, abs_tol: float) -> list[str]:
        """Differences of two JSON-like values, one line each; numbers (one a float) match within
        ``|got - want| <= max(rel x max(|got|, |want|), abs_tol)`` (math.isclose)."""
        import math

        if isinstance(got, dict) and isinstance(want, dict):
            if set(got) != set(want):
                return [f"{path}: keys differ: {sorted(set(got) ^ set(want))}"]
            return [m for k in got for m in Golden.diff(got[k], want[k], f"{path}.{k}", rel=rel, abs_tol=abs_tol)]
        if isinstance(got, list) and isinstance(want, list):
            if len(got) != len(want):
                return [f"{path}: length {len(got)} != {len(want)}"]
            return [m for i, (x, y) in enumerate(zip(got, want))
                    for m in Golden.diff(x, y, f"{path}[{i}]", rel=rel, abs_tol=abs_tol)]
        numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (got, want))
        if (isinstance(got, float) or isinstance(want, float)) and numbers:
            return [] if math.isclose(got, want, rel_tol=rel, abs_tol=abs_tol) else [f"{path}: {got!r} != {want!r}"]
        return [] if got == want else [f"{path}: {got!r} != {want!r}"]


@pytest.fixture
def golden(request) -> Golden:
    """The golden-file helper; ``--regen-golden`` (``make golden``) rewrites the files before comparing."""
    return Golden(bool(request.config.getoption("--regen-golden")))


@pytest.fixture
def benchmark_module():
    """A loader of a script in ``benchmarks/`` by file name (they are scripts, not a package)."""
    import importlib.util
    from pathlib import Path

    def load(name: str):
        path = Path(__file__).resolve().parent.parent / "benchmarks" / f"{name}.py"
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod

    return load
