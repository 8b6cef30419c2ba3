"""Coded design matrices over the data axes, built with pyDOE3.

Every function returns points x axes in coded units: -1 is an axis' ``min``, +1 its
``max`` (see :mod:`grid.levels` for real levels). Kinds:

- ``fractional``: two-level ``2^(k-p)`` fraction of resolution >= R (``fracfact``),
  generators given or chosen for minimum aberration (``fracfact_opt``), optional fold-over;
- ``gsd``: generalized subset design over each axis' ``levels`` (``gsd``), for curvature;
- ``full``: full factorial over each axis' ``levels`` (``fullfact``);
- ``lhs``: maximin Latin hypercube (``lhs``), seeded.
"""

from __future__ import annotations

import itertools
import math
import re
import string
from collections.abc import Sequence

import numpy as np

from grid.alias import ROMAN, resolution_of
from grid.errors import DesignError

__all__ = ["choose_generators", "fractional", "multilevel", "latin_hypercube", "greedy_d_optimal"]

_OPT_MAX_ATTEMPTS = 3000
"""Cap on the generator sets pyDOE3's ``fracfact_opt`` tries (exhaustive for <= 7 axes)."""
_OPT_MAX_AXES = 8
"""Above this many axes the minimum-aberration search is skipped (it takes minutes) and pyDOE3's
``fracfact_by_res`` construction is used."""


def _roman(r: int | None) -> str:
    return "full" if r is None else ROMAN.get(r, str(r))


def _resolution_of_generators(gen: str) -> int | None:
    from pyDOE3 import fracfact, fracfact_aliasing

    alias_map, _ = fracfact_aliasing(fracfact(_unsigned(gen)))
    return resolution_of(alias_map)


def _unsigned(gen: str) -> str:
    return " ".join(w.lstrip("+-") for w in gen.split())


def _naive_generators(k: int, base: int, res: int) -> str:
    # pyDOE3's fracfact_by_res construction: words of length >= res - 1 over the base letters.
    factors = list(string.ascii_lowercase[:base])
    combos = ("".join(c) for r in range(max(res - 1, 2), base + 1) for c in itertools.combinations(factors, r))
    return " ".join(factors + list(itertools.islice(combos, k - base)))


def _best_generators(k: int, base: int, res: int) -> tuple[str, int | None] | None:
    from pyDOE3 import fracfact_opt

    candidates = []
    if base == k:
        return " ".join(string.ascii_lowercase[:k]), None
    if k <= _OPT_MAX_AXES:
        try:
            gen, _, _ = fracfact_opt(k, k - base, max_attempts=_OPT_MAX_ATTEMPTS)
            if gen:
                candidates.append(gen)
        except ValueError:
            pass
    naive = _naive_generators(k, base, res)
    if len(naive.split()) == k:
        candidates.append(naive)
    best = None
    for gen in candidates:
        r = _resolution_of_generators(gen)
        if best is None or (r or 99) > (best[1] or 99):
            best = (gen, r)
    return best


def choose_generators(k: int, resolution: int, points: int | None = None) -> tuple[str, int | None]:
    """Generators of a two-level fraction over ``k`` factors reaching ``resolution``.

    With ``points`` None the fewest points (``2^base``) that reach the resolution are
    used; otherwise ``points`` must be a power of two and :class:`DesignError` says
    which point count would reach the resolution when it cannot be reached.
    Returns ``(generator string, achieved resolution or None for a full factorial)``.
    """
    if k < 2:
        raise DesignError(f"a two-level fractional design needs at least 2 axes, got {k}")
    if k > 20:
        raise DesignError(f"two-level fractional designs support at most 20 axes (pyDOE3), got {k}")
    found: dict[int, tuple[str, int | None]] = {}

    def at(base: int) -> tuple[str, int | None] | None:
        if base not in found:
            best = _best_generators(k, base, resolution)
            if best is None:
                return None
            found[base] = best
        return found[base]

    def reaches(base: int) -> bool:
        got = at(base)
        return got is not None and (got[1] is None or got[1] >= resolution)

    if points is not None:
        base = int(round(math.log2(points))) if points > 0 else -1
        if base < 1 or 2 ** base != points:
            raise DesignError(f"design.fraction_points must be a power of two, got {points}")
        if base > k:
            raise DesignError(f"design.fraction_points = {points} exceeds the full factorial over {k} axes "
                              f"({2 ** k} points)")
        if not reaches(base):
            need = next(b for b in range(base + 1, k + 1) if reaches(b))
            got = at(base)
            raise DesignError(
                f"resolution {_roman(resolution)} over {k} axes cannot be reached with design.fraction_points = "
                f"{points} (best: {_roman(got[1]) if got else 'none'}); {2 ** need} points reach it")
        return at(base)  # type: ignore[return-value]
    for base in range(1, k + 1):
        if reaches(base):
            return at(base)  # type: ignore[return-value]
    raise AssertionError("the full factorial always reaches any resolution")  # pragma: no cover


