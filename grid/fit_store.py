"""The fit store: fitted scaling laws and allocation plans, each with its JSON payload."""

from __future__ import annotations

import json
import uuid
from typing import Any

from grid.connection import Connection, now
from grid.models import FitRecord
from grid.schema import SCHEMA_VERSION

__all__ = ["FitStore"]


class FitStore(Connection):
    """Fits (``payload`` is a FitResult as JSON) and allocation plans, newest first."""

    # ---- fits and allocations -------------------------------------------
    def save_fit(self, *, experiment: str, benchmark: str, metric: str, law: str, converged: bool, n_points: int,
                 data_hash: str, payload: dict[str, Any]) -> str:
        """Store a fit (``payload`` is the FitResult as JSON); returns its id."""
        fit_id = "f-" + uuid.uuid4().hex[:12]
        with self.transaction():
            self.con.execute("INSERT INTO fits (fit_id, experiment, benchmark, metric, law, converged, n_points, "
                             "data_hash, payload, created_at, schema_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                             [fit_id, experiment, benchmark, metric, law, converged, n_points, data_hash,
                              self._json(payload), now(), SCHEMA_VERSION])
        return fit_id

    def fits(self, experiment: str | None = None, benchmark: str | None = None) -> list[FitRecord]:
        """Stored fits, newest first, with their payloads (stale ones included: see ``stale_reason``)."""
        where, args = self._where(experiment=experiment, benchmark=benchmark)
        sql = ("SELECT fit_id, experiment, benchmark, metric, law, converged, n_points, data_hash, payload, "
               "created_at, stale_reason FROM fits" + where)
        return [FitRecord(fit_id=r[0], experiment=r[1], benchmark=r[2], metric=r[3], law=r[4], converged=r[5],
                          n_points=r[6], data_hash=r[7], payload=json.loads(r[8]), created_at=r[9],
                          stale_reason=r[10])
                for r in self.con.execute(sql + " ORDER BY created_at DESC", args).fetchall()]

    def fit(self, fit_id: str) -> FitRecord:
        """The stored fit ``fit_id``; :class:`grid.errors.UnknownNameError` (exit 2) naming the newest ids."""
        from grid.errors import UnknownNameError

        rows = [f for f in self.fits() if f.fit_id == fit_id]
        if not rows:
            known = [f.fit_id for f in self.fits()][:5]
            raise UnknownNameError(f"unknown fit id {fit_id!r}; newest: {', '.join(known) or 'none (run toolscale fit)'}"
                                   " (toolscale fits list shows them all)")
        return rows[0]

    def save_allocation(self, *, experiment: str, benchmark: str, budget: float, unit: str, fit_id: str | None,
                        payload: dict[str, Any]) -> str:
        """Store an allocation plan; returns its id."""
        alloc_id = "a-" + uuid.uuid4().hex[:12]
        with self.transaction():
            self.con.execute("INSERT INTO allocations VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                             [alloc_id, experiment, benchmark, budget, unit, fit_id, self._json(payload), now(),
                              SCHEMA_VERSION])
        return alloc_id

    def allocations(self, experiment: str | None = None) -> list[dict[str, Any]]:
        """Stored allocation plans, newest first."""
        where, args = self._where(experiment=experiment)
        sql = "SELECT allocation_id, experiment, benchmark, budget, unit, fit_id, payload FROM allocations" + where
        cols = ["allocation_id", "experiment", "benchmark", "budget", "unit", "fit_id", "payload"]
        out = []
        for r in self.con.execute(sql + " ORDER BY created_at DESC", args).fetchall():
            d = dict(zip(cols, r))
            d["payload"] = json.loads(d["payload"])
            out.append(d)
        return out

