"""Human labels: export a stratified sample of actions to annotate, import the labels, measure agreement.

Export (:func:`annotation_sample`) draws ``n`` scored actions, stratified by (probe verdict, symbolic
provenance verdict), as equal a share per stratum as the strata allow, and records each item's sampling
weight ``N_stratum / n_stratum``. Each item carries what a person needs to judge it: the visible history
(tool list, user turns and tool outputs before the action), the action (tool and arguments), the
argument the probe found weakest, and empty ``label`` and ``note`` columns. The injected labels are not
exported (they would bias the annotator).

Import (:func:`read_labels`, :func:`human_agreement`) accepts ``grounded``, ``not grounded`` (or
``not_grounded``, ``ungrounded``) and ``unsure``; an empty label is an item not annotated yet. Agreement
of the probe verdict with the human label is reported on the labelled items (``unsure`` and empty left
out), raw and weighted back to the dataset's strata, with a bootstrap interval over trajectories; the
injected labels' agreement with the same human labels is reported beside it, never mixed in.
"""

from __future__ import annotations

import csv
import json
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from probes.calibration import N_BOOTSTRAP, balanced_accuracy, confusion, kappa
from probes.copyprobe import visible_history
from probes.models import HumanAgreement, Interval
from probes.provenance import ParsedRow
from toolscale.errors import UsageError

__all__ = ["LABELS", "COLUMNS", "annotation_sample", "write_annotation", "read_labels", "human_agreement",
           "annotation_paths"]

LABELS: dict[str, bool | None] = {"grounded": True, "not grounded": False, "not_grounded": False,
                                  "ungrounded": False, "unsure": None}
"""Accepted labels (case-insensitive) -> grounded (None = unsure)."""
COLUMNS = ("id", "trajectory", "call_id", "tool", "argument", "value", "arguments", "history", "weight",
           "label", "note")
"""Columns of the exported files, in order."""


def annotation_paths(file: str | Path) -> tuple[Path, Path]:
    """``(FILE.jsonl, FILE.csv)`` for ``FILE``, ``FILE.jsonl`` or ``FILE.csv``."""
    p = Path(file)
    stem = p.with_suffix("") if p.suffix in (".jsonl", ".csv") else p
    return stem.with_name(stem.name + ".jsonl"), stem.with_name(stem.name + ".csv")


def annotation_sample(rows: Sequence[ParsedRow], scores: Sequence[Mapping[str, Any]], n: int,
                      seed: int = 0) -> list[dict[str, Any]]:
    """A stratified sample of ``n`` actions (records with :data:`COLUMNS`) from ``probe_scores.jsonl`` rows."""
    if n < 1:
        raise UsageError(f"--n must be a positive number of actions, got {n}")
    usable = [s for s in scores if not s.get("skipped")]
    strata: dict[tuple[bool, bool], list[Mapping[str, Any]]] = {}
    for s in usable:
        strata.setdefault((bool(s["grounded"]), bool(s["derivable"])), []).append(s)
    rng = random.Random(seed)
    quota = {k: 0 for k in strata}
    left = min(n, len(usable))
    while left:  # round-robin: equal shares, a small stratum gives its rest to the others
        open_ = [k for k in sorted(strata) if quota[k] < len(strata[k])]
        for k in open_:
            if left:
                quota[k] += 1
                left -= 1
    out = []
    for k in sorted(strata):
        for s in rng.sample(strata[k], quota[k]):
            out.append(_item(rows[s["trajectory"]], s, len(strata[k]) / quota[k]))
    out.sort(key=lambda r: (r["trajectory"], r["call_id"]))
    return out


def _item(row: ParsedRow, s: Mapping[str, Any], weight: float) -> dict[str, Any]:
    call, j = None, 0
    for j, m in enumerate(row.messages):
        for c in m.get("tool_calls") or []:
            if isinstance(c, dict) and str(c.get("id")) == s["call_id"]:
                call = c
        if call is not None:
            break
    fn = (call or {}).get("function") or {}
    raw = fn.get("arguments", "")
    args = raw if isinstance(raw, str) else json.dumps(raw)
    arg = s.get("weakest_argument")
    value = None
    try:
        node: Any = json.loads(args)
        for part in (arg or "").split(".") if arg else []:
            node = node[int(part)] if isinstance(node, list) else node[part]
        value = json.dumps(node, ensure_ascii=False) if arg else None
    except (json.JSONDecodeError, KeyError, IndexError, ValueError, TypeError):
        value = None
    return {"id": f"{s['trajectory']}:{s['call_id']}", "trajectory": s["trajectory"], "call_id": s["call_id"],
            "tool": fn.get("name", s.get("tool", "")), "argument": arg or "", "value": value or "",
            "arguments": args, "history": visible_history(row, j), "weight": round(weight, 6), "label": "",
            "note": ""}


