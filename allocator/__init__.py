"""allocator: see README.md."""

from toolscale.exports import lazy_exports

_EXPORTS: dict[str, str] = {
    'plan_allocation': 'allocator.service',
    'equal_spend_plan': 'allocator.service',
    'CostModel': 'allocator.models',
}
"""Public names and the modules that define them: other packages import these (or ``allocator.models``)."""

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
