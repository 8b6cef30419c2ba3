"""The seven-dimension trajectory judge, fail-closed.

The dimensions follow ASTRA (seed 000, Q3), each a score in [0, 1], averaged with equal weights:

``query_understanding``
    share of the first turn's argument values that the user query states;
``query_planning``
    Jaccard overlap of the tools the first assistant message announces and the tools actually called;
``tool_call_understanding``
    share of tool results the next assistant step handles correctly (an error is followed by a retry of
    that tool or an answer that admits the failure);
``tool_call_planning``
    share of non-retry calls whose every argument is supported by visible history
    (:func:`synth.provenance.provenance`);
``tool_call_success``
    successful calls / all calls, a failed call counting 0 (the paper's Eq. 8, not the public code's 0.5);
``conciseness``
    1 - (calls repeating an earlier successful call with the same arguments) / all calls;
``final_answer``
    0 without a final answer, or when it leaves out a requested field (:func:`synth.rules.requested_fields`)
    or breaks the request's language or failure-report constraint; else ``faithful * (0.5 + 0.5 * complete)``,
    where *faithful* is the share of ids and numbers in the answer that occur in the query or a tool
    result and *complete* the share of requested fields stated (1 with none), times 0 when a call was
    abandoned and the answer does not say so.

``query_understanding`` is ``1 - (arguments naming another entity than the request's) / arguments``
(:func:`synth.rules.wrong_entity_args`), and ``conciseness`` is 0 when a requested short answer is long.

**Gating.** A trajectory is kept when it breaks none of the hard rules of :mod:`synth.rules` (in both
modes: the rules read the messages, whichever judge scored them) and the mean of the
:data:`GATED_DIMENSIONS` reaches the threshold. ``tool_call_planning`` -- the share of calls whose
arguments are all derivable -- is scored and reported but never gates: non-derivable actions are the
quality axis the design manipulates (``defect_rate``, ``repair_rate``), measured by probes/, not
filtered here. ``JudgeVerdict.mean`` stays the seven-dimension mean (ASTRA's score).

:func:`judge_trajectory` wraps any judge: an exception, a timeout, a missing dimension or a non-finite
score rejects the sample (``judge_error:...``); the public ASTRA code scores such samples 1.0, this
never does. The optional :class:`LLMJudge` asks the shared LLM client's ``judge`` role
(:mod:`synth.llm.client`) for the same seven scores and goes through the same wrapper.
"""

from __future__ import annotations

import json
import math
import re
import threading
from typing import Any, Protocol

from synth.errors import LLMEndpointError
from synth.models import JUDGE_DIMENSIONS, JudgeVerdict
from synth.provenance import provenance
from synth.rules import (ADMIT, SHORT_WORDS, constraint_broken, constraints, is_error, requested_fields, rule_failures,
                         wrong_entity_args)

__all__ = ["GATED_DIMENSIONS", "Judge", "RuleJudge", "LLMJudge", "judge_trajectory"]

GATED_DIMENSIONS: tuple[str, ...] = tuple(d for d in JUDGE_DIMENSIONS if d != "tool_call_planning")
"""The dimensions whose mean gates a trajectory (all but the derivability axis; see the module docstring)."""

_TOKEN = re.compile(r"\b[A-Za-z]+[-_/]?\d{3,}\b|(?<![\w.])-?\d+\.\d+(?![\w])")
_ADMIT = ADMIT


class Judge(Protocol):
    """Scores a conversation: ``score(messages) -> {dimension: score}``."""

    def score(self, messages: list[dict]) -> dict[str, float]:
        ...


