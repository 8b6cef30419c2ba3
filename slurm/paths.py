"""The one owner of the launcher's on-disk layout under ``executor.folder``.

::

    ROOT/results/<run_id>.result.json      one result file per run (grid.results)
    ROOT/launches/<launch_id>/launch.json  what a launch submitted (LaunchManifest)
    ROOT/launches/<launch_id>/submitit/    that launch's fresh submitit folder (logs, pickles)
    ROOT/work/<run_id>/                    a run's working folder (context, checkpoint, model)
    ROOT/datasets/<dataset_id>/            datasets shared by every model size (content hash)
    ROOT/attempts/<run_id>.<n>.result.json result files of earlier attempts (kept, never re-ingested)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["LaunchPaths"]


@dataclass(frozen=True)
class LaunchPaths:
    """Paths under the executor's root folder (absolute, so jobs on other nodes find them)."""

    root: Path

    @classmethod
    def of(cls, root: str | Path) -> "LaunchPaths":
        return cls(Path(root).expanduser().resolve())

    @property
    def results(self) -> Path:
        return self.root / "results"

    @property
    def launches(self) -> Path:
        return self.root / "launches"

    @property
    def datasets(self) -> Path:
        return self.root / "datasets"

    @property
    def attempts(self) -> Path:
        return self.root / "attempts"

    def launch_dir(self, launch_id: str) -> Path:
        return self.launches / launch_id

    def manifest(self, launch_id: str) -> Path:
        return self.launch_dir(launch_id) / "launch.json"

    def submitit_folder(self, launch_id: str) -> Path:
        return self.launch_dir(launch_id) / "submitit"

    def workdir(self, run_id: str) -> Path:
        return self.root / "work" / run_id

    def result(self, run_id: str) -> Path:
        from grid import result_path

        return result_path(self.results, run_id)
