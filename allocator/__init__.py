"""allocator: see README.md."""

_EXPORTS: dict[str, str] = {
    'plan_allocation': 'allocator.service',
    'equal_spend_plan': 'allocator.service',
    'CostModel': 'allocator.models',
}
"""Public names and the modules that define them: other packages import these (or ``allocator.models``)."""

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    """Load a public name from its module on first use (PEP 562), so that importing the package stays cheap."""
    if name in _EXPORTS:
        import importlib

        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
