"""Repair hooks for flagged (non-derivable) actions: a registry of named operations.

synth's repair-rate knob picks the share of flagged actions to repair and one operation:

- ``resynthesize``: reconstruct the interaction so the action becomes derivable. The missing
  argument values are stated in the last user turn before the action (the "interaction
  reconstruction" of Trajectory2Gym, arXiv:2610.33568), so the call, its output and the rest
  of the trajectory stay consistent. The id moves from ``meta.nonderivable_calls`` to
  ``meta.repaired_calls``.
- ``downweight``: keep the action but record a loss weight for it in
  ``meta.loss_weights[call_id]``. train/'s SFT keeps the call's tokens in the loss with that
  probability (:func:`train.data.apply_loss_weights`): 0 drops the action from the loss, a
  fraction weights it in expectation over the dataset.

Every operation records itself in ``meta.repair_ops[call_id]``. Other packages may register
better operations (for example re-rolling the call against the server) with
:func:`register_repair`. Operations are pure: a new row is returned, the input is untouched.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Collection, Mapping
from typing import Any

from probes.models import RepairRecord, TrajectoryProvenance
from probes.provenance import parse_row, trace_trajectory
from toolscale.errors import UsageError

__all__ = ["RepairOp", "REPAIR_OPERATIONS", "register_repair", "get_repair", "repair_row", "repair_dataset"]

RepairOp = Callable[[dict[str, Any], TrajectoryProvenance, Collection[str], dict[str, Any]],
                    list[RepairRecord]]
"""``op(row, provenance, call_ids, options) -> records``; edits ``row`` (a private copy) in place."""

REPAIR_OPERATIONS: dict[str, RepairOp] = {}


def register_repair(name: str) -> Callable[[RepairOp], RepairOp]:
    """Decorator registering a repair operation under ``name``."""
    def deco(fn: RepairOp) -> RepairOp:
        REPAIR_OPERATIONS[name] = fn
        return fn
    return deco


def get_repair(name: str) -> RepairOp:
    """The registered operation ``name``; :class:`UsageError` listing the known ones otherwise."""
    try:
        return REPAIR_OPERATIONS[name]
    except KeyError:
        raise UsageError(f"unknown repair operation {name!r}; known: {', '.join(sorted(REPAIR_OPERATIONS))}") from None


def _meta(row: dict[str, Any]) -> dict[str, Any]:
    m = row.get("meta")
    if isinstance(m, str):
        m = json.loads(m) if m else {}
    return dict(m or {})


def _set_meta(row: dict[str, Any], meta: dict[str, Any]) -> None:
    row["meta"] = json.dumps(meta, ensure_ascii=False) if isinstance(row.get("meta"), str | None) else meta


@register_repair("resynthesize")
def _resynthesize(row: dict[str, Any], prov: TrajectoryProvenance, call_ids: Collection[str],
                  options: dict[str, Any]) -> list[RepairRecord]:
    meta, out = _meta(row), []
    by_id = {a.call_id: a for a in prov.actions}
    for cid in call_ids:
        a = by_id.get(cid)
        if a is None or a.status != "ok":
            out.append(RepairRecord(trajectory=prov.index, call_id=cid, operation="resynthesize", applied=False,
                                    reason="no such call" if a is None else f"cannot reconstruct: {a.reason}"))
            continue
        missing = [arg for arg in a.arguments if arg.match == "none"]
        users = [j for j in range(a.message_index) if row["messages"][j].get("role") == "user"]
        if not missing or not users:
            out.append(RepairRecord(trajectory=prov.index, call_id=cid, operation="resynthesize",
                                    applied=not missing,
                                    reason="already derivable" if not missing else "no user turn before the call"))
            continue
        facts = "; ".join(f"{arg.path} = {arg.value}" for arg in missing)
        msg = dict(row["messages"][users[-1]])
        msg["content"] = f"{msg.get('content') or ''} (For {a.tool}, use {facts}.)".strip()
        row["messages"][users[-1]] = msg
        meta["nonderivable_calls"] = [c for c in meta.get("nonderivable_calls") or [] if c != cid]
        meta["repaired_calls"] = sorted({*(meta.get("repaired_calls") or []), cid})
        meta.setdefault("repair_ops", {})[cid] = "resynthesize"
        out.append(RepairRecord(trajectory=prov.index, call_id=cid, operation="resynthesize", applied=True,
                                reason=f"stated {facts} in user turn {users[-1]}"))
    _set_meta(row, meta)
    return out


@register_repair("downweight")
def _downweight(row: dict[str, Any], prov: TrajectoryProvenance, call_ids: Collection[str],
                options: dict[str, Any]) -> list[RepairRecord]:
    weight = float(options.get("weight", 0.0))
    if not 0.0 <= weight <= 1.0:
        raise UsageError(f"downweight: weight must be in [0, 1], got {weight}")
    meta, out = _meta(row), []
    known = {a.call_id for a in prov.actions}
    for cid in call_ids:
        if cid not in known:
            out.append(RepairRecord(trajectory=prov.index, call_id=cid, operation="downweight", applied=False,
                                    reason="no such call"))
            continue
        meta.setdefault("loss_weights", {})[cid] = weight
        meta.setdefault("repair_ops", {})[cid] = "downweight"
        out.append(RepairRecord(trajectory=prov.index, call_id=cid, operation="downweight", applied=True,
                                weight=weight, reason=f"loss weight {weight:g}"))
    _set_meta(row, meta)
    return out


def repair_row(row: Mapping[str, Any], call_ids: Collection[str], operation: str, *, index: int = 0,
               **options: Any) -> tuple[dict[str, Any], list[RepairRecord]]:
    """Apply ``operation`` to the flagged calls of one row; returns the new row and one record per call."""
    op = get_repair(operation)
    new = copy.deepcopy(dict(row))
    prov = trace_trajectory(parse_row(new, index), index)
    return new, op(new, prov, list(call_ids), options)


def repair_dataset(rows: list[Mapping[str, Any]], flagged: Mapping[int, Collection[str]], operation: str,
                   **options: Any) -> tuple[list[dict[str, Any]], list[RepairRecord]]:
    """Apply ``operation`` to ``flagged[row index]`` call ids in every row; other rows are copied."""
    get_repair(operation)
    out_rows, records = [], []
    for i, row in enumerate(rows):
        if flagged.get(i):
            new, recs = repair_row(row, flagged[i], operation, index=i, **options)
            out_rows.append(new)
            records.extend(recs)
        else:
            out_rows.append(copy.deepcopy(dict(row)))
    return out_rows, records
