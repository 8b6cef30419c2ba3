"""benchmarks/_next_summary.py: the interval of the median width ratio resamples each truth's seeds in pairs."""

from __future__ import annotations

import pytest


def _rows(ratio_by_seed: list[float], truths: int = 3) -> list[dict]:
    rows = []
    for t in range(truths):
        for s, q in enumerate(ratio_by_seed):
            rows.append({"truth": f"t{t}", "seed": s, "policy": "random", "k": 12, "width": 1.0})
            rows.append({"truth": f"t{t}", "seed": s, "policy": "next", "k": 12, "width": q})
    return rows


def test_the_median_ratio_interval_holds_the_estimate_and_shrinks_with_agreeing_seeds(benchmark_module):
    mod = benchmark_module("_next_summary")
    noisy = _rows([0.5, 0.9, 0.7, 0.6, 0.8])
    lo, hi = mod.median_ratio_interval(noisy, "next", 12, "width")
    est = float(mod._ratio_record(noisy, "next", 12, "width", "w", "x")["value"][0])
    assert lo <= est <= hi and 0.5 <= lo < hi <= 0.9
    same = _rows([0.7] * 5)
    assert mod.median_ratio_interval(same, "next", 12, "width") == pytest.approx([0.7, 0.7])  # no spread
    assert mod.median_ratio_interval(_rows([0.7]), "next", 12, "width") is None  # one seed: nothing to resample
