"""Do the golden episodes fit GRPO's budgets? (``toolscale validate`` refuses a config where they do not.)

A multi-turn episode (:mod:`train.rollout`) has two budgets:

* the **policy budget** ``max_completion_length``: tokens the policy writes (its calls and its answer); the
  observations do not count;
* the **context** ``max_seq_len`` of the rung: the prompt (system turn with the tool schemas, user query), every
  turn and every observation.

A golden episode is what a perfect policy writes (:func:`golden_texts`): one ``<tool_call>`` turn per golden
call and the main answer. With a real tokenizer the counts are exact (``count``). Before any tokenizer exists
(``validate``) they are estimates from UTF-8 bytes at :data:`BYTES_PER_TOKEN` bytes per token, below the least
measured for the project's tokenizers on environment text, so the estimate errs on the long side. The exact
count needs the run's tokenizer; :class:`train.rollout.MultiTurnRollout` leaves out (and counts) environments
whose prompt does not fit the model's context.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from train.rollout import golden_texts

__all__ = ["golden_texts", "budget_report", "BYTES_PER_TOKEN"]

BYTES_PER_TOKEN = 2.0
"""Bytes per token of the estimate. The least measured (``benchmarks/rl_budget.py``, 24 curriculum environments,
byte-level BPE tokenizers trained on 128 synthesised SFT tasks over every training tool): golden policy text
2.83 at vocabulary 512 and 3.19 at 1024; whole golden episodes 2.41 and 3.05."""


def budget_report(samples: Sequence[Any], *, max_completion_length: int, max_context: int,
                  count: Callable[[str], int] | None = None) -> dict[str, Any]:
    """How many golden episodes exceed each budget.

    Parameters
    ----------
    samples : environments (``EnvSample``)
    max_completion_length : the policy budget, tokens
    max_context : the rung's ``max_seq_len``, tokens
    count : tokens of a text (a tokenizer's); None estimates them from bytes (module docstring)

    Returns
    -------
    dict
        ``n``, ``over_policy`` and ``over_context`` (counts), ``max_policy`` and ``max_context`` (the largest
        golden episode, tokens), ``exact`` (whether ``count`` was given).
    """
    policy_n, context_n = [], []
    for s in samples:
        policy, context = golden_texts(s)
        if count is not None:
            policy_n.append(count(policy))
            context_n.append(count(context))
        else:
            policy_n.append(math.ceil(len(policy.encode("utf-8")) / BYTES_PER_TOKEN))
            context_n.append(math.ceil(len(context.encode("utf-8")) / BYTES_PER_TOKEN))
    return {"n": len(samples), "over_policy": sum(n > max_completion_length for n in policy_n),
            "over_context": sum(n > max_context for n in context_n), "max_policy": max(policy_n, default=0),
            "max_context": max(context_n, default=0), "exact": count is not None}
