"""Probe one dataset folder: provenance, coverage, masking probe, calibration, cost (pinned interface 7).

``probe_dataset(DIR, spec=..., target_train_flops=...)`` reads ``DIR/train.jsonl``, writes the
per-action scores to ``DIR/probe_scores.jsonl`` and the summary to ``DIR/manifest.json`` under
``"probe"`` (both atomically, after everything was computed, so a failure leaves the folder as
it was). The registry is written by the CLI (:mod:`toolscale.cli.probe`).
"""

from __future__ import annotations

import json
import os
import random
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from probes.calibration import calibrate, verdicts
from probes.cost import probe_cost
from probes.masking import get_mask_strategy
from probes.coverage import coverage
from probes.models import ActionScore, ProbeSummary, RepairRecord, TrajectoryProvenance
from probes.provenance import ParsedRow, parse_row, trace_trajectory
from toolscale.config import ProbeSpec
from toolscale.errors import ToolscaleError, UsageError

__all__ = ["probe_dataset", "read_dataset", "repair_dir", "DEFAULT_THRESHOLD", "RELIABLE_BALANCED_ACCURACY",
           "SCORES_FILE", "action_rows"]

RELIABLE_BALANCED_ACCURACY = 0.6
"""Balanced accuracy (evaluation split) a calibrated probe needs before its groundedness is trusted."""
DEFAULT_THRESHOLD = 0.5
"""Groundedness threshold used when the data cannot be split for calibration (one trajectory)."""
SCORES_FILE = "probe_scores.jsonl"
"""Per-action scores, one JSON object per line, next to ``train.jsonl``."""

Progress = Callable[[str, int, int], None]


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


def _atomic_write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _failed_scores(provs: list[TrajectoryProvenance], reason: str) -> list[ActionScore]:
    return [ActionScore(trajectory=p.index, call_id=a.call_id, n_tokens=0, derivable=a.derivable,
                        injected=None if p.injected is None else a.call_id in p.injected, error=reason)
            for p in provs for a in p.actions]


def _folds(n: int, k: int, seed: int) -> list[list[int]]:
    """``k`` disjoint folds of ``range(n)`` (seeded; one fold when ``n < 2`` or ``k == 1``)."""
    if k <= 1 or n < 2:
        return [list(range(n))]
    perm = random.Random(seed).sample(range(n), n)
    k = min(k, n)
    return [sorted(perm[f::k]) for f in range(k)]


