"""benchmarks/reliability.py: every case names tests that exist, and a case holds only if all of them pass."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_case_names_existing_tests(benchmark_module):
    mod = benchmark_module("reliability")
    cases = mod.load_cases()
    assert len(cases) >= 30 and len({c["case"] for c in cases}) == len(cases)
    for c in cases:
        assert c["category"] and c["issue"].isdigit() and c["tests"], c
        for node in c["tests"].split():
            file, _, name = node.partition("::")
            text = (ROOT / file).read_text(encoding="utf-8")
            assert re.search(rf"^def {re.escape(name)}\(", text, re.M), f"{c['case']}: {node} is not a test"


def test_a_case_holds_only_when_every_test_passed(benchmark_module):
    mod = benchmark_module("reliability")
    cases = [{"case": "a", "category": "c", "issue": "1", "tests": "f.py::t1 f.py::t2"},
             {"case": "b", "category": "c", "issue": "1", "tests": "f.py::t3"},
             {"case": "d", "category": "c", "issue": "1", "tests": "f.py::t4"}]
    got = mod.verdicts(cases, {"f.py::t1": "passed", "f.py::t2": "failed", "f.py::t3": "passed"})
    assert [r["verdict"] for r in got] == ["broke", "held", "not run"]
