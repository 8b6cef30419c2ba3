"""Every run of a report beside its baselines: where its bits go, what it saw, which checkpoint it is.

:func:`diagnostics_lines` renders one Markdown row per done run of an experiment for one benchmark, from
the rows the pipeline stored for the run's chosen checkpoint (:mod:`eval.diagnostics`): the fitted target
(the early-stopped envelope, or the final value), the final model's value, the uniform and unigram
baselines (a run above them predicts worse than ignoring its input), the share of the benchmark's items
on tools the run trained on, bits per byte on those and on the others, and by span type (tool names,
argument values copied from the prompt, JSON structure). Pure: registry rows in, Markdown lines out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any
from grid.models import RunRecord

__all__ = ["diagnostics_lines", "DIAGNOSTIC_METRICS"]

DIAGNOSTIC_METRICS = ("bpb_uniform", "bpb_unigram", "seen_share", "bpb_seen", "bpb_unseen", "bpb_tool",
                      "bpb_arg_copied", "bpb_arg_other", "bpb_json")
"""The per-run diagnostics shown, as :mod:`eval.diagnostics` names them."""


def _f(x: Any, fmt: str = ".3f") -> str:
    return "" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, fmt)


def _diag(run: Any, benchmark: str) -> tuple[int | None, dict[str, float]]:
    """``(chosen step, {metric: value})`` of the run's diagnostic rows on ``benchmark``."""
    ckpt = (run.metadata or {}).get("checkpoints") or {}
    step = ckpt.get("chosen_step")
    values = (run.checkpoints or {}).get(step, {}) if step is not None else {}
    return step, {m: values[f"{benchmark}/{m}"] for m in DIAGNOSTIC_METRICS if f"{benchmark}/{m}" in values}


def diagnostics_lines(runs: Sequence[RunRecord], benchmark: str, metric: str, target: Mapping[str, float] | None = None
                      ) -> list[str]:
    """Markdown lines: a count of runs worse than each baseline and a table of every done run (see the module
    docstring). ``target`` maps run ids to the fitted value (e.g. the envelope); default the stored metric.
    Empty when no run has diagnostics."""
    rows, worse_u, worse_g, n = [], 0, 0, 0
    for r in sorted(runs, key=lambda r: (r.split, float(r.model_params or 0), r.run_id)):
        step, d = _diag(r, benchmark)
        if not d:
            continue
        fitted = (target or {}).get(r.run_id, r.metrics.get(f"{benchmark}/{metric}"))
        final = r.metrics.get(f"{benchmark}/{metric}")
        n += 1
        if fitted is not None and d.get("bpb_uniform") is not None and fitted > d["bpb_uniform"]:
            worse_u += 1
        if fitted is not None and d.get("bpb_unigram") is not None and fitted > d["bpb_unigram"]:
            worse_g += 1
        last = ((r.metadata or {}).get("checkpoints") or {}).get("last_step")
        recipe = " / ".join(f"{v:g}" for _, v in sorted(r.recipe.items()))
        rows.append(f"| {r.run_id[:10]} | {r.split} | {r.model_size} | {r.seed} | {recipe} | {step}/{last} | "
                    f"{_f(fitted)} | {_f(final)} | {_f(d.get('bpb_uniform'))} | {_f(d.get('bpb_unigram'))} | "
                    f"{_f(d.get('seen_share'), '.0%')} | {_f(d.get('bpb_seen'))} | {_f(d.get('bpb_unseen'))} | "
                    f"{_f(d.get('bpb_tool'))} | {_f(d.get('bpb_arg_copied'))} | {_f(d.get('bpb_arg_other'))} | "
                    f"{_f(d.get('bpb_json'))} |")
    if not rows:
        return []
    axes = " / ".join(sorted(runs[0].recipe)) if runs else ""
    return [f"{n} runs with diagnostics at their chosen checkpoint on {benchmark}: {worse_u} above the uniform "
            f"baseline (worse than ignoring the input), {worse_g} above the unigram baseline of their own training "
            "tokens.", "",
            f"| run | split | size | seed | {axes} | step / last | {metric} (fitted) | {metric} (final) | uniform | "
            "unigram | seen items | seen | unseen | tool names | copied args | other args | JSON |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|", *rows]