def fractional(k: int, *, resolution: int, points: int | None = None, generators: str | None = None,
               foldover: Sequence[int] = ()) -> tuple[np.ndarray, str, np.ndarray]:
    """A two-level fraction in coded units, its generator string, and its unsigned twin.

    The unsigned twin (generator signs dropped) has the same alias structure and is what
    :mod:`grid.alias` analyses. ``foldover`` lists axis indices to fold (pyDOE3 ``fold``),
    doubling the points and breaking the aliases of those axes.
    """
    from pyDOE3 import fold, fracfact

    if generators is None:
        gen, _ = choose_generators(k, resolution, points)
    else:
        gen = " ".join(generators.split())
        words = gen.split()
        if len(words) != k:
            raise DesignError(f"design.generators {generators!r} has {len(words)} words; the config has {k} axes")
        if not all(re.fullmatch(r"[+-]?[a-z]+", w.lower()) for w in words):
            raise DesignError(f"design.generators {generators!r}: each word must be letters with an optional sign")
        try:
            fracfact(gen.lower())
        except (ValueError, IndexError) as err:
            raise DesignError(f"design.generators {generators!r} is not valid: {err}") from None
        if points is not None and 2 ** sum(1 for w in words if len(w.lstrip("+-")) == 1) != points:
            raise DesignError(f"design.generators {generators!r} gives "
                              f"{2 ** sum(1 for w in words if len(w.lstrip('+-')) == 1)} points, "
                              f"but design.fraction_points = {points}")
        got = _resolution_of_generators(gen.lower())
        if got is not None and got < resolution:
            raise DesignError(f"design.generators {generators!r} give resolution {_roman(got)}, below "
                              f"design.resolution = {resolution} ({_roman(resolution)})")
    h = fracfact(gen.lower())
    twin = fracfact(_unsigned(gen.lower()))
    if foldover:
        h = fold(h, list(foldover))
        twin = fold(twin, list(foldover))
    return np.asarray(h, dtype=float), gen.lower(), np.asarray(twin, dtype=float)


def multilevel(levels: Sequence[int], reduction: int) -> np.ndarray:
    """A generalized subset design (``reduction > 1``) or full factorial (``reduction = 1``), coded.

    Level ``i`` of an ``L``-level axis is coded ``-1 + 2 i / (L - 1)``.
    """
    from pyDOE3 import fullfact

    lv = [int(v) for v in levels]
    if reduction == 1:
        idx = np.asarray(fullfact(lv), dtype=float)
    else:
        try:
            idx = np.asarray(_first_gsd(lv, int(reduction)), dtype=float)
        except ValueError as err:
            raise DesignError(f"design.gsd_reduction = {reduction} does not work with levels {lv}: {err}") from None
    scale = np.array([max(v - 1, 1) for v in lv], dtype=float)
    return -1.0 + 2.0 * idx / scale


def _first_gsd(levels: list[int], reduction: int) -> np.ndarray:
    """``pyDOE3.gsd(levels, reduction)``, building only the first of its ``reduction`` complementary designs.

    pyDOE3 1.6.2 maps every complementary design and returns the first, ten times the work for
    ``reduction = 10``; this calls the same steps for the first one only (tested equal to ``gsd``).
    """
    from pyDOE3 import doe_gsd, gsd

    try:
        partitions = doe_gsd._make_partitions(levels, reduction)
        arrays = doe_gsd._make_orthogonal_arrays(doe_gsd._make_latin_square(reduction), len(levels))
        for oa in arrays[1:]:  # pyDOE3 fails when any complementary design is empty: so do we
            if not any(all(partitions[p][f] for f, p in enumerate(row)) for row in oa):
                raise ValueError("reduction too large compared to factor levels")
        return doe_gsd._map_partitions_to_design(partitions, arrays[0]) - 1
    except AttributeError:  # pragma: no cover - a pyDOE3 without these helpers
        return gsd(levels, reduction)
    except (ValueError, IndexError):
        return gsd(levels, reduction)  # pyDOE3's own check and message


def latin_hypercube(k: int, samples: int, seed: int) -> np.ndarray:
    """A maximin Latin hypercube of ``samples`` points, coded to [-1, 1] (pyDOE3 ``lhs``, seeded)."""
    from pyDOE3 import lhs

    u = lhs(k, samples=samples, criterion="maximin", iterations=20, seed=np.random.default_rng(seed))
    return 2.0 * np.asarray(u, dtype=float) - 1.0


def greedy_d_optimal(coded: np.ndarray, m: int) -> list[int]:
    """Indices of ``m`` rows chosen greedily to maximise ``det(X'X + 1e-6 I)`` of the main-effects model.

    Deterministic; used to pick the points the top-FLOPs cell is crossed with, so the held-out runs still
    span the data axes. Ties in the determinant (every row ties while fewer rows than parameters are chosen)
    go to the row that makes the chosen rows vary on the most axes, then on the earliest-listed axes (list
    the axes that matter most first), then to the one farthest from them (largest smallest distance in coded
    units), then to the lowest index: the held-out recipes spread over every axis they can.
    """
    h = np.asarray(coded, dtype=float)
    n = h.shape[0]
    if m >= n:
        return list(range(n))
    x = np.column_stack([np.ones(n), h])
    chosen: list[int] = []
    info = 1e-6 * np.eye(x.shape[1])
    for _ in range(m):
        vals = np.full(n, -np.inf)
        for i in range(n):
            if i not in chosen:
                vals[i] = np.linalg.slogdet(info + np.outer(x[i], x[i]))[1]
        top = vals.max()
        ties = [i for i in range(n) if vals[i] >= top - 1e-9 * max(1.0, abs(top))]
        if chosen and len(ties) > 1:
            def spread(i: int) -> tuple[int, tuple[bool, ...], float]:
                varied = np.ptp(h[[*chosen, i]], axis=0) > 1e-9
                return (int(varied.sum()), tuple(bool(v) for v in varied),
                        min(float(np.linalg.norm(h[i] - h[j])) for j in chosen))
            best = max(ties, key=lambda i: (spread(i), -i))
        else:
            best = ties[0]
        chosen.append(best)
        info = info + np.outer(x[best], x[best])
    return sorted(chosen)
