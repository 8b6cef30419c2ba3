"""Export and load environment artifacts (``envs.jsonl``).

File schema (``toolscale-env/1``)
---------------------------------
UTF-8 JSON Lines, one environment per line; every row is a JSON object with exactly these keys:

``schema`` : str
    ``"toolscale-env/1"``.
``env_id`` : str
    Unique id of the sample within the file.
``domain`` : str
    Bundled server domain the facts come from (``synth.servers.db.DOMAINS``), ``""`` if hand-written.
``seed`` : int
    Generation seed (database seed; the sampling stream is derived from it and ``env_id``).
``prompt`` : str
    The user query the policy sees. Targets and sub-answers are never part of it.
``structure`` : ``"single-hop"`` | ``"multi-hop"`` | ``"parallel-multi-hop"``
    Shape of the QA dependency graph.
``hop_budget`` : int
    H, the hop budget of the generator (tool hops on the longest path <= H).
``main_question`` : str, ``main_answer`` : str
    The main question and its canonical answer (string; numbers without a trailing ``.0``).
``nodes`` : list of objects
    The QA dependency graph: ``{"id", "question", "answer", "tool" (str or null for a reasoning node),
    "arguments" (object or null), "depends_on" (list of node ids), "mode" ("serial" | "parallel")}``.
    Edges are ``depends_on``; the graph must be a DAG with a single sink whose answer is ``main_answer``.
``tools`` : list of objects
    OpenAI tool schemas ``{"type": "function", "function": {"name", "description", "parameters"}}`` shown to
    the policy, distractors included, in presentation order. Names must be unique.
``tool_sources`` : list of objects
    ``{"name", "source"}``: Python source (standard library only) defining a top-level function named like the
    tool; it is called with the call's arguments as keywords and returns a string or a JSON value. Exactly one
    source per schema.
``distractors`` : list of objects
    ``{"name", "tier" ("high" | "medium" | "low"), "similarity" (0-1)}``: which tools are irrelevant, and their
    max similarity to a gold tool (TF-IDF cosine over character n-grams of name, description and parameters).
``targets`` : list of objects
    ``{"node", "tool", "arguments", "answer"}``: the golden call of each tool-needing node and the answer its
    output must contain (reward targets; never shown to the policy).
``max_turns`` : int
    Most tool calls allowed in an episode (32).
``meta`` : object
    Provenance: ``db_id``, ``generator``, ``tables``, distractor shortfalls, ...

Loading never merges or repairs anything: a row with two tools of one name loads as it is, and
:func:`synth.envs.validate.check_sample` rejects it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from synth.envs.errors import EnvFormatError
from synth.envs.models import SCHEMA_VERSION, EnvSample
from toolscale.files import atomic_write_text

__all__ = ["sample_to_row", "parse_row", "iter_rows", "load_envs", "dump_envs"]


def sample_to_row(sample: EnvSample) -> dict[str, Any]:
    """The JSON object of one artifact row."""
    return sample.model_dump(mode="json", by_alias=True)


def _pydantic_line(err: ValidationError) -> str:
    first = err.errors()[0]
    loc = ".".join(str(x) for x in first["loc"]) or "(row)"
    more = f" (+{err.error_count() - 1} more)" if err.error_count() > 1 else ""
    return f"field {loc}: {first['msg']}{more}"


def parse_row(obj: Any, row: int = 0) -> EnvSample:
    """Validate one decoded row; raises :class:`EnvFormatError` naming the row and the first bad field."""
    if not isinstance(obj, dict):
        raise EnvFormatError(f"row {row}: expected a JSON object, got {type(obj).__name__}")
    version = obj.get("schema", SCHEMA_VERSION)
    if version != SCHEMA_VERSION:
        raise EnvFormatError(f"row {row}: unsupported schema {version!r}; expected {SCHEMA_VERSION!r}")
    try:
        return EnvSample.model_validate(obj)
    except ValidationError as err:
        raise EnvFormatError(f"row {row}: not a toolscale-env/1 row: {_pydantic_line(err)}") from None


def iter_rows(path: str | os.PathLike) -> Iterator[tuple[int, EnvSample | None, str]]:
    """Yield ``(row_number, sample or None, problem)`` for every non-blank line; never stops at a bad row."""
    p = Path(path)
    if not p.is_file():
        raise EnvFormatError(f"{p}: no such file (expected an envs.jsonl artifact)")
    with p.open(encoding="utf-8") as fh:
        for i, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as err:
                yield i, None, f"row {i}: not JSON ({err.msg} at column {err.colno})"
                continue
            try:
                yield i, parse_row(obj, i), ""
            except EnvFormatError as err:
                yield i, None, str(err)


def load_envs(path: str | os.PathLike) -> list[EnvSample]:
    """All samples of an ``envs.jsonl`` file; raises :class:`EnvFormatError` at the first bad row."""
    out = []
    for _, sample, problem in iter_rows(path):
        if sample is None:
            raise EnvFormatError(f"{path}: {problem}")
        out.append(sample)
    return out


def dump_envs(samples: Iterable[EnvSample], path: str | os.PathLike) -> Path:
    """Write samples as JSONL atomically (temp file + rename); returns the path."""
    text = "".join(json.dumps(sample_to_row(s), ensure_ascii=False, sort_keys=False) + "\n" for s in samples)
    return atomic_write_text(path, text)
