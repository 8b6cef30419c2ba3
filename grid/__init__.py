"""grid: see README.md."""

from toolscale.exports import lazy_exports

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
    'parse_count': 'grid.importer',
    'read_results': 'grid.results',
    'recipe_key': 'grid.augment',
    'result_path': 'grid.results',
    'write_result': 'grid.results',
}
"""Public names and the modules that define them: other packages import these (or ``grid.models``)."""

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
