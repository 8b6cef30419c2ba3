"""allocator/proposal.py: what the criterion is told about the fitted runs."""

from __future__ import annotations

from allocator.proposal import _sparse


def test_the_runs_at_sizes_above_the_largest_rung_are_counted_toward_one() -> None:
    fitted = [1e5] * 6 + [1e6] * 4 + [1e7, 1e7, 1e8]
    assert _sparse(fitted, 1e6) == {1e7: 2, 1e8: 1}  # the rungs' own runs are not sparse
    assert _sparse(fitted, None) == {1e5: 6, 1e6: 4, 1e7: 2, 1e8: 1}  # no rung yet: every size counts toward one
    assert _sparse([], 1e6) == {}
