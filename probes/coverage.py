"""Compositional coverage: which dependency structures, at which support depths, a dataset shows.

Structures are read off each trajectory's action graph (:func:`probes.dependency_graph.action_graph`,
edge ``b -> a`` when an output of ``b`` supports ``a``), with support depth ``depth(a)`` in
tool hops (1 = supported by the user query only):

- ``chain@d``: an action with exactly one parent action, at depth d;
- ``fan-in@d``: an action with two or more parent actions, at depth d;
- ``fan-out@d``: an action with two or more child actions, whose children sit at depth d
  (``d = depth(b) + 1``);
- ``parallel@d``: two or more independent actions (same parent set, no path between
  them) at depth d.

Depths above ``k`` count at ``k``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import networkx as nx

from probes.dependency_graph import action_graph
from probes.models import STRUCTURES, CoverageReport, TrajectoryProvenance
from toolscale.errors import UsageError

__all__ = ["structure_cells", "coverage_cells", "coverage"]


def coverage_cells(k: int) -> list[tuple[str, int]]:
    """The cells a dataset can cover up to depth ``k``.

    ``parallel`` exists from depth 1, the three others from depth 2, so
    ``|C_k| = k + 3 (k - 1)``.
    """
    cells = [("parallel", d) for d in range(1, k + 1)]
    for s in STRUCTURES:
        if s != "parallel":
            cells += [(s, d) for d in range(2, k + 1)]
    return cells


def structure_cells(prov: TrajectoryProvenance, k: int) -> set[tuple[str, int]]:
    """The (structure, depth) cells present in one trajectory (depth clamped to ``k``)."""
    g = action_graph(prov)
    depth = nx.get_node_attributes(g, "depth")
    cells: set[tuple[str, int]] = set()
    for a in g.nodes:
        n_par, n_child = g.in_degree(a), g.out_degree(a)
        if n_par == 1:
            cells.add(("chain", min(depth[a], k)))
        elif n_par >= 2:
            cells.add(("fan-in", min(depth[a], k)))
        if n_child >= 2:
            cells.add(("fan-out", min(depth[a] + 1, k)))
    groups: dict[tuple[frozenset[str], int], list[str]] = {}
    for a in g.nodes:
        groups.setdefault((frozenset(g.predecessors(a)), depth[a]), []).append(a)
    for (_, d), members in groups.items():
        if len(members) >= 2 and any(not nx.has_path(g, x, y) and not nx.has_path(g, y, x)
                                     for i, x in enumerate(members) for y in members[i + 1:]):
            cells.add(("parallel", min(d, k)))
    return cells


def coverage(provs: Sequence[TrajectoryProvenance], *, k: int = 3, quota: int = 1) -> CoverageReport:
    r"""Compositional coverage score of a dataset.

    Parameters
    ----------
    provs : sequence of TrajectoryProvenance
        The dataset's traced trajectories.
    k : int
        Largest support depth counted (hops); deeper structures count at ``k``.
    quota : int
        Trajectories a cell needs to count as fully covered.

    Returns
    -------
    CoverageReport
        Score, per-cell counts, the depth histogram of all actions and the mean depth of the
        derivable ones.

    Notes
    -----
    With :math:`C_k` the cells of :func:`coverage_cells` and :math:`n_c` the number of
    trajectories holding cell :math:`c`,

    .. math:: \mathrm{coverage} = \frac{1}{|C_k|} \sum_{c \in C_k} \min\left(1, \frac{n_c}{q}\right)

    so 1 means every structure appears at every depth up to k in at least ``quota``
    trajectories, and 0 means no action depends on another and no two are independent.

    Examples
    --------
    >>> coverage([], k=2).score
    0.0
    """
    if k < 1:
        raise UsageError(f"coverage depth k must be >= 1, got {k}")
    if quota < 1:
        raise UsageError(f"coverage quota must be >= 1, got {quota}")
    cell_counts: Counter[tuple[str, int]] = Counter()
    struct_counts: Counter[str] = Counter()
    depth_hist: Counter[int] = Counter()
    derivable_depths: list[int] = []
    for p in provs:
        cells = structure_cells(p, k)
        cell_counts.update(cells)
        struct_counts.update({s for s, _ in cells})
        for a in p.actions:
            depth_hist[a.depth] += 1
            if a.derivable:
                derivable_depths.append(a.depth)
    all_cells = coverage_cells(k)
    score = sum(min(1.0, cell_counts[c] / quota) for c in all_cells) / len(all_cells)
    return CoverageReport(
        k=k, quota=quota, score=score,
        cells={f"{s}@{d}": cell_counts[(s, d)] for s, d in all_cells},
        depth_histogram=dict(sorted(depth_hist.items())),
        mean_depth=sum(derivable_depths) / len(derivable_depths) if derivable_depths else None,
        structures={s: struct_counts[s] for s in STRUCTURES})
