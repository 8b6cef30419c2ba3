"""grid/coded.py: coded design matrices from pyDOE3 (generators, GSD, LHS, D-optimal subsets)."""

from __future__ import annotations

import numpy as np
import pytest
from pyDOE3 import gsd

from grid.alias import resolution_of, two_level_aliases
from grid.coded import _first_gsd, choose_generators, fractional, greedy_d_optimal, latin_hypercube, multilevel
from grid.errors import DesignError


@pytest.mark.parametrize("k,res,points", [(4, 4, 8), (5, 5, 16), (6, 4, 16), (6, 3, 8), (7, 4, 16), (3, 3, 4)])
def test_fewest_points_reaching_the_resolution(k, res, points):
    gen, got = choose_generators(k, res)
    h, _, twin = fractional(k, resolution=res, generators=gen)
    assert h.shape == (points, k)
    assert got >= res and resolution_of(two_level_aliases(twin)[0]) == got


def test_unreachable_resolution_names_the_point_count():
    with pytest.raises(DesignError, match=r"resolution V over 6 axes cannot be reached with "
                                          r"design.fraction_points = 16 \(best: IV\); 32 points reach it"):
        choose_generators(6, 5, 16)


def test_full_factorial_when_points_equal_2_to_k():
    gen, got = choose_generators(3, 4, 8)
    assert gen == "a b c" and got is None


def test_foldover_doubles_and_mirrors_columns():
    h, _, _ = fractional(3, resolution=3, points=4, foldover=[0])
    assert h.shape == (8, 3)
    assert np.array_equal(h[4:, 0], -h[:4, 0]) and np.array_equal(h[4:, 1:], h[:4, 1:])


@pytest.mark.parametrize("levels,reduction", [([4, 4, 4, 3, 3, 4], 10), ([3, 4, 6], 4), ([3, 3, 3, 3], 2), ([2, 2], 3),
                                             ([4, 3, 3, 3, 4], 6)])
def test_first_gsd_equals_pydoe3(levels, reduction):
    assert np.array_equal(_first_gsd(levels, reduction), gsd(levels, reduction))


def test_multilevel_codes_levels_evenly():
    h = multilevel([3, 4], 1)
    assert h.shape == (12, 2)
    assert sorted(set(h[:, 0])) == [-1.0, 0.0, 1.0]
    assert np.allclose(sorted(set(h[:, 1])), [-1, -1 / 3, 1 / 3, 1])
    with pytest.raises(DesignError, match="gsd_reduction = 5 does not work"):
        multilevel([2, 3], 5)


def test_lhs_is_a_latin_hypercube():
    h = latin_hypercube(3, 10, seed=1)
    assert h.shape == (10, 3) and h.min() >= -1 and h.max() <= 1
    for col in h.T:  # one point per stratum of width 0.2 in coded units
        assert sorted(np.floor((col + 1) / 0.2).astype(int).tolist()) == list(range(10))
    assert np.array_equal(h, latin_hypercube(3, 10, seed=1))


def test_greedy_d_optimal_prefers_corners_and_is_deterministic():
    h = np.vstack([np.array([[x, y] for x in (-1, 1) for y in (-1, 1)]), np.zeros((3, 2))])
    pick = greedy_d_optimal(h, 4)
    assert pick == [0, 1, 2, 3]
    assert greedy_d_optimal(h, 10) == list(range(7))


@pytest.mark.parametrize("levels,reduction", [([2, 3], 5), ([2, 3], 6)])
def test_first_gsd_fails_where_pydoe3_fails(levels, reduction):
    with pytest.raises(ValueError):
        gsd(levels, reduction)
    with pytest.raises(ValueError):
        _first_gsd(levels, reduction)
