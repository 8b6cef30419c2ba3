"""The F1 trajectory reward of the ASTRA RL branch, and how a tool call "hits" a target.

Notes
-----
For a rollout with ``n`` target sub-tasks of which ``n_hat`` were hit, using ``c`` tool calls in total:

.. math::

    R = \\frac{\\hat n}{n}, \\qquad P = \\frac{\\hat n}{c}, \\qquad F_1 = \\frac{2 P R}{P + R}
      = \\frac{2 \\hat n}{n + c}

Precision here is call efficiency (target sub-tasks solved per tool call), not classification precision:
recall alone rewards calling everything, precision alone rewards stopping early; F1 keeps both (seed 000, Q4).
Worked values: all 4 targets in 4 calls gives 1.0, all 4 in 6 calls 0.8, 3 of 4 in 4 calls 0.75.

A call hits a target when it is the target's golden call (same tool, canonically equal arguments) and its
observation contains the target answer as a value (:func:`answer_in_output`); each target is hit at most once
and each call hits at most one target, so repeating a successful call only adds to ``c``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

from toolscale.errors import UsageError

__all__ = ["f1_reward", "canonical_answer", "answer_in_output", "match_targets", "partial_credit"]


def f1_reward(hit: int, targets: int, calls: int) -> float:
    """F1 of sub-task coverage and call efficiency.

    Parameters
    ----------
    hit : int
        Targets hit by the rollout (``n_hat``), ``0 <= hit <= min(targets, calls)``.
    targets : int
        Target sub-tasks of the sample (``n``), >= 0.
    calls : int
        Tool calls the rollout made (``c``), >= 0.

    Returns
    -------
    float
        ``2 * hit / (targets + calls)`` in [0, 1]. With no targets the reward is 1.0 when no tool was called
        (abstaining was right) and 0.0 otherwise.

    Examples
    --------
    >>> f1_reward(4, 4, 4), f1_reward(4, 4, 6), f1_reward(3, 4, 4)
    (1.0, 0.8, 0.75)
    """
    for name, value in (("hit", hit), ("targets", targets), ("calls", calls)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise UsageError(f"f1_reward: {name} must be a non-negative integer, got {value!r}")
    if hit > min(targets, calls):
        raise UsageError(f"f1_reward: hit must be <= min(targets, calls) = {min(targets, calls)}, got {hit}")
    if targets == 0:
        return 1.0 if calls == 0 else 0.0
    if calls == 0:
        return 0.0
    return 2.0 * hit / (targets + calls)


def canonical_answer(value: Any) -> str:
    """The canonical string of an answer value: integral floats without ``.0``, JSON for containers.

    >>> canonical_answer(600.0), canonical_answer("  RES987654 "), canonical_answer(True)
    ('600', 'RES987654', 'true')
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isfinite(value) and value == int(value) and abs(value) < 1e15:
            return str(int(value))
        return repr(round(value, 6))
    if value is None:
        return "null"
    if isinstance(value, str):
        return value.strip()
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _leaves(value: Any) -> Iterable[Any]:
    if isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v)
    else:
        yield value


def answer_in_output(answer: str, output: str) -> bool:
    """True when ``output`` (an observation) contains ``answer`` as a value.

    The output is parsed as JSON when it is JSON: the answer must equal the canonical string of one leaf value,
    or occur inside a string leaf on word boundaries. Plain-text output: the answer must occur on word
    boundaries. Matching is case-sensitive; an empty answer never matches.

    >>> answer_in_output("600", '{"fee": 600.0, "currency": "INR"}'), answer_in_output("60", '{"fee": 600}')
    (True, False)
    """
    answer = answer.strip()
    if not answer:
        return False
    try:
        parsed = json.loads(output)
    except (json.JSONDecodeError, TypeError, ValueError):
        return _in_text(answer, str(output))
    if not isinstance(parsed, dict | list):
        parsed = [parsed]
    for leaf in _leaves(parsed):
        if canonical_answer(leaf) == answer:
            return True
        if isinstance(leaf, str) and _in_text(answer, leaf):
            return True
    return False


