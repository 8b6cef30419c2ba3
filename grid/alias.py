"""Alias reports: which effects a design confounds, its resolution and D-efficiency.

Two-level regular designs are analysed with pyDOE3's ``fracfact_aliasing`` (its alias
map is used as data: ``"a = bef = cdf"`` strings over the axis letters); any design,
multi-level or random, gets the numeric alias matrix of the quality x diversity
two-factor interactions on the main-effects model. The question the fit cares about:
is every quality x diversity interaction estimable clear of main effects (so the
additive and the multiplicative hypotheses can be told apart)?
"""

from __future__ import annotations

import itertools
import string
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

__all__ = [
    "AliasReport",
    "resolution_of",
    "d_efficiency",
    "two_level_aliases",
    "interaction_aliases",
    "alias_report",
    "ROMAN",
    "MAX_EXACT_AXES",
]

ROMAN = {3: "III", 4: "IV", 5: "V", 6: "VI", 7: "VII", 8: "VIII"}
_CLEAR_TOL = 1e-8
MAX_EXACT_AXES = 14
"""Exact alias maps enumerate all 2^k - 1 effects; above this many axes only the numeric report is made."""


class AliasReport(BaseModel):
    """What a design can and cannot separate."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    regular: bool
    """True for two-level regular fractions (alias map exact); False for multi-level or random designs."""
    resolution: int | None
    """Length of the shortest word of the defining relation; None for full factorials and non-regular designs."""
    letters: dict[str, str]
    """pyDOE3 factor letter -> axis name (``a`` is the first axis)."""
    alias_map: list[str]
    """pyDOE3 alias groups over the letters, e.g. ``"a = bef = cdf"`` (regular designs only)."""
    defining_relation: list[str]
    """Words equal to the identity, as axis products (regular designs only)."""
    highlights: list[str]
    """Aliases among effects of order <= 2, named by axis (``"x*y = u*v"``), or partial aliases of
    quality x diversity interactions with main effects (``"q*d ~ 0.25 x"``) for non-regular designs."""
    d_efficiency: float
    """D-efficiency of the main-effects model in coded units, ``det(X'X)^(1/p) / n`` (1 = orthogonal)."""
    qd_interactions: list[str]
    """The quality x diversity interactions considered (``"quality*diversity"``)."""
    qd_max_alias_with_main: float
    """Largest |alias coefficient| of a quality x diversity interaction on a main effect (0 = clear)."""
    qd_clear_of_main: bool
    """Every quality x diversity interaction is estimable and aliased with no main effect."""
    qd_jointly_estimable: bool
    """All quality x diversity interactions can be estimated together with the main effects (full rank)."""
    statement: str
    """One sentence answering whether the additive and multiplicative hypotheses can be separated."""


def resolution_of(alias_map: Sequence[str]) -> int | None:
    """Resolution of a regular two-level design from its pyDOE3 alias map.

    Notes
    -----
    Effects ``u`` and ``v`` are aliased iff ``u v`` is a word of the defining relation,
    so ``|u| + |v| >= |u v| >= R`` with equality for ``u`` one letter of a shortest word.
    The resolution is therefore the smallest ``|u| + |v|`` over aliased pairs, i.e. the
    sum of the two shortest effects of any alias group. None when nothing is aliased.

    >>> resolution_of(["a = bc", "b = ac", "c = ab", "abc"])
    3
    """
    best: int | None = None
    for group in alias_map:
        words = sorted(len(w.strip()) for w in group.split("="))
        if len(words) >= 2:
            r = words[0] + words[1]
            best = r if best is None else min(best, r)
    return best


def d_efficiency(coded: np.ndarray) -> float:
    """D-efficiency of the main-effects model ``[1, x_1 .. x_k]`` on coded levels in [-1, 1].

    ``D = det(X'X)^(1/p) / n`` with ``p = k + 1``: 1 for an orthogonal two-level design,
    0 for a singular one.
    """
    h = np.asarray(coded, dtype=float)
    n = h.shape[0]
    x = np.column_stack([np.ones(n), h])
    sign, logdet = np.linalg.slogdet(x.T @ x)
    if sign <= 0:
        return 0.0
    return float(np.exp(logdet / x.shape[1]) / n)


def _name(word: str, names: Sequence[str]) -> str:
    return "*".join(names[string.ascii_lowercase.index(ch)] for ch in word)


def two_level_aliases(design: np.ndarray) -> tuple[list[str], list[str]]:
    """pyDOE3's alias map of a +-1 design, and its defining relation (words of constant contrast)."""
    from pyDOE3 import fracfact_aliasing

    h = np.asarray(design, dtype=float)
    alias_map, _ = fracfact_aliasing(h)
    k = h.shape[1]
    words = []
    for r in range(1, k + 1):
        for combo in itertools.combinations(range(k), r):
            contrast = np.prod(h[:, combo], axis=1)
            if np.all(contrast == contrast[0]):
                words.append("".join(string.ascii_lowercase[i] for i in combo))
    return list(alias_map), words


def interaction_aliases(coded: np.ndarray, pairs: Sequence[tuple[int, int]]) -> tuple[np.ndarray, bool, list[bool]]:
    """Alias matrix of two-factor interactions on the main-effects model.

    ``A = (X1'X1)^-1 X1' X2`` with ``X1 = [1, x_1 .. x_k]`` and ``X2`` the products
    ``x_i x_j`` of ``pairs``: ``A[m, j]`` is the bias an omitted interaction ``j`` puts on
    coefficient ``m``. Returns ``(A[1:, :]`` (main-effect rows), jointly estimable,
    estimable one at a time).
    """
    h = np.asarray(coded, dtype=float)
    n, k = h.shape
    x1 = np.column_stack([np.ones(n), h])
    x2 = np.column_stack([h[:, i] * h[:, j] for i, j in pairs]) if pairs else np.zeros((n, 0))
    p1 = x1.shape[1]
    if np.linalg.matrix_rank(x1) < p1:
        return np.full((k, len(pairs)), np.nan), False, [False] * len(pairs)
    a = np.linalg.lstsq(x1, x2, rcond=None)[0] if pairs else np.zeros((p1, 0))
    joint = bool(np.linalg.matrix_rank(np.column_stack([x1, x2])) == p1 + len(pairs))
    single = [bool(np.linalg.matrix_rank(np.column_stack([x1, x2[:, j]])) == p1 + 1) for j in range(len(pairs))]
    return a[1:, :], joint, single


def alias_report(coded: np.ndarray, names: Sequence[str], kinds: Sequence[str], *, regular: bool) -> AliasReport:
    """The alias report of a design in coded units (rows = points, columns = axes in ``names`` order).

    ``regular`` designs (two-level, +-1) get pyDOE3's exact alias map and resolution;
    every design gets the numeric alias matrix of its quality x diversity interactions.
    Center points should be left out of ``coded`` (they do not change aliasing).
    """
    h = np.asarray(coded, dtype=float)
    k = h.shape[1]
    letters = {string.ascii_lowercase[i]: names[i] for i in range(k)}
    pairs = [(i, j) for i in range(k) for j in range(k)
             if kinds[i] == "quality" and kinds[j] == "diversity"]
    qd_names = [f"{names[i]}*{names[j]}" for i, j in pairs]
    a, joint, single = interaction_aliases(h, pairs)
    max_alias = float(np.nanmax(np.abs(a))) if a.size else 0.0
    if a.size and np.isnan(a).any():
        max_alias = float("inf")
    clear = bool(pairs) and all(single) and max_alias < _CLEAR_TOL

    alias_map: list[str] = []
    words: list[str] = []
    highlights: list[str] = []
    resolution = None
    if regular and k <= MAX_EXACT_AXES:
        alias_map, words = two_level_aliases(h)
        resolution = resolution_of(alias_map)
        for group in alias_map:
            low = [w.strip() for w in group.split("=") if len(w.strip()) <= 2]
            if len(low) >= 2:
                highlights.append(" = ".join(_name(w, names) for w in low))
        words = [_name(w, names) for w in words]
    else:
        for j, (qi, di) in enumerate(pairs):
            for m in range(k):
                if abs(a[m, j]) >= 0.05:
                    highlights.append(f"{qd_names[j]} ~ {a[m, j]:+.2f} {names[m]}")

    if not pairs:
        statement = "no quality x diversity interactions: the config has no quality or no diversity axis"
    elif clear and joint:
        statement = (f"every quality x diversity interaction ({len(pairs)}) is estimable clear of main effects "
                     f"and of each other: additive vs multiplicative can be told apart")
    elif clear:
        statement = (f"every quality x diversity interaction ({len(pairs)}) is estimable clear of main effects, "
                     f"but some are aliased with other two-factor interactions (see highlights): a single "
                     f"multiplicative term can be tested, not all {len(pairs)} interactions separately")
    elif all(single):
        statement = (f"quality x diversity interactions are estimable but partially aliased with main effects "
                     f"(largest alias coefficient {max_alias:.2f}): the interaction test loses power")
    else:
        bad = [qd_names[j] for j, ok in enumerate(single) if not ok]
        statement = (f"NOT every quality x diversity interaction is estimable clear of main effects "
                     f"({', '.join(bad[:4])}{'...' if len(bad) > 4 else ''} confounded): raise the resolution "
                     f"to IV or more, or fold over")
    return AliasReport(
        regular=regular, resolution=resolution, letters=letters, alias_map=alias_map, defining_relation=words,
        highlights=highlights, d_efficiency=round(d_efficiency(h), 6), qd_interactions=qd_names,
        qd_max_alias_with_main=round(max_alias, 6) if np.isfinite(max_alias) else 1e9,
        qd_clear_of_main=clear, qd_jointly_estimable=joint, statement=statement)
