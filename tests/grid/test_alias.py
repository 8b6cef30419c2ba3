"""grid/alias.py: resolution, alias map and D-efficiency against hand-computed designs."""

from __future__ import annotations

import numpy as np
import pytest
from pyDOE3 import ff2n, fracfact

from grid.alias import alias_report, d_efficiency, interaction_aliases, resolution_of, two_level_aliases


@pytest.mark.parametrize("gen,resolution", [
    ("a b ab", 3),          # 2^(3-1), I = abc
    ("a b c abc", 4),       # 2^(4-1), I = abcd
    ("a b c d abcd", 5),    # 2^(5-1), I = abcde
    ("a b c ab ac", 3),     # 2^(5-2), I = abd = ace = bcde
    ("a b c d abc abd", 4), # 2^(6-2), I = abce = abdf = cdef
])
def test_resolution_of_hand_computed_fractions(gen, resolution):
    alias_map, words = two_level_aliases(fracfact(gen))
    assert resolution_of(alias_map) == resolution
    assert min(len(w) for w in words) == resolution


def test_full_factorial_has_no_aliases():
    alias_map, words = two_level_aliases(ff2n(3))
    assert resolution_of(alias_map) is None and words == []
    assert len(alias_map) == 7  # every effect on its own


def test_alias_map_of_half_fraction_of_three_factors():
    alias_map, words = two_level_aliases(fracfact("a b ab"))
    assert set(alias_map) == {"a = bc", "b = ac", "c = ab", "abc"}
    assert words == ["abc"]


def test_defining_relation_of_2_6_2():
    _, words = two_level_aliases(fracfact("a b c d abc abd"))
    assert sorted(words) == ["abce", "abdf", "cdef"]


def test_d_efficiency():
    assert d_efficiency(ff2n(3)) == pytest.approx(1.0)
    assert d_efficiency(fracfact("a b c abc")) == pytest.approx(1.0)
    # one row repeated: the main-effects model is singular
    assert d_efficiency(np.array([[1.0, 1.0], [1.0, 1.0], [-1.0, -1.0]])) == 0.0
    # three-level full factorial of two axes, coded -1, 0, 1: det(X'X) = 9 * 6 * 6, p = 3, n = 9
    h = np.array([[x, y] for x in (-1, 0, 1) for y in (-1, 0, 1)], dtype=float)
    assert d_efficiency(h) == pytest.approx((9 * 6 * 6) ** (1 / 3) / 9)


def test_interaction_aliases_resolution_iii_vs_iv():
    # 2^(3-1) III: c = ab, so the a*b interaction biases the c main effect by exactly 1
    a, joint, single = interaction_aliases(fracfact("a b ab"), [(0, 1)])
    assert not single[0] and not joint
    a, joint, single = interaction_aliases(fracfact("a b c abc"), [(0, 1), (2, 3)])
    assert np.allclose(a, 0.0) and all(single)
    assert not joint  # ab = cd in a 2^(4-1) IV fraction


def test_report_answers_the_interaction_question():
    kinds = ["diversity", "diversity", "quality", "quality"]
    names = ["tools", "tasks", "repair", "depth"]
    iv = alias_report(fracfact("a b c abc"), names, kinds, regular=True)
    assert iv.resolution == 4 and iv.qd_clear_of_main and not iv.qd_jointly_estimable
    assert "tools*repair = tasks*depth" in iv.highlights  # ac = bd
    assert "clear of main effects" in iv.statement
    iii = alias_report(fracfact("a b ab c"), names, kinds, regular=True)  # tasks... : c = ab aliases tools*tasks
    assert iii.resolution == 3
    full = alias_report(ff2n(4), names, kinds, regular=True)
    assert full.resolution is None and full.qd_clear_of_main and full.qd_jointly_estimable
    assert full.qd_interactions == ["repair*tools", "repair*tasks", "depth*tools", "depth*tasks"]


def test_report_resolution_iii_confounds_quality_by_diversity():
    kinds = ["diversity", "quality", "quality"]
    rep = alias_report(fracfact("a b ab"), ["tools", "repair", "depth"], kinds, regular=True)
    # depth = tools*repair: the quality x diversity interaction is a main effect in disguise
    assert not rep.qd_clear_of_main
    assert rep.statement.startswith("NOT every quality x diversity interaction")
    assert "tools*repair = depth" in rep.highlights or "depth = tools*repair" in rep.highlights