def _run_probe(rows: list[ParsedRow], provs: list[TrajectoryProvenance], spec: ProbeSpec,
               target_train_flops: float | None,
               progress: Progress | None) -> tuple[list[ActionScore], float, float, float, float, list[str]]:
    """Cross-fitted probes: (scores, params, train/score/data tokens, problems).

    With ``spec.folds = k >= 2`` the trajectories are split into k folds; fold f is scored by a probe
    trained on a sample of the other folds, so no trajectory is scored by a model that saw it (an
    LM scores its own training text too well, injected constants included). ``k = 1`` trains on a
    sample of all trajectories and scores all of them, in-sample ones included.

    Budget: with a target and ``spec.enforce_budget``, scoring gets what training left of
    ``max_cost_share * target_train_flops``; when scoring every trajectory (``2 N`` per token, exact
    token counts from the masking plan) would exceed it, a seeded random subset of trajectories
    is scored and the other actions are marked ``skipped``.
    """
    from probes.cost import scoring_flops
    from toolscale.config import training_flops
    from probes.masking import encode, render_pieces, score_dataset, scoring_tokens, train_probe

    pieces = [render_pieces(r) for r in rows]
    rng = random.Random(spec.seed)
    folds = _folds(len(rows), spec.folds, spec.seed)
    scores: list[ActionScore] = []
    params = train_tok = score_tok = data_tok = 0.0
    problems: list[str] = []
    trained = []
    for f, fold in enumerate(folds):
        pool = [i for i in range(len(rows)) if i not in set(fold)] if len(folds) > 1 else fold
        sample = sorted(rng.sample(pool, min(spec.sample_size, len(pool))))
        texts = ["".join(p[0] for p in pieces[i]) for i in sample]
        tcb = (lambda done, total, f=f: progress(f"train {f + 1}/{len(folds)}", done, total)) if progress else None
        try:
            lm = train_probe(texts, lambda tok, s=sample: encode([pieces[i] for i in s], tok), spec, progress=tcb)
        except (RuntimeError, ValueError, ToolscaleError) as err:  # no model: nothing in this fold is grounded
            msg = f"probe training failed: {str(err).splitlines()[0][:200]}"
            scores += _failed_scores([provs[i] for i in fold], msg)
            problems.append(msg)
            continue
        params = float(lm.params)
        train_tok += lm.train_tokens
        encoded = dict(zip(fold, encode([pieces[i] for i in fold], lm.tokenizer), strict=True))
        data_tok += sum(len(e.ids) for e in encoded.values())
        trained.append((f, lm, encoded))
    need = {i: scoring_tokens(e, provs[i], max_seq_len=spec.max_seq_len, mask=spec.mask)
            for _, _, enc in trained for i, e in enc.items()}
    chosen = set(need)
    if target_train_flops is not None and spec.enforce_budget and need:
        left = spec.max_cost_share * target_train_flops - training_flops(params, train_tok)
        if scoring_flops(params, sum(need.values())) > left:
            chosen, spent = set(), 0.0
            for i in random.Random(spec.seed + 1).sample(sorted(need), len(need)):
                if scoring_flops(params, spent + need[i]) <= left:
                    chosen.add(i)
                    spent += need[i]
            problems.append(f"probe FLOP budget: scored {len(chosen)} of {len(need)} trajectories")
    for f, lm, encoded in trained:
        idx = [i for i in encoded if i in chosen]
        cb = (lambda done, total, f=f: progress(f"score {f + 1}/{len(folds)}", done, total)) if progress else None
        fold_scores, tokens = score_dataset(lm, [encoded[i] for i in idx], [provs[i] for i in idx],
                                            max_seq_len=spec.max_seq_len, batch_size=spec.batch_size,
                                            mask=spec.mask, progress=cb)
        scores += fold_scores
        score_tok += tokens
        scores += [ActionScore(trajectory=i, call_id=a.call_id, n_tokens=0, derivable=a.derivable,
                               injected=None if provs[i].injected is None else a.call_id in provs[i].injected,
                               error="not scored: over the probe FLOP budget", skipped=True)
                   for i in encoded if i not in chosen for a in provs[i].actions]
    order = {(p.index, a.call_id): n for n, (p, a) in enumerate((p, a) for p in provs for a in p.actions)}
    scores.sort(key=lambda s: order[(s.trajectory, s.call_id)])
    return scores, params, train_tok, score_tok, data_tok, problems


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
                  progress: Progress | None = None, write: bool = True) -> ProbeSummary:
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

    Returns
    -------
    ProbeSummary
        ``measured_groundedness`` (share of actions the calibrated probe calls grounded; a probe
        failure is never grounded), ``coverage``, ``agreement`` with synth's injected labels on
        the evaluation split (None without labels) and ``probe_cost_share``.

    Notes
    -----
    Scores are cross-fitted over ``spec.folds`` folds (no trajectory is scored by a probe that
    trained on it). With a target and ``spec.enforce_budget``, a seeded subset of trajectories is
    scored when scoring all would exceed ``spec.max_cost_share``; ``n_scored`` says how many
    actions were. The threshold is calibrated against the injected labels
    (``meta.nonderivable_calls``) when every row has them, else against symbolic provenance; it is
    chosen on ``spec.calibration_fraction`` of the trajectories and evaluated on the others.
    ``probe_reliable`` is False when the probe does not beat a constant verdict there.
    """
    spec = spec or ProbeSpec()
    get_mask_strategy(spec.mask)  # unknown names fail before any work
    d = Path(data_dir)
    rows, manifest = read_dataset(d)
    provs = [trace_trajectory(r, i) for i, r in enumerate(rows)]
    cov = coverage(provs, k=spec.coverage_depth, quota=spec.coverage_quota)
    problems = [f"trajectory {p.index}: {x}" for p in provs for x in p.problems]
    n_actions = sum(len(p.actions) for p in provs)
    if n_actions:
        scores, params, train_tok, score_tok, data_tok, extra = _run_probe(rows, provs, spec, target_train_flops,
                                                                           progress)
        problems += extra
    else:
        scores, params, train_tok, score_tok, data_tok = [], 0.0, 0.0, 0.0, 0.0
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
                      target_train_flops=target_train_flops, budget_share=spec.max_cost_share,
                      data_tokens=data_tok)
    prov_agree = None
    if labelled and n_actions:
        prov_agree = sum(a.derivable == (not injected_of[(p.index, a.call_id)])
                         for p in provs for a in p.actions) / n_actions
    summary = ProbeSummary(
        dataset=str(d), n_trajectories=len(rows), n_actions=n_actions, n_scored=n_scored,
        measured_groundedness=sum(s.grounded for s in scores) / n_scored if n_scored else None,
        symbolic_groundedness=sum(a.derivable for p in provs for a in p.actions) / n_actions if n_actions else None,
        coverage=cov.score, agreement=cal.agreement if cal is not None and labelled else None,
        provenance_agreement=prov_agree, probe_cost_share=cost.share, calibration=cal, coverage_report=cov,
        probe_reliable=None if cal is None else (cal.balanced_accuracy or 0.0) >= RELIABLE_BALANCED_ACCURACY,
        cost=cost, scores_path=str(d / SCORES_FILE), problems=problems)
    if write:
        lines = "".join(json.dumps(r) + "\n" for r in action_rows(scores, provs))
        _atomic_write(d / SCORES_FILE, lines)
        manifest = {**manifest, "probe": summary.model_dump(mode="json")}
        _atomic_write(d / "manifest.json", json.dumps(manifest, indent=2) + "\n")
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
    _atomic_write(d / "train.jsonl", "".join(json.dumps(r) + "\n" for r in new_rows))
    _atomic_write(d / "manifest.json", json.dumps(manifest, indent=2) + "\n")
    return records