class RuleJudge:
    """The default, rule-based judge (see the module docstring for each dimension)."""

    name = "rules"

    def score(self, messages: list[dict]) -> dict[str, float]:
        query = "\n".join(m["content"] for m in messages if m["role"] == "user")
        assistants = [m for m in messages if m["role"] == "assistant"]
        tool_msgs = [m for m in messages if m["role"] == "tool"]
        calls = [c for m in assistants for c in (m.get("tool_calls") or [])]
        final = assistants[-1] if assistants and not assistants[-1].get("tool_calls") else None
        ok = {m["tool_call_id"]: not is_error(m["content"]) for m in tool_msgs}
        n_calls = len(calls)
        n_args = sum(len(_args(c)) for c in calls)
        wrong = wrong_entity_args(messages)
        qu = (1.0 - len(wrong) / n_args if n_args else 1.0) if calls else 0.0
        qp = _planning(assistants, calls)
        tcu = _understanding(messages, ok, final)
        planned = [p for p in provenance(messages) if not p.retry]
        tcp = sum(p.derivable for p in planned) / len(planned) if planned else 1.0
        tcs = sum(ok.get(c["id"], False) for c in calls) / n_calls if n_calls else 0.0
        seen_ok: set[tuple] = set()
        dup = 0
        for c in calls:
            key = (c["function"]["name"], c["function"]["arguments"])
            if key in seen_ok:
                dup += 1
            if ok.get(c["id"], False):
                seen_ok.add(key)
        conc = 1.0 - dup / n_calls if n_calls else 0.0
        text = final["content"] if final is not None else ""
        if text.strip() and constraints(query).short and len(text.split()) > SHORT_WORDS:
            conc = 0.0
        return {"query_understanding": qu, "query_planning": qp, "tool_call_understanding": tcu,
                "tool_call_planning": tcp, "tool_call_success": tcs, "conciseness": conc,
                "final_answer": _final_answer(query, text, tool_msgs, ok)}


def _planning(assistants: list[dict], calls: list[dict]) -> float:
    """Jaccard overlap of the tools the first calling turn announces and the tools called."""
    first = next((m for m in assistants if m.get("tool_calls")), None)
    if first is None:
        return 0.0
    called = {c["function"]["name"] for c in calls}
    announced = {n for n in called if n in first["content"]} | _names_in(first["content"], called)
    if not announced:
        return 1.0  # a turn that states no plan announces nothing wrong
    return len(announced & called) / len(announced | called) if called else 0.0


def _understanding(messages: list[dict], ok: dict[str, bool], final: dict | None) -> float:
    """Share of tool results the next step handles (used, retried, or admitted in the answer)."""
    handled = []
    for i, m in enumerate(messages):
        if m["role"] != "tool":
            continue
        nxt = next((x for x in messages[i + 1:] if x["role"] == "assistant"), None)
        if ok.get(m["tool_call_id"], False):
            handled.append(1.0 if nxt is not None else 0.0)
            continue
        retried = nxt is not None and any(c["function"]["name"] == m["name"] for c in nxt.get("tool_calls") or [])
        later_ok = any(x["role"] == "tool" and x["name"] == m["name"] and ok.get(x["tool_call_id"])
                       for x in messages[i + 1:])
        admitted = final is not None and any(a in final["content"].lower() for a in _ADMIT)
        handled.append(1.0 if retried or later_ok or admitted else 0.0)
    return sum(handled) / len(handled) if handled else 1.0


def _final_answer(query: str, text: str, tool_msgs: list[dict], ok: dict[str, bool]) -> float:
    """The final-answer score (see the module docstring)."""
    if not text.strip():
        return 0.0
    good = [m for m in tool_msgs if ok.get(m["tool_call_id"])]
    outputs = []
    for m in good:
        try:
            outputs.append(json.loads(m["content"]))
        except ValueError:
            continue
    want = requested_fields(query, outputs)
    stated = sum(any(v in text for v in vals) for vals in want.values())
    if stated < len(want) or constraint_broken(query, text, tool_msgs):
        return 0.0
    evidence = query + "\n" + "\n".join(m["content"] for m in tool_msgs)
    toks = _TOKEN.findall(text)
    faithful = sum(t in evidence for t in toks) / len(toks) if toks else 1.0
    complete = 1.0
    failed_tools = {m["name"] for m in tool_msgs if not ok.get(m["tool_call_id"])} - {m["name"] for m in good}
    honest = 0.0 if failed_tools and not any(a in text.lower() for a in _ADMIT) else 1.0
    return faithful * (0.5 + 0.5 * complete) * honest


def _args(call: dict) -> dict:
    try:
        a = json.loads(call["function"]["arguments"])
    except (ValueError, TypeError):
        return {}
    return a if isinstance(a, dict) else {}


def _names_in(text: str, names: set[str]) -> set[str]:
    """Tool-like words (with an underscore) in ``text`` that are not among ``names``."""
    return {w for w in re.findall(r"[A-Za-z][A-Za-z0-9_]{2,}", text) if "_" in w} - names


