"""grid: see README.md."""

_EXPORTS: dict[str, str] = {
    'CandidateCell': 'grid.augment',
    'Registry': 'grid.registry',
    'build_design': 'grid.design',
    'cost_model_from_config': 'grid.cost',
    'COMPUTE': 'grid.cost',
    'AxisCost': 'grid.cost',
    'CostModel': 'grid.cost',
    'candidate_cells': 'grid.augment',
    'candidate_recipes': 'grid.augment',
    'heldout_mask': 'grid.split',
    'read_results': 'grid.results',
    'recipe_key': 'grid.augment',
    'result_path': 'grid.results',
    'write_result': 'grid.results',
}
"""Public names and the modules that define them: other packages import these (or ``grid.models``)."""

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
