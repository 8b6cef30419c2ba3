"""The ``lm`` probe: a tiny causal LM trained on the data, cross-fitted over ``spec.folds`` folds.

The model, rendering, masks and scoring live in :mod:`probes.masking`; this module runs them per fold and
keeps the probe within its FLOP budget.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from probes.kinds import ProbeRun, Progress
from probes.models import ActionScore, TrajectoryProvenance
from probes.provenance import ParsedRow
from toolscale.config import ProbeSpec
from toolscale.errors import ToolscaleError

__all__ = ["run_lm", "failed_scores", "folds_of", "score_folds"]


def failed_scores(provs: list[TrajectoryProvenance], reason: str) -> list[ActionScore]:
    return [ActionScore(trajectory=p.index, call_id=a.call_id, n_tokens=0, derivable=a.derivable,
                        injected=None if p.injected is None else a.call_id in p.injected, error=reason)
            for p in provs for a in p.actions]


def folds_of(n: int, k: int, seed: int) -> list[list[int]]:
    """``k`` disjoint folds of ``range(n)`` (seeded; one fold when ``n < 2`` or ``k == 1``)."""
    if k <= 1 or n < 2:
        return [list(range(n))]
    perm = random.Random(seed).sample(range(n), n)
    k = min(k, n)
    return [sorted(perm[f::k]) for f in range(k)]


def run_lm(rows: Sequence[ParsedRow], provs: Sequence[TrajectoryProvenance], spec: ProbeSpec,
           target_train_flops: float | None, progress: Progress | None = None) -> ProbeRun:
    """Cross-fitted LM probes over ``spec.folds`` folds.

    With ``spec.folds = k >= 2`` the trajectories are split into k folds; fold f is scored by a probe
    trained on a sample of the other folds, so no trajectory is scored by a model that saw it (an
    LM scores its own training text too well, injected constants included). ``k = 1`` trains on a
    sample of all trajectories and scores all of them, in-sample ones included.

    Budget: with a target and ``spec.enforce_budget``, scoring gets what training left of
    ``max_cost_share * target_train_flops``; when scoring every trajectory (``2 N`` per token, exact
    token counts from the masking plan) would exceed it, a seeded random subset of trajectories
    is scored and the other actions are marked ``skipped``.
    """
    from probes.masking import encode, render_pieces, train_probe

    pieces = [render_pieces(r) for r in rows]
    rng = random.Random(spec.seed)
    folds = folds_of(len(rows), spec.folds, spec.seed)
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
            scores += failed_scores([provs[i] for i in fold], msg)
            problems.append(msg)
            continue
        params = float(lm.params)
        train_tok += lm.train_tokens
        encoded = dict(zip(fold, encode([pieces[i] for i in fold], lm.tokenizer), strict=True))
        data_tok += sum(len(e.ids) for e in encoded.values())
        trained.append((f, lm, encoded))
    more, score_tok, cut = score_folds(trained, provs, spec, target_train_flops, params, train_tok, progress)
    scores += more
    problems += cut
    order = {(p.index, a.call_id): n for n, (p, a) in enumerate((p, a) for p in provs for a in p.actions)}
    scores.sort(key=lambda s: order[(s.trajectory, s.call_id)])
    return ProbeRun(scores=scores, params=params, train_tokens=train_tok, score_tokens=score_tok,
                    data_tokens=data_tok, problems=problems)


def score_folds(trained: list, provs: Sequence[TrajectoryProvenance], spec: ProbeSpec,
                target_train_flops: float | None, params: float, train_tok: float,
                progress: Progress | None = None) -> tuple[list[ActionScore], float, list[str]]:
    """Score each ``(fold, ProbeLM, {trajectory: Encoded})`` within the FLOP budget.

    Returns the scores (skipped ones marked), the scoring tokens and the budget problem, if any.
    """
    from probes.cost import scoring_flops
    from toolscale.config import training_flops
    from probes.masking import score_dataset, scoring_tokens

    scores: list[ActionScore] = []
    problems: list[str] = []
    score_tok = 0.0
    n_folds = len(trained)
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
        cb = (lambda done, total, f=f: progress(f"score {f + 1}/{n_folds}", done, total)) if progress else None
        fold_scores, tokens = score_dataset(lm, [encoded[i] for i in idx], [provs[i] for i in idx],
                                            max_seq_len=spec.max_seq_len, batch_size=spec.batch_size,
                                            mask=spec.mask, progress=cb)
        scores += fold_scores
        score_tok += tokens
        scores += [ActionScore(trajectory=i, call_id=a.call_id, n_tokens=0, derivable=a.derivable,
                               injected=None if provs[i].injected is None else a.call_id in provs[i].injected,
                               error="not scored: over the probe FLOP budget", skipped=True)
                   for i in encoded if i not in chosen for a in provs[i].actions]
    return scores, score_tok, problems