def write_annotation(items: Sequence[Mapping[str, Any]], file: str | Path) -> tuple[Path, Path]:
    """Write the items as JSONL and CSV (:func:`annotation_paths`); returns both paths."""
    jl, cv = annotation_paths(file)
    jl.parent.mkdir(parents=True, exist_ok=True)
    jl.write_text("".join(json.dumps({k: it[k] for k in COLUMNS}, ensure_ascii=False) + "\n" for it in items),
                  encoding="utf-8")
    with open(cv, "w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        for it in items:
            w.writerow({k: it[k] for k in COLUMNS})
    return jl, cv


def read_labels(file: str | Path, known_ids: set[str]) -> list[dict[str, Any]]:
    """Annotated rows ``{"id", "label": True | False | None, "weight"}`` of a JSONL or CSV file.

    Raises :class:`UsageError` naming the row for an unknown id or a label outside :data:`LABELS`.
    Rows with an empty label are left out (not annotated yet).
    """
    p = Path(file)
    if not p.is_file():
        raise UsageError(f"annotation file {str(p)!r} does not exist")
    if p.suffix == ".csv":
        with open(p, encoding="utf-8", newline="") as f:
            raw = list(csv.DictReader(f))
    else:
        raw = []
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                try:
                    raw.append(json.loads(line))
                except json.JSONDecodeError as err:
                    raise UsageError(f"{p} row {n}: not valid JSON ({err.msg})") from None
    out = []
    for n, r in enumerate(raw, 1):
        if not isinstance(r, dict):
            raise UsageError(f"{p} row {n}: expected an object with 'id' and 'label'")
        rid = str(r.get("id", ""))
        if rid not in known_ids:
            raise UsageError(f"{p} row {n}: unknown id {rid!r} (not an action of this dataset's probe scores)")
        lab = str(r.get("label") or "").strip().lower()
        if not lab:
            continue
        if lab not in LABELS:
            raise UsageError(f"{p} row {n}: label {r.get('label')!r} must be grounded, not grounded or unsure")
        try:
            weight = float(r.get("weight") or 1.0)
        except ValueError:
            raise UsageError(f"{p} row {n}: weight {r.get('weight')!r} is not a number") from None
        out.append({"id": rid, "label": LABELS[lab], "weight": weight})
    return out


def human_agreement(labels: Sequence[Mapping[str, Any]], scores: Sequence[Mapping[str, Any]], *,
                    file: str = "", seed: int = 0, n_bootstrap: int = N_BOOTSTRAP) -> HumanAgreement:
    """Probe verdicts (and injected labels, where present) against human labels.

    Notes
    -----
    ``agreement`` is the share of labelled items where the probe verdict equals the human label;
    ``weighted_agreement`` weights item i by its sampling weight :math:`w_i` (stratum size over stratum
    sample), :math:`\\sum_i w_i [\\hat y_i = h_i] / \\sum_i w_i`, an estimate for the whole dataset. The
    interval resamples trajectories.
    """
    by_id = {f"{s['trajectory']}:{s['call_id']}": s for s in scores}
    lab = [x for x in labels if x["label"] is not None]
    n_unsure = sum(x["label"] is None for x in labels)
    human = np.array([x["label"] for x in lab], dtype=bool)
    probe = np.array([bool(by_id[x["id"]]["grounded"]) for x in lab], dtype=bool)
    w = np.array([x["weight"] for x in lab], dtype=float)
    groups = np.array([by_id[x["id"]]["trajectory"] for x in lab])
    inj = [by_id[x["id"]].get("injected") for x in lab]
    injected_agree = None
    if lab and all(v is not None for v in inj):
        injected_agree = float(np.mean(np.array([not v for v in inj]) == human))
    cm = confusion(probe, human)
    ci = None
    if lab:
        rng = np.random.default_rng(seed)
        uniq = np.unique(groups)
        members = [np.flatnonzero(groups == u) for u in uniq]
        vals = []
        for _ in range(n_bootstrap):
            idx = np.concatenate([members[i] for i in rng.integers(0, len(uniq), len(uniq))])
            vals.append(float(np.mean(probe[idx] == human[idx])))
        ci = Interval(low=float(np.percentile(vals, 2.5)), high=float(np.percentile(vals, 97.5)))
    return HumanAgreement(
        file=file, n_items=len(labels), n_labelled=len(lab), n_unsure=n_unsure,
        agreement=cm.agreement, agreement_ci=ci,
        weighted_agreement=float((w * (probe == human)).sum() / w.sum()) if lab else None,
        balanced_accuracy=balanced_accuracy(cm), kappa=kappa(cm), confusion=cm,
        injected_agreement=injected_agree)
