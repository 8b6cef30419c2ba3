"""allocator/proposal.py: what the criterion is told about the fitted runs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from allocator.preposterior import Ensemble
from allocator.proposal import _lone_sizes, _sparse, width_after


def test_the_runs_at_sizes_above_the_largest_rung_are_counted_toward_one() -> None:
    fitted = [1e5] * 6 + [1e6] * 4 + [1e7, 1e7, 1e8]
    assert _sparse(fitted, 1e6) == {1e7: 2, 1e8: 1}  # the rungs' own runs are not sparse
    assert _sparse(fitted, None) == {1e5: 6, 1e6: 4, 1e7: 2, 1e8: 1}  # no rung yet: every size counts toward one
    assert _sparse([], 1e6) == {}


def test_a_proposal_that_leaves_a_size_short_of_a_rung_says_so() -> None:
    ens = Ensemble(gains=np.zeros(2), scores=np.zeros((2, 2)), preds=np.zeros((2, 1)), noise_var=np.ones(1),
                   cand_n=np.ones(1), target_n=1e8, max_compared_n=1e6, sparse_runs={1e7: 1}, rung_runs=3)
    notes = _lone_sizes([1e5, 1e7, 1e8], ["xs", "l", "xl"], ens)
    assert len(notes) == 2  # the rung's runs are fine; l has 1 + 1, xl 1
    assert notes[0].startswith("2 run(s) at l after these (1 proposed): fewer than 3, so l is not a rung")
    assert notes[1].startswith("1 run(s) at xl")
    assert _lone_sizes([1e7, 1e7, 1e8, 1e8, 1e8], ["l", "l", "xl", "xl", "xl"], ens) == []  # both become rungs


def test_the_width_expected_after_keeps_what_no_run_removes() -> None:
    """allocate's width 0.10 over the criterion's 0.06: the other 0.08 (a run's noise in each arm, the error past
    an axis's tested maximum) stays, so runs that halve the criterion's width leave sqrt(0.08^2 + 0.03^2), not
    half of 0.10; no run leaves less than 0.08. Where the criterion's width is the larger, the shrink is a ratio."""
    assert width_after(0.10, 0.06, 0.06) == pytest.approx(0.10)
    assert width_after(0.10, 0.06, 0.03) == pytest.approx(math.hypot(0.08, 0.03))
    assert width_after(0.10, 0.06, 0.0) == pytest.approx(0.08)
    assert width_after(0.05, 0.06, 0.03) == pytest.approx(0.025)
    assert width_after(0.10, 0.0, 0.0) == 0.10
