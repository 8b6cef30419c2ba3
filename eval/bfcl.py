"""The Berkeley Function Calling Leaderboard's v4 data, read straight from the ``bfcl-eval`` wheel.

``bfcl-eval`` pins its own dependencies hard (numpy 1.26.4 and more), so it never enters our
environment: ``make install`` downloads the wheel with ``pip download --no-deps`` into
``.cache/bfcl/`` and this module opens it as a zip. ``TOOLSCALE_BFCL_WHEEL`` may name another
copy of the same wheel (a file, or a folder holding it).

Categories (BFCL's single-turn, non-live AST set): ``simple`` (``BFCL_v4_simple_python``),
``multiple``, ``parallel``, ``parallel_multiple`` and ``irrelevance``, each question with its
possible answers from ``possible_answer/`` (irrelevance has none: the right answer is no call).
"""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path
from typing import Any

from eval.errors import BenchmarkDataError
from eval.models import CATEGORIES, CallItem

__all__ = ["BFCL_VERSION", "WHEEL_NAME", "ENV_VAR", "FILES", "find_wheel", "load_bfcl", "read_category"]

BFCL_VERSION = "2026.3.23"
"""The pinned ``bfcl-eval`` release whose data files define benchmark version ``v4-2026.3.23``."""
WHEEL_NAME = f"bfcl_eval-{BFCL_VERSION}-py3-none-any.whl"
ENV_VAR = "TOOLSCALE_BFCL_WHEEL"
FILES: dict[str, str] = {
    "simple": "BFCL_v4_simple_python.json",
    "multiple": "BFCL_v4_multiple.json",
    "parallel": "BFCL_v4_parallel.json",
    "parallel_multiple": "BFCL_v4_parallel_multiple.json",
    "irrelevance": "BFCL_v4_irrelevance.json",
}
"""Category -> data file name (questions under ``bfcl_eval/data/``, answers under ``.../possible_answer/``)."""
_DATA = "bfcl_eval/data/"
_FETCH = f"pip download --no-deps bfcl-eval=={BFCL_VERSION} -d .cache/bfcl  (or: make install)"


def _candidates() -> list[Path]:
    repo = Path(__file__).resolve().parents[1]
    return [repo / ".cache" / "bfcl" / WHEEL_NAME, Path.cwd() / ".cache" / "bfcl" / WHEEL_NAME]


def find_wheel(path: str | os.PathLike[str] | None = None) -> Path:
    """The BFCL wheel: ``path``, else ``$TOOLSCALE_BFCL_WHEEL``, else ``.cache/bfcl/`` of the checkout or cwd.

    Raises
    ------
    BenchmarkDataError
        When no wheel is found, or the one named is not ``bfcl-eval`` version :data:`BFCL_VERSION`.
    """
    given = path or os.environ.get(ENV_VAR)
    if given:
        p = Path(given)
        if p.is_dir():
            p = p / WHEEL_NAME
        if not p.is_file():
            raise BenchmarkDataError(f"BFCL wheel {str(p)!r} (from {'argument' if path else ENV_VAR}) does not exist; "
                                     f"expected {WHEEL_NAME}; get it with: {_FETCH}")
        if p.name != WHEEL_NAME:
            raise BenchmarkDataError(f"BFCL wheel {p.name!r} is not the pinned version; expected {WHEEL_NAME}")
        return p
    for p in _candidates():
        if p.is_file():
            return p
    raise BenchmarkDataError(f"BFCL data not found (looked for .cache/bfcl/{WHEEL_NAME}); get it with: {_FETCH}")


def _read_jsonl(zf: zipfile.ZipFile, member: str) -> list[dict[str, Any]]:
    try:
        text = zf.read(member).decode("utf-8")
    except KeyError:
        raise BenchmarkDataError(f"{member!r} is missing from the BFCL wheel {zf.filename}") from None
    rows = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except ValueError as err:
                raise BenchmarkDataError(f"{member}:{n} is not valid JSON ({err})") from None
    return rows


def _function_list(functions: Any) -> list[dict[str, Any]]:
    return functions if isinstance(functions, list) else [functions]


def read_category(zf: zipfile.ZipFile, category: str) -> list[CallItem]:
    """The items of one category from an open wheel, in file order."""
    questions = _read_jsonl(zf, _DATA + FILES[category])
    answers: dict[str, Any] = {}
    if category != "irrelevance":
        answers = {row["id"]: row["ground_truth"] for row in _read_jsonl(zf, _DATA + "possible_answer/" + FILES[category])}
    items = []
    for q in questions:
        if category != "irrelevance" and q["id"] not in answers:
            raise BenchmarkDataError(f"BFCL item {q['id']!r} has no possible answer")
        items.append(CallItem(id=q["id"], category=category, messages=list(q["question"][0]),
                              functions=_function_list(q["function"]), ground_truth=answers.get(q["id"], []),
                              source="bfcl"))
    return items


def load_bfcl(categories: tuple[str, ...] | list[str] | None = None, *,
              wheel: str | os.PathLike[str] | None = None) -> list[CallItem]:
    """All items of the given categories (default: all five), category by category in file order.

    Examples
    --------
    >>> items = load_bfcl(["simple"])          # doctest: +SKIP
    >>> len(items), items[0].id
    (400, 'simple_python_0')
    """
    categories = list(categories or CATEGORIES)
    bad = [c for c in categories if c not in FILES]
    if bad:
        raise BenchmarkDataError(f"unknown BFCL category {bad[0]!r}; expected one of {', '.join(FILES)}")
    path = find_wheel(wheel)
    try:
        with zipfile.ZipFile(path) as zf:
            return [item for c in categories for item in read_category(zf, c)]
    except zipfile.BadZipFile:
        raise BenchmarkDataError(f"{path} is not a readable wheel (zip); delete it and run: {_FETCH}") from None
