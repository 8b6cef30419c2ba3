"""The artifact store: synthesized datasets' manifests, collected tool docs and quarantined tools."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from grid.connection import Connection, now
from grid.models import DatasetRecord
from grid.schema import SCHEMA_VERSION

__all__ = ["ArtifactStore"]


class ArtifactStore(Connection):
    """Datasets (written by synth/ and probes/), tool docs and quarantine entries (written by synth/collect)."""

    # ---- datasets, tools -------------------------------------------------
    def save_dataset(self, dataset_id: str, *, experiment: str | None, recipe: dict, seed: int, path: str,
                     manifest: dict) -> None:
        """Upsert a dataset's manifest (synth/ and probes/ both write it)."""
        with self.transaction():
            self.con.execute("INSERT OR REPLACE INTO datasets VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                             [dataset_id, experiment, self._json(recipe), seed, path, self._json(manifest), now(),
                              SCHEMA_VERSION])

    def dataset(self, dataset_id: str) -> DatasetRecord | None:
        """A dataset's stored manifest, or None."""
        r = self.con.execute("SELECT dataset_id, experiment, recipe, seed, path, manifest FROM datasets "
                             "WHERE dataset_id = ?", [dataset_id]).fetchone()
        if r is None:
            return None
        return DatasetRecord(dataset_id=r[0], experiment=r[1], recipe=json.loads(r[2] or "{}"), seed=r[3], path=r[4],
                             manifest=json.loads(r[5] or "{}"))

    def save_tool_docs(self, server: str, docs: Sequence[dict[str, Any]], quarantined: Sequence[tuple[str | None, str]] = ()) -> None:
        """Replace a server's tool docs and quarantine entries (one collection)."""
        with self.transaction():
            self.con.execute("DELETE FROM tool_docs WHERE server = ?", [server])
            self.con.execute("DELETE FROM quarantine WHERE server = ?", [server])
            for d in docs:
                self.con.execute("INSERT INTO tool_docs VALUES (?, ?, ?, ?, ?)",
                                 [server, d["name"], self._json(d), now(), SCHEMA_VERSION])
            for tool, reason in quarantined:
                self.con.execute("INSERT INTO quarantine VALUES (?, ?, ?, ?, ?)",
                                 [server, tool, reason, now(), SCHEMA_VERSION])

    def tool_docs(self, server: str | None = None) -> list[dict[str, Any]]:
        """Stored tool docs (``{"server", **doc}``), by server and name."""
        where, args = self._where(server=server)
        rows = self.con.execute(f"SELECT server, doc FROM tool_docs{where} ORDER BY server, name", args).fetchall()
        return [{"server": s, **json.loads(d)} for s, d in rows]

    def quarantine(self) -> list[dict[str, Any]]:
        """Quarantined servers and tools with their reasons."""
        rows = self.con.execute("SELECT server, tool, reason FROM quarantine ORDER BY server, tool").fetchall()
        return [{"server": s, "tool": t, "reason": r} for s, t, r in rows]

