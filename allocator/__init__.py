"""allocator: see README.md."""

from toolscale.exports import lazy_exports

_EXPORTS: dict[str, str] = {
    'AllocationQuery': 'allocator.models',
    'AllocationReport': 'allocator.models',
    'CostModel': 'allocator.models',
    'solve': 'allocator.solver',
}
"""Public names and the modules that define them: other packages import these (or ``allocator.models``). The
registry edges of ``allocate`` and ``next`` are in :mod:`pipeline.allocate` and :mod:`pipeline.next_runs`."""

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
