"""Irrelevant tools in three similarity tiers, with a local similarity (no model download).

Similarity between two tools is the cosine of TF-IDF vectors of character n-grams (3-5, lower-cased) of the
tool text: name (underscores as spaces), description, and each parameter's name and description. IDF is fitted
on the gold tools plus the candidate pool of the environment:

.. math::

    \\mathrm{idf}(g) = \\ln\\frac{1 + N}{1 + \\mathrm{df}(g)} + 1, \\qquad
    s(a, b) = \\frac{v_a \\cdot v_b}{\\lVert v_a \\rVert \\lVert v_b \\rVert}

A candidate's similarity is its max over the gold tools; tiers follow ASTRA (seed 000, Q4): high > 0.85,
medium 0.4-0.85, low < 0.4. Candidates are real tools, all with deterministic sources: lookups over every table
of every bundled database (real rows, named as the SFT data names them: a shop environment may offer travel's
``get_flight``), near-duplicate lookups over another instance of the gold tables (``get_archived_order``), and a
few generic utilities. No candidate is a stub that answers nothing: an SFT-trained policy that reaches for a tool
name it knows gets a real record back, never "no matching record" under an SFT name.
When a tier has fewer candidates than asked, fewer are used and the shortfall is reported.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from synth.envs.compile import LookupTool, lookup_tool, singular
from synth.envs.models import ToolSource

__all__ = ["Candidate", "tool_text", "similarity_matrix", "tier_of", "candidate_pool", "pick_distractors",
           "TIERS"]

TIERS = {"high": (0.85, 1.0 + 1e-9), "medium": (0.4, 0.85), "low": (-1e-9, 0.4)}
"""Tier -> half-open similarity interval ``(lo, hi]`` (low: ``[0, 0.4)``)."""


@dataclass(frozen=True)
class Candidate:
    """A tool that may be offered as a distractor: schema and executable source."""

    schema: dict[str, Any]
    source: ToolSource
    origin: str
    """Where it comes from (``lookup:domain.table``, ``catalog:domain``, ``utility``)."""

    @property
    def name(self) -> str:
        return self.schema["function"]["name"]


def tool_text(schema: dict[str, Any]) -> str:
    """The text a tool is compared on: name, description, parameter names and descriptions."""
    fn = schema.get("function") or {}
    parts = [str(fn.get("name", "")).replace("_", " "), str(fn.get("description", ""))]
    for pname, p in ((fn.get("parameters") or {}).get("properties") or {}).items():
        parts.append(pname.replace("_", " "))
        if isinstance(p, dict):
            parts.append(str(p.get("description", "")))
    return " ".join(parts).lower()


def _grams(text: str) -> Counter:
    text = " " + " ".join(text.split()) + " "
    return Counter(text[i:i + n] for n in (3, 4, 5) for i in range(len(text) - n + 1))


def similarity_matrix(a: Sequence[dict[str, Any]], b: Sequence[dict[str, Any]]) -> np.ndarray:
    """Cosine similarities (len(a) x len(b)) of TF-IDF character n-gram vectors, IDF fitted on a + b."""
    docs = [_grams(tool_text(s)) for s in list(a) + list(b)]
    df: Counter = Counter()
    for d in docs:
        df.update(d.keys())
    n = len(docs)
    vocab = {g: i for i, g in enumerate(df)}
    idf = np.array([math.log((1 + n) / (1 + df[g])) + 1.0 for g in vocab])
    mat = np.zeros((n, len(vocab)))
    for i, d in enumerate(docs):
        for g, c in d.items():
            mat[i, vocab[g]] = c
    mat *= idf
    norms = np.linalg.norm(mat, axis=1, keepdims=True)
    mat = mat / np.where(norms == 0, 1.0, norms)
    return mat[: len(a)] @ mat[len(a):].T


def tier_of(similarity: float) -> str:
    """``high`` (> 0.85), ``medium`` (0.4-0.85) or ``low`` (< 0.4)."""
    if similarity > 0.85:
        return "high"
    if similarity >= 0.4:
        return "medium"
    return "low"


_UTILITIES: list[tuple[str, str, dict[str, tuple[str, str]], str]] = [
    ("count_words", "Count the words in a piece of text.", {"text": ("string", "the text")},
     "def count_words(text):\n    return {'words': len(str(text).split())}\n"),
    ("reverse_string", "Reverse the characters of a string.", {"text": ("string", "the text")},
     "def reverse_string(text):\n    return {'reversed': str(text)[::-1]}\n"),
    ("celsius_to_fahrenheit", "Convert a temperature from Celsius to Fahrenheit.",
     {"celsius": ("number", "temperature in degrees Celsius")},
     "def celsius_to_fahrenheit(celsius):\n    return {'fahrenheit': round(float(celsius) * 9 / 5 + 32, 2)}\n"),
    ("compute_tip", "Compute a restaurant tip for a bill amount and a percentage.",
     {"bill": ("number", "bill amount"), "percent": ("number", "tip percentage")},
     "def compute_tip(bill, percent):\n    return {'tip': round(float(bill) * float(percent) / 100, 2)}\n"),
    ("is_palindrome", "Check whether a word reads the same backwards.", {"word": ("string", "a word")},
     "def is_palindrome(word):\n    w = str(word).lower()\n    return {'palindrome': w == w[::-1]}\n"),
    ("roll_forward_date", "Add a number of days to an ISO date (YYYY-MM-DD).",
     {"date": ("string", "ISO date"), "days": ("integer", "days to add")},
     "import datetime\n\ndef roll_forward_date(date, days):\n"
     "    d = datetime.date.fromisoformat(str(date)) + datetime.timedelta(days=int(days))\n"
     "    return {'date': d.isoformat()}\n"),
]


def _schema(name: str, description: str, params: dict[str, tuple[str, str]]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": {k: {"type": t, "description": d} for k, (t, d) in params.items()},
        "required": list(params), "additionalProperties": False}}}


def candidate_pool(databases: dict[str, dict[str, list[dict[str, Any]]]], *, gold: Sequence[LookupTool] = (),
                   archives: dict[str, dict[str, list[dict[str, Any]]]] | None = None) -> list[Candidate]:
    """Distractor candidates, gold signatures and names excluded.

    Parameters
    ----------
    databases : domain -> database
        Every table's lookups by each key become candidates (real rows).
    gold : the environment's gold tools
    archives : domain -> database, optional
        Another instance of the gold tools' databases: each gold tool gets a near-duplicate
        ``get_archived_<entity>`` (by another key: ``get_archived_<entity>_by_<key>``) over those rows, with the
        gold tool's output fields (the confusable, high-similarity kind: the archive does not hold the rows the
        question is about).
    """
    from synth.envs.generate import profile_database

    gold_sigs = {t.signature for t in gold}
    taken = {t.name for t in gold}
    out: list[Candidate] = []

    def add(schema: dict[str, Any], source: ToolSource, origin: str) -> None:
        name = schema["function"]["name"]
        if name in taken:
            return
        taken.add(name)
        out.append(Candidate(schema, source, origin))

    for g in gold:
        arch = (archives or {}).get(g.domain, {}).get(g.table)
        if arch:
            entity = singular(g.table)
            name = f"get_archived_{entity}" if g.key == f"{entity}_id" else f"get_archived_{entity}_by_{g.key}"
            shown = [f for f in g.fields() if f != g.field_of(g.key)]
            tool = replace(g, name=name, domain=f"{g.domain}-archive", rows=tuple(arch), key_description="",
                           description=f"Get one archived {entity}'s details ({', '.join(shown)}) by {g.key} "
                                       f"(the archive of past records).")
            add(tool.schema(), tool.source(), f"archive:{g.domain}.{g.table}")
    for domain, db in databases.items():
        prof = profile_database(db)
        for table, keys in prof.keys.items():
            for key in keys:
                tool = lookup_tool(domain, table, key, db[table])
                if tool.signature in gold_sigs:
                    continue
                if tool.name in taken:
                    tool = replace(tool, name=f"{domain}_{tool.name}")
                add(tool.schema(), tool.source(), f"lookup:{domain}.{table}")
    for name, desc, params, src in _UTILITIES:
        add(_schema(name, desc, params), ToolSource(name=name, source=src), "utility")
    return out


def pick_distractors(gold_schemas: Sequence[dict[str, Any]], pool: Sequence[Candidate], counts: dict[str, int],
                     rng: random.Random) -> tuple[list[tuple[Candidate, str, float]], dict[str, int]]:
    """Draw ``counts[tier]`` candidates per tier; returns ``[(candidate, tier, similarity)]`` and shortfalls."""
    if not pool or not gold_schemas or not any(counts.values()):
        return [], {t: n for t, n in counts.items() if n}
    sims = similarity_matrix([c.schema for c in pool], list(gold_schemas)).max(axis=1)
    by_tier: dict[str, list[int]] = {"high": [], "medium": [], "low": []}
    for i, s in enumerate(sims):
        by_tier[tier_of(float(s))].append(i)
    picked: list[tuple[Candidate, str, float]] = []
    short: dict[str, int] = {}
    for tier in ("high", "medium", "low"):
        want = counts.get(tier, 0)
        idx = by_tier[tier]
        chosen = rng.sample(idx, min(want, len(idx)))
        if len(chosen) < want:
            short[tier] = want - len(chosen)
        picked += [(pool[i], tier, round(float(sims[i]), 4)) for i in chosen]
    return picked, short