def _in_text(answer: str, text: str) -> bool:
    pattern = r"(?<![\w.])" + re.escape(answer) + r"(?![\w])"
    return re.search(pattern, text) is not None


def match_targets(targets: Sequence[Any], calls: Sequence[tuple]) -> list[int | None]:
    """Assign calls to targets; returns, per call, the index of the target it hit (or None).

    Parameters
    ----------
    targets : sequence of objects with ``tool``, ``arguments`` and ``answer`` attributes
        (:class:`synth.envs.models.Target`)
    calls : sequence of ``(tool_name, observation, arguments)`` in call order; a 2-tuple
        ``(tool_name, observation)`` skips the argument comparison

    A call hits a not-yet-hit target when it names the target's tool, its arguments equal the golden arguments
    (compared canonically: ``600`` equals ``600.0``, strings case-insensitively after stripping) and its
    observation contains the target answer. Each target is hit at most once and each call hits at most one
    target, so repeating a call never earns a second hit.
    """
    hit_by: list[int | None] = []
    taken: set[int] = set()
    for call in calls:
        name, output = call[0], call[1]
        args = call[2] if len(call) > 2 else None
        pick = None
        for i, t in enumerate(targets):
            if i in taken or t.tool != name:
                continue
            if args is not None and not _same_args(t.arguments, args):
                continue
            if answer_in_output(t.answer, output):
                pick = i
                break
        if pick is not None:
            taken.add(pick)
        hit_by.append(pick)
    return hit_by


def _same_args(a: Any, b: Any) -> bool:
    if not isinstance(a, dict) or not isinstance(b, dict) or set(a) != set(b):
        return False
    return all(canonical_answer(a[k]).casefold() == canonical_answer(b[k]).casefold() for k in a)


def partial_credit(calls: Sequence[Any], offered: Sequence[str], prompt: str, targets: Sequence[Any]) -> float:
    """Partial credit of an episode's calls, in [0, 1]: the best call's share of four checks.

    Parameters
    ----------
    calls : sequence of ``{"name", "arguments"}``
        What the policy emitted, unparsable attempts included (``synth.envs.rl_reward.extract_tool_calls`` names
        them ``""``).
    offered : tool names the environment offered
    prompt : the user query
    targets : the sample's targets (``tool``, ``arguments``)

    The four checks of one call: it **parses** (a name and a JSON-object arguments); its name is **offered**;
    its argument keys are **the right keys** (those of a target of the same tool); and an argument value is
    **copied from the prompt** (a value of 3 or more characters that occurs in the query). 0 without calls.
    This is a shaping signal, logged apart from the F1 reward the law fits; F1 alone is the default objective.

    >>> class T: tool, arguments = "get_order", {"order_id": "OR-1"}
    >>> partial_credit([{"name": "get_order", "arguments": {"order_id": "OR-1"}}], ["get_order"], "order OR-1", [T])
    1.0
    >>> partial_credit([{"name": "", "arguments": "{oops"}], ["get_order"], "order OR-1", [T])
    0.0
    >>> partial_credit([{"name": {"get_order": 1}, "arguments": {}}], ["get_order"], "order OR-1", [T])
    0.0
    """
    keys = {(t.tool, frozenset(t.arguments)) for t in targets}
    best = 0.0
    for call in calls:
        name, args = call.get("name") or "", call.get("arguments")
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except json.JSONDecodeError:
                args = None
        parsed = isinstance(name, str) and bool(name) and isinstance(args, dict)  # a policy may write any JSON
        if not parsed:
            continue
        score = 1 + (name in offered) + ((name, frozenset(args)) in keys)
        values = [canonical_answer(v) for v in args.values() if not isinstance(v, dict | list)]
        score += any(len(v) >= 3 and v.casefold() in prompt.casefold() for v in values)
        best = max(best, score / 4)
    return best
