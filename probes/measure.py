"""Probe one dataset folder: provenance, coverage, masking probe, calibration, cost (pinned interface 7).

``probe_dataset(DIR, spec=..., target_train_flops=...)`` reads ``DIR/train.jsonl``, writes the
per-action scores to ``DIR/probe_scores.jsonl`` and the summary to ``DIR/manifest.json`` under
``"probe"`` (both atomically, after everything was computed, so a failure leaves the folder as
it was). The registry is written by the CLI (:mod:`toolscale.cli.probe`).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from probes.calibration import balanced_accuracy, calibrate, confusion, split_groups, verdicts
from probes.cost import probe_cost
from probes.kinds import ProbeRun, Progress, get_probe
from probes.masking import get_mask_strategy
from probes.coverage import coverage
from probes.models import ActionScore, ProbeSummary, RepairRecord, TrajectoryProvenance
from probes.provenance import ParsedRow, exact_derivable, parse_row, trace_trajectory
from toolscale.config import ProbeSpec
from toolscale.errors import UsageError
from toolscale.files import atomic_write_text

__all__ = ["probe_dataset", "read_dataset", "repair_dir", "DEFAULT_THRESHOLD", "RELIABLE_BALANCED_ACCURACY",
           "SCORES_FILE", "action_rows"]

RELIABLE_BALANCED_ACCURACY = 0.8
"""Balanced accuracy (evaluation split) a calibrated probe needs before its groundedness is trusted (and
offered to ``fit`` as the ``measured_groundedness`` quality axis)."""
DEFAULT_THRESHOLD = 0.5
"""Groundedness threshold used when the data cannot be split for calibration (one trajectory)."""
SCORES_FILE = "probe_scores.jsonl"
"""Per-action scores, one JSON object per line, next to ``train.jsonl``."""

def read_dataset(data_dir: str | Path) -> tuple[list[ParsedRow], dict[str, Any]]:
    """Rows of ``DIR/train.jsonl`` (decoded) and ``DIR/manifest.json`` (``{}`` when absent).

    Raises :class:`UsageError` naming the folder, file and line for anything unreadable.
    """
    d = Path(data_dir)
    if not d.is_dir():
        raise UsageError(f"dataset folder {str(d)!r} does not exist (expected a folder written by `toolscale synth`)")
    f = d / "train.jsonl"
    if not f.is_file():
        raise UsageError(f"dataset folder {str(d)!r} has no train.jsonl (expected a folder written by "
                         "`toolscale synth`)")
    rows: list[ParsedRow] = []
    with open(f, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as err:
                raise UsageError(f"{f} line {n}: not valid JSON ({err.msg} at char {err.pos})") from None
            rows.append(parse_row(obj, len(rows)))
    if not rows:
        raise UsageError(f"{f} holds no trajectories")
    manifest: dict[str, Any] = {}
    mf = d / "manifest.json"
    if mf.is_file():
        try:
            manifest = json.loads(mf.read_text(encoding="utf-8"))
        except json.JSONDecodeError as err:
            raise UsageError(f"{mf}: not valid JSON ({err.msg} at char {err.pos}); nothing was written") from None
        if not isinstance(manifest, dict):
            raise UsageError(f"{mf}: expected a JSON object, got {type(manifest).__name__}; nothing was written")
    return rows, manifest


def action_rows(scores: list[ActionScore], provs: list[TrajectoryProvenance]) -> list[dict[str, Any]]:
    """Per-action records (score plus tool, depth, support and reason) as written to ``probe_scores.jsonl``."""
    by_key = {(p.index, a.call_id): a for p in provs for a in p.actions}
    out = []
    for s in scores:
        a = by_key[(s.trajectory, s.call_id)]
        out.append({**s.model_dump(mode="json"), "tool": a.tool, "depth": a.depth, "supports": a.supports,
                    "status": a.status, "reason": a.reason})
    return out


def probe_dataset(data_dir: str | Path, *, spec: ProbeSpec | None = None, target_train_flops: float | None = None,
                  progress: Progress | None = None, write: bool = True,
                  target_name: str | None = None) -> ProbeSummary:
    """Measure groundedness, coverage and probe cost of one dataset folder.

    Parameters
    ----------
    data_dir : str or Path
        Folder with ``train.jsonl`` (pinned interface 1) and optionally ``manifest.json``.
    spec : ProbeSpec, optional
        Probe settings (default ``ProbeSpec()``).
    target_train_flops : float, optional
        FLOPs of the training run this data feeds; the cost share is None without it.
    progress : callable, optional
        ``progress(stage, done, total)`` with stage ``train`` or ``score``.
    write : bool
        Write ``probe_scores.jsonl`` and update ``manifest.json`` (default True).
    target_name : str, optional
        What ``target_train_flops`` is (``rung tiny-l``...), recorded in ``cost.target``.

    Returns
    -------
    ProbeSummary
        ``measured_groundedness`` (share of actions the calibrated probe calls grounded; a probe
        failure is never grounded), ``coverage``, ``agreement`` with synth's injected labels on
        the evaluation split (None without labels) and ``probe_cost_share``.

    Notes
    -----
    The probe is ``spec.kind`` (:mod:`probes.kinds`; ``copy`` trains nothing). ``lm`` scores are
    cross-fitted over ``spec.folds`` folds (no trajectory is scored by a probe that trained on it). With a target and ``spec.enforce_budget``, a seeded subset of trajectories is
    scored when scoring all would exceed ``spec.max_cost_share``; ``n_scored`` says how many
    actions were. The threshold is calibrated against the injected labels
    (``meta.nonderivable_calls``) when every row has them, else against symbolic provenance; it is
    chosen on ``spec.calibration_fraction`` of the trajectories and evaluated on the others.
    ``probe_reliable`` is False when the probe does not beat a constant verdict there.
    """
    spec = spec or ProbeSpec()
    probe = get_probe(spec.kind)  # unknown kinds and masks fail before any work
    if spec.kind != "copy":
        get_mask_strategy(spec.mask)
    d = Path(data_dir)
    rows, manifest = read_dataset(d)
    provs = [trace_trajectory(r, i) for i, r in enumerate(rows)]
    cov = coverage(provs, k=spec.coverage_depth, quota=spec.coverage_quota)
    problems = [f"trajectory {p.index}: {x}" for p in provs for x in p.problems]
    n_actions = sum(len(p.actions) for p in provs)
    run = probe(rows, provs, spec, target_train_flops, progress) if n_actions else ProbeRun(scores=[])
    problems += run.problems
    scores, params, train_tok, score_tok, data_tok = (run.scores, run.params, run.train_tokens, run.score_tokens,
                                                      run.data_tokens)
    labelled = all(p.injected is not None for p in provs)
    injected_of = {(p.index, a.call_id): (a.call_id in (p.injected or [])) for p in provs for a in p.actions}
    used = [s for s in scores if not s.skipped]
    ref_labels = [not injected_of[(s.trajectory, s.call_id)] if labelled else s.derivable for s in used]
    values = [s.groundedness for s in used]
    cal = calibrate(values, ref_labels, [s.trajectory for s in used],
                    reference="injected" if labelled else "provenance", fraction=spec.calibration_fraction,
                    seed=spec.seed) if used else None
    threshold = cal.threshold if cal is not None else DEFAULT_THRESHOLD
    scores = [s if s.skipped else s.model_copy(update={"grounded": bool(verdicts([s.groundedness], threshold)[0])})
              for s in scores]
    n_scored = len(used)
    cost = probe_cost(params=params, train_tokens=train_tok, score_tokens=score_tok,
                      target_train_flops=target_train_flops, budget_share=spec.max_cost_share, target=target_name,
                      data_tokens=data_tok)
    prov_agree = prov_bal = exact_bal = None
    if labelled and n_actions:
        prov_agree = sum(a.derivable == (not injected_of[(p.index, a.call_id)])
                         for p in provs for a in p.actions) / n_actions
        if cal is not None:  # on the probe's evaluation split, for a like-for-like comparison
            ev = ~split_groups([s.trajectory for s in used], fraction=spec.calibration_fraction, seed=spec.seed)
            acts = {(p.index, a.call_id): a for p in provs for a in p.actions}
            ev_acts = [acts[(s.trajectory, s.call_id)] for s, e in zip(used, ev, strict=True) if e]
            ev_labels = [lab for lab, e in zip(ref_labels, ev, strict=True) if e]
            prov_bal = balanced_accuracy(confusion([a.derivable for a in ev_acts], ev_labels))
            exact_bal = balanced_accuracy(confusion([exact_derivable(a) for a in ev_acts], ev_labels))
    summary = ProbeSummary(
        dataset=str(d), n_trajectories=len(rows), n_actions=n_actions, n_scored=n_scored,
        measured_groundedness=sum(s.grounded for s in scores) / n_scored if n_scored else None,
        symbolic_groundedness=sum(a.derivable for p in provs for a in p.actions) / n_actions if n_actions else None,
        coverage=cov.score, agreement=cal.agreement if cal is not None and labelled else None,
        provenance_agreement=prov_agree, provenance_balanced_accuracy=prov_bal,
        exact_match_balanced_accuracy=exact_bal, kind=spec.kind, probe_cost_share=cost.share, calibration=cal, coverage_report=cov,
        probe_reliable=None if cal is None else (cal.balanced_accuracy or 0.0) >= RELIABLE_BALANCED_ACCURACY,
        cost=cost, scores_path=str(d / SCORES_FILE), problems=problems)
    if write:
        lines = "".join(json.dumps(r) + "\n" for r in action_rows(scores, provs))
        atomic_write_text(d / SCORES_FILE, lines)
        manifest = {**manifest, "probe": summary.model_dump(mode="json")}
        atomic_write_text(d / "manifest.json", json.dumps(manifest, indent=2) + "\n")
    return summary


def repair_dir(data_dir: str | Path, *, rate: float, operation: str = "resynthesize", seed: int = 0,
               **options: Any) -> list[RepairRecord]:
    """Repair a share of the flagged actions of a probed dataset folder, in place (synth's repair knob).

    Flagged actions are those the probe did not call grounded (``DIR/probe_scores.jsonl``), or, for a
    folder not probed yet, those symbolic provenance finds non-derivable. ``round(rate * n_flagged)``
    of them, chosen with ``seed``, get ``operation`` (:mod:`probes.repair`); ``train.jsonl`` is
    rewritten and ``manifest.json`` records ``{"repair": {operation, rate, n_flagged, n_applied}}``.
    """
    from probes.repair import get_repair, repair_dataset

    if not 0.0 <= rate <= 1.0:
        raise UsageError(f"repair rate must be in [0, 1], got {rate}")
    get_repair(operation)
    d = Path(data_dir)
    read_dataset(d)  # validates the folder before anything is written
    raw = [json.loads(line) for line in (d / "train.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    scores_file = d / SCORES_FILE
    if scores_file.is_file():
        flagged = [(r["trajectory"], r["call_id"]) for r in map(json.loads, scores_file.read_text().splitlines())
                   if not r["grounded"]]
    else:
        flagged = [(p.index, a.call_id) for p in (trace_trajectory(parse_row(r, i), i) for i, r in enumerate(raw))
                   for a in p.actions if not a.derivable]
    chosen = sorted(random.Random(seed).sample(flagged, round(rate * len(flagged))))
    by_row: dict[int, list[str]] = {}
    for i, cid in chosen:
        by_row.setdefault(i, []).append(cid)
    new_rows, records = repair_dataset(raw, by_row, operation, **options)
    _, manifest = read_dataset(d)
    manifest = {**manifest, "repair": {"operation": operation, "rate": rate, "n_flagged": len(flagged),
                                       "n_applied": sum(r.applied for r in records), "seed": seed}}
    atomic_write_text(d / "train.jsonl", "".join(json.dumps(r) + "\n" for r in new_rows))
    atomic_write_text(d / "manifest.json", json.dumps(manifest, indent=2) + "\n")
    return records
