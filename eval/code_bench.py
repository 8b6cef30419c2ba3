"""The code domain's benchmarks: ``code-indist`` and ``code-heldout-apis`` (items from :mod:`synth.code.bench`).

Each :class:`~eval.models.CodeItem` is scored as a call item is (``eval.runner``): bits per byte, loss and
token probability of the reference ``write_file`` call on every item, and on the generated items ``score``,
the pass rate: the share whose answer writes a module that passes the hidden tests of the functions written
so far. :func:`match_code_items` builds that module from the answer (the file as the prompt left it plus an
``append``, or the answer's whole file) and runs every item's tests in the jail in one batch
(:func:`synth.code.runner.run_suites`). ``field_match`` is the share of those tests passed.
"""

from __future__ import annotations

from collections.abc import Sequence

from eval.errors import BenchmarkDataError
from eval.models import CodeItem, MatchResult, ParsedOutput

__all__ = ["load_code_indist", "load_code_heldout", "load_code_valid", "match_code_items", "written_module"]


def _load(which: str) -> list[CodeItem]:
    try:
        from synth import code_items
    except ImportError as err:  # pragma: no cover - synth is part of this checkout
        raise BenchmarkDataError(f"code benchmarks need synth.code: {err}") from None
    return [CodeItem(id=d["id"], category=d["category"], messages=d["messages"],
                     functions=[t["function"] for t in d["tools"]], ground_truth=d["ground_truth"],
                     source=d["source"], module=d["module"], path=d["path"], prefix=d["prefix"], tests=d["tests"],
                     dependent=d["dependent"]) for d in code_items(which)]


def load_code_indist() -> list[CodeItem]:
    """``code-indist``: 256 write steps of tasks over the training APIs, in held-out repositories."""
    return _load("indist")


def load_code_heldout() -> list[CodeItem]:
    """``code-heldout-apis``: 200 write steps whose function uses an API no training dataset draws."""
    return _load("heldout")


def load_code_valid() -> list[CodeItem]:
    """``code-valid``: 128 write steps over the training APIs in repositories of neither test benchmark."""
    return _load("valid")


def written_module(item: CodeItem, parsed: ParsedOutput) -> tuple[str | None, str]:
    """``(module text, "")`` the answer writes to ``item.path``, or ``(None, why not)``."""
    writes = [c for c in parsed.calls if c.name == "write_file"]
    if len(parsed.calls) != 1 or not writes:
        return None, f"expected one write_file call, got {[c.name for c in parsed.calls] or 'none'}"
    args = writes[0].arguments
    content, append = args.get("content"), args.get("append", False)
    if str(args.get("path", "")).strip().lstrip("./") != item.path:
        return None, f"wrote {args.get('path')!r}, expected {item.path!r}"
    if not isinstance(content, str) or not isinstance(append, bool):
        return None, "content must be a string and append true or false"
    return (item.prefix + content if append else content), ""


def match_code_items(items: Sequence[CodeItem], parsed: Sequence[ParsedOutput]) -> list[MatchResult]:
    """One verdict per item: valid when the written module passes every test, ``field_match`` the share passed."""
    from synth import Suite, run_suites

    modules = [written_module(it, p) for it, p in zip(items, parsed, strict=True)]
    suites = {i: Suite(it.module, m, it.tests) for i, (it, (m, _)) in enumerate(zip(items, modules)) if m is not None}
    results = run_suites(list(suites.values())) if suites else {}
    out = []
    for i, (it, (m, why)) in enumerate(zip(items, modules, strict=True)):
        if m is None:
            out.append(MatchResult(valid=False, error=why, error_type="no_write"))
            continue
        r = results[suites[i].key]
        share = r.passed / r.total if r.total else 0.0
        err = r.error or "; ".join(r.failures[:2])
        out.append(MatchResult(valid=r.all_passed, error="" if r.all_passed else err[:300],
                               error_type="" if r.all_passed else ("module_error" if r.error else "tests_fail"),
                               field_match=share))
    return out
