"""The ``copy`` probe: a training-free, copy-aware counterfactual-masking scorer (the CPU default).

Each argument value of an action is scored as a character string under two language models that differ
only in what they may read:

- *full*: an in-context copy model over the visible history ``H`` (the tool list, user turns and earlier
  tool outputs before the action; never the assistant's own turns or earlier arguments), mixed with a
  character bigram prior;
- *masked*: the same model with all of ``H`` masked, so the copy heads find nothing and the prior alone
  is left.

For a value :math:`v = c_1 \\dots c_n` (a leaf of the arguments object, as text) and per character,

.. math::

    p_\\mathrm{full}(c_t) = \\lambda_e\\, p_\\mathrm{exact}(c_t \\mid k, c_{<t}, H)
        + \\lambda_s\\, p_\\mathrm{skel}(c_t \\mid c_{<t}, H) + (1 - \\lambda_e - \\lambda_s)\\, p_\\mathrm{bi}(c_t \\mid c_{t-1}),
    \\qquad p_\\mathrm{masked}(c_t) = p_\\mathrm{bi}(c_t \\mid c_{t-1}),

- :math:`p_\\mathrm{exact}` is a hard induction head: it finds the longest suffix (at most
  :data:`MAX_ORDER` characters) of the context ``"KEY": " + c_{<t}`` (``k`` = the argument's name) that
  occurs in ``H`` and predicts the empirical distribution of the characters that follow its occurrences
  (a whole-prefix match must start on a token boundary of ``H``; with no match at all, the distribution of
  token-initial characters of ``H``);
- :math:`p_\\mathrm{skel}` is the same head on *skeletons*, the case-folded letters and digits only (so a
  value survives changes of case and separators); it spreads a letter's probability over its two cases
  and predicts nothing for a separator;
- :math:`p_\\mathrm{bi}` is a character bigram model fitted, without labels, on every observation of the
  dataset (add-:math:`\\alpha` smoothing towards the unigram).

The argument's evidence is the summed log-probability drop when the history is masked, and the action's
groundedness is the weakest argument's (one fabricated value among copied ones decides):

.. math:: \\Delta_a = \\sum_{t=1}^{n} \\log \\frac{p_\\mathrm{full}(c_t)}{p_\\mathrm{masked}(c_t)}, \\qquad
          g = \\min_a \\Delta_a \\quad \\text{(nats)}.

A copied value gains about :math:`\\log(\\lambda_e / p_\\mathrm{bi})` per character; a value nothing visible
predicts loses up to :math:`-\\log(1 - \\lambda_e - \\lambda_s)` per character. Booleans, nulls and empty
containers (fixed by the tool schema) are not scored; an action with nothing left to score has nothing that
could be fabricated and gets :data:`NOTHING_TO_SCORE`. The mask never reads
provenance labels: it hides all of the history. The threshold on ``g`` is calibrated elsewhere
(:mod:`probes.calibration`). No parameters are trained, so the FLOPs are counted as 0.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from probes.models import ActionScore, TrajectoryProvenance
from probes.provenance import ParsedRow, iter_leaves

__all__ = ["LAMBDA_EXACT", "LAMBDA_SKELETON", "MAX_ORDER", "NOTHING_TO_SCORE", "BigramPrior", "fit_prior", "value_drop",
           "score_trajectory", "copy_scores", "visible_history", "run_copy"]

LAMBDA_EXACT = 0.6
"""Weight of the exact induction head in the full model."""
LAMBDA_SKELETON = 0.2
"""Weight of the skeleton (case- and separator-blind) induction head."""
NOTHING_TO_SCORE = 1000.0
"""Groundedness (nats) of an action without any scored argument value."""
MAX_ORDER = 24
"""Longest context suffix the induction heads try to match, in characters."""
_ALPHA = 1.0
_BOUNDARY = set(" \t\n\"'{}[](),:;=<>/|")


def _skeleton(text: str) -> str:
    return "".join(ch for ch in text.casefold() if ch.isalnum())


@dataclass(frozen=True)
class BigramPrior:
    """A character bigram model ``p(c | prev)`` with add-alpha smoothing towards the unigram."""

    pairs: dict[tuple[str, str], int]
    prev_counts: dict[str, int]
    unigram: dict[str, int]
    total: int
    vocab: int

    def p(self, c: str, prev: str) -> float:
        """``p(c | prev)``; ``prev = ""`` at the start of a value."""
        uni = (self.unigram.get(c, 0) + 1) / (self.total + self.vocab)
        n = self.prev_counts.get(prev, 0)
        return (self.pairs.get((prev, c), 0) + _ALPHA * uni) / (n + _ALPHA)


def fit_prior(texts: Iterable[str]) -> BigramPrior:
    """Fit the bigram prior on observation texts (label-free); token starts count as ``prev = ""``."""
    pairs: Counter[tuple[str, str]] = Counter()
    uni: Counter[str] = Counter()
    for text in texts:
        prev = ""
        for ch in text:
            uni[ch] += 1
            pairs[(prev, ch)] += 1
            prev = "" if ch in _BOUNDARY else ch
    prev_counts: Counter[str] = Counter()
    for (a, _), n in pairs.items():
        prev_counts[a] += n
    return BigramPrior(dict(pairs), dict(prev_counts), dict(uni), sum(uni.values()), max(len(uni), 1) + 64)


def _next_counts(hay: str, ctx: str, anchored: bool) -> Counter[str]:
    out: Counter[str] = Counter()
    k = len(ctx)
    i = hay.find(ctx)
    while i != -1:
        j = i + k
        if j < len(hay) and (not anchored or i == 0 or hay[i - 1] in _BOUNDARY):
            out[hay[j]] += 1
        i = hay.find(ctx, i + 1)
    return out


def _induction(hay: str, ctx: str, whole: int, starts: Counter[str]) -> Counter[str]:
    """Next-character counts after the longest suffix of ``ctx`` found in ``hay``.

    ``whole`` is the length of the value prefix at the end of ``ctx``: a suffix covering exactly that
    prefix must match at a token boundary first (then anywhere); ``starts`` is the fallback.
    """
    for k in range(min(len(ctx), MAX_ORDER), 0, -1):
        suffix = ctx[-k:]
        if k == whole:
            c = _next_counts(hay, suffix, anchored=True)
            if c:
                return c
        c = _next_counts(hay, suffix, anchored=False)
        if c:
            return c
    return starts


def _starts(hay: str) -> Counter[str]:
    return Counter(hay[i] for i in range(len(hay)) if (i == 0 or hay[i - 1] in _BOUNDARY) and hay[i] not in _BOUNDARY)


def value_drop(value: str, key: str, history: str, prior: BigramPrior) -> float:
    """:math:`\\Delta_a` of one value string (nats; see the module docstring)."""
    skel = _skeleton(history)
    starts, skel_starts = _starts(history), Counter(skel[:1]) + Counter(skel)  # any skeleton char may start
    head = f'"{key}": "'
    total, prev = 0.0, ""
    w_prior = 1.0 - LAMBDA_EXACT - LAMBDA_SKELETON
    for t, ch in enumerate(value):
        ce = _induction(history, head + value[:t], t, starts) if history else Counter()
        pe = ce[ch] / sum(ce.values()) if ce else 0.0
        ps = 0.0
        if history and ch.isalnum():
            sk_ctx = _skeleton(value[:t])
            cs = _induction(skel, sk_ctx, len(sk_ctx), skel_starts) if skel else Counter()
            if cs:
                ps = cs[ch.casefold()] / sum(cs.values()) / (2.0 if ch.casefold() != ch.upper() else 1.0)
        pb = prior.p(ch, prev)
        total += math.log((LAMBDA_EXACT * pe + LAMBDA_SKELETON * ps + w_prior * pb) / pb)
        prev = "" if ch in _BOUNDARY else ch
    return total


def _text(content: object) -> str:
    if content is None:
        return ""
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


def visible_history(row: ParsedRow, message_index: int) -> str:
    """What the agent saw before ``messages[message_index]``: tool list, user turns and tool outputs."""
    parts = [json.dumps(row.tools, ensure_ascii=False)] if row.tools else []
    for m in row.messages[:message_index]:
        if m.get("role") in ("user", "tool"):
            parts.append(_text(m.get("content")))
    return "\n".join(parts)


def _call_arguments(row: ParsedRow, message_index: int, call_id: str) -> dict | None:
    for call in row.messages[message_index].get("tool_calls") or []:
        if isinstance(call, dict) and str(call.get("id")) == call_id:
            raw = (call.get("function") or {}).get("arguments", "{}")
            try:
                args = json.loads(raw) if isinstance(raw, str) else raw
            except json.JSONDecodeError:
                return None
            return args if isinstance(args, dict) else None
    return None


def score_trajectory(row: ParsedRow, prov: TrajectoryProvenance, prior: BigramPrior) -> list[ActionScore]:
    """Copy-probe scores of every action of one trajectory (``groundedness`` = g in nats)."""
    out = []
    injected = set(prov.injected) if prov.injected is not None else None
    for a in prov.actions:
        lab = None if injected is None else a.call_id in injected
        base = dict(trajectory=prov.index, call_id=a.call_id, derivable=a.derivable, injected=lab)
        args = _call_arguments(row, a.message_index, a.call_id) if a.status == "ok" else None
        if args is None:
            out.append(ActionScore(n_tokens=0, error=f"not scored: {a.reason or 'malformed arguments'}", **base))
            continue
        history = visible_history(row, a.message_index)
        drops, n_chars, weakest = [], 0, None
        for path, value in iter_leaves(args):
            if value is None or isinstance(value, bool) or value in ([], {}):
                continue
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            key = path.rsplit(".", 1)[-1]
            d = value_drop(text, key, history, prior)
            n_chars += len(text)
            drops.append(d)
            if weakest is None or d < weakest[0]:
                weakest = (d, text, path)
        g = min(drops) if drops else NOTHING_TO_SCORE
        lp_full = lp_masked = None
        if weakest is not None:
            lp_masked = sum(math.log(prior.p(ch, "" if i == 0 or weakest[1][i - 1] in _BOUNDARY else weakest[1][i - 1]))
                            for i, ch in enumerate(weakest[1]))
            lp_full = lp_masked + weakest[0]
        out.append(ActionScore(n_tokens=n_chars, logp_full=lp_full, logp_masked=lp_masked, groundedness=g,
                               weakest_argument=None if weakest is None else weakest[2], **base))
    return out


def copy_scores(rows: Sequence[ParsedRow], provs: Sequence[TrajectoryProvenance],
                progress: Callable[[int, int], None] | None = None) -> list[ActionScore]:
    """Scores of every action of every trajectory; the prior is fitted on all observations (no labels)."""
    prior = fit_prior(_text(m.get("content")) for r in rows for m in r.messages if m.get("role") in ("user", "tool"))
    out: list[ActionScore] = []
    for n, (row, prov) in enumerate(zip(rows, provs, strict=True), 1):
        out += score_trajectory(row, prov, prior)
        if progress is not None and (n % 50 == 0 or n == len(rows)):
            progress(n, len(rows))
    return out


def run_copy(rows: Sequence[ParsedRow], provs: Sequence[TrajectoryProvenance], spec: object,
             target_train_flops: float | None, progress: Callable[[str, int, int], None] | None = None):
    """The ``copy`` probe behind :mod:`probes.kinds`: every action scored, nothing trained, 0 FLOPs counted.

    The character operations (a few thousand per argument) are not FLOPs of a model and are left out;
    the wall time is a second or two per thousand trajectories on one core.
    """
    from probes.kinds import ProbeRun

    cb = (lambda done, total: progress("score", done, total)) if progress is not None else None
    return ProbeRun(scores=copy_scores(rows, provs, progress=cb))