class LLMJudge:
    """The seven scores from an LLM, through the shared client's ``judge`` role (:mod:`synth.llm.client`).

    The reply must contain a JSON object with the seven dimension names; anything else raises, and
    :func:`judge_trajectory` rejects the sample. An endpoint that fails raises too (fail closed).

    Parameters
    ----------
    client : LLMClient or str
        A client with the ``judge`` role configured; a URL string (the legacy ``[synth].llm_url``)
        builds one with model ``judge`` and no key.
    """

    name = "llm"

    def __init__(self, client: Any, model: str = "judge", timeout_s: float = 30.0):
        if isinstance(client, str):
            from synth.llm.client import LLMClient
            from toolscale.config import LLMRoleSpec

            client = LLMClient({"judge": LLMRoleSpec(base_url=client, model=model, timeout_s=timeout_s,
                                                     max_tries=1)})
        self.client = client

    def prompt(self, messages: list[dict]) -> list[dict]:
        """The judge's chat messages for one conversation."""
        return [{"role": "user", "content": "Score this tool-use conversation from 0 to 1 on each of: "
                 + ", ".join(JUDGE_DIMENSIONS) + ". Reply with one JSON object mapping each name to its score.\n\n"
                 + json.dumps(messages, ensure_ascii=False)}]

    def score(self, messages: list[dict]) -> dict[str, float]:
        text = self.client.chat("judge", self.prompt(messages)).content
        start, end = text.find("{"), text.rfind("}")
        return json.loads(text[start:end + 1])


def _score_with_timeout(judge: Any, messages: list[dict], timeout_s: float) -> Any:
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = judge.score(messages)
        except BaseException as err:  # noqa: BLE001 - handed to the caller
            box["error"] = err

    t = threading.Thread(target=run, name="judge", daemon=True)
    t.start()
    t.join(timeout_s)
    if t.is_alive():
        raise TimeoutError(f"judge did not answer within {timeout_s:g} s")
    if "error" in box:
        raise box["error"]
    return box.get("value")


def judge_trajectory(judge: Any, messages: list[dict], threshold: float,
                     timeout_s: float | None = None) -> JudgeVerdict:
    """Judge one conversation, fail-closed.

    Returns an accepted verdict only when the judge returned a finite score in [0, 1] for each of the
    seven dimensions, the conversation breaks none of the hard rules (:func:`synth.rules.rule_failures`,
    reason ``rule:NAME``) and the mean of :data:`GATED_DIMENSIONS` reaches ``threshold``. Anything else (an
    exception, no answer within ``timeout_s`` seconds, a missing or invalid score) gives ``accepted=False``
    with ``judge_failed=True``, the reason and the error in ``detail``. The one exception that propagates
    is :class:`~synth.errors.LLMEndpointError` (the endpoint is down or refuses every try): then no sample
    can be judged and the run fails, naming the URL.
    """
    try:
        raw = judge.score(messages) if timeout_s is None else _score_with_timeout(judge, messages, timeout_s)
    except LLMEndpointError:
        raise  # the endpoint cannot serve at all: the run fails cleanly, naming the URL
    except Exception as err:  # noqa: BLE001 - any judge failure must reject, never pass
        return JudgeVerdict(accepted=False, scores={}, mean=None, reason=f"judge_error:{type(err).__name__}",
                            judge_failed=True, detail=str(err)[:300] or type(err).__name__)
    if not isinstance(raw, dict):
        return JudgeVerdict(accepted=False, scores={}, mean=None, reason="judge_error:not_a_mapping",
                            judge_failed=True, detail=f"the judge returned {type(raw).__name__}")
    scores: dict[str, float] = {}
    for dim in JUDGE_DIMENSIONS:
        v = raw.get(dim)
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or not 0 <= v <= 1:
            return JudgeVerdict(accepted=False, scores={}, mean=None,
                                reason=f"judge_error:missing_or_invalid:{dim}", judge_failed=True,
                                detail=f"{dim} = {v!r}")
        scores[dim] = float(v)
    mean = sum(scores.values()) / len(scores)
    gate_mean = sum(scores[d] for d in GATED_DIMENSIONS) / len(GATED_DIMENSIONS)
    failed = rule_failures(messages)
    if failed:
        return JudgeVerdict(accepted=False, scores=scores, mean=mean, gate_mean=gate_mean,
                            reason=f"rule:{failed[0]}", failed_rules=failed)
    accepted = gate_mean >= threshold
    return JudgeVerdict(accepted=accepted, scores=scores, mean=mean, gate_mean=gate_mean,
                        reason=None if accepted else "below_threshold")
