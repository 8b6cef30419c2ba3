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
    0 without a final answer; else ``0.5 * faithful + 0.5 * complete``, where *faithful* is the share of
    ids and numbers in the answer that occur in the query or a tool result and *complete* the share of
    successful results the answer reports, times 0 when a call was abandoned and the answer does not
    say so.

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
from synth.provenance import provenance, value_in

__all__ = ["Judge", "RuleJudge", "LLMJudge", "judge_trajectory"]

_TOKEN = re.compile(r"\b[A-Za-z]+[-_/]?\d{3,}\b|(?<![\w.])-?\d+\.\d+(?![\w])")
_ADMIT = ("could not", "couldn't", "unable", "failed")


class Judge(Protocol):
    """Scores a conversation: ``score(messages) -> {dimension: score}``."""

    def score(self, messages: list[dict]) -> dict[str, float]:
        ...


class RuleJudge:
    """The default, rule-based judge (see the module docstring for each dimension)."""

    name = "rules"

    def score(self, messages: list[dict]) -> dict[str, float]:
        prov = provenance(messages)
        query = "\n".join(m["content"] for m in messages if m["role"] == "user")
        assistants = [m for m in messages if m["role"] == "assistant"]
        tool_msgs = [m for m in messages if m["role"] == "tool"]
        calls = [c for m in assistants for c in (m.get("tool_calls") or [])]
        final = assistants[-1] if assistants and not assistants[-1].get("tool_calls") else None
        ok = {m["tool_call_id"]: not m["content"].startswith('{"error"') for m in tool_msgs}
        n_calls = len(calls)

        first = next((m for m in assistants if m.get("tool_calls")), None)
        if first is None:
            qu = qp = 0.0
        else:
            vals = [v for c in first["tool_calls"] for v in _args(c).values()]
            qu = sum(value_in(v, query) for v in vals) / len(vals) if vals else 1.0
            called = {c["function"]["name"] for c in calls}
            announced = {n for n in called if n in first["content"]} | _names_in(first["content"], called)
            qp = len(announced & called) / len(announced | called) if called else 0.0

        handled = []
        for i, m in enumerate(messages):
            if m["role"] != "tool":
                continue
            nxt = next((x for x in messages[i + 1:] if x["role"] == "assistant"), None)
            if ok.get(m["tool_call_id"], False):
                handled.append(1.0 if nxt is not None else 0.0)
            else:
                retried = nxt is not None and any(c["function"]["name"] == m["name"] for c in nxt.get("tool_calls") or [])
                later_ok = any(x["role"] == "tool" and x["name"] == m["name"] and ok.get(x["tool_call_id"])
                               for x in messages[i + 1:])
                admitted = final is not None and any(a in final["content"].lower() for a in _ADMIT)
                handled.append(1.0 if retried or later_ok or admitted else 0.0)
        tcu = sum(handled) / len(handled) if handled else 1.0

        planned = [p for p in prov if not p.retry]
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

        if final is None or not final["content"].strip():
            fa = 0.0
        else:
            text = final["content"]
            evidence = query + "\n" + "\n".join(m["content"] for m in tool_msgs)
            toks = _TOKEN.findall(text)
            faithful = sum(t in evidence for t in toks) / len(toks) if toks else 1.0
            good = [m for m in tool_msgs if ok.get(m["tool_call_id"])]
            complete = sum(m["name"] in text for m in good) / len(good) if good else 1.0
            failed_tools = {m["name"] for m in tool_msgs if not ok.get(m["tool_call_id"])} - {m["name"] for m in good}
            honest = 0.0 if failed_tools and not any(a in text.lower() for a in _ADMIT) else 1.0
            fa = (0.5 * faithful + 0.5 * complete) * honest
        return {"query_understanding": qu, "query_planning": qp, "tool_call_understanding": tcu,
                "tool_call_planning": tcp, "tool_call_success": tcs, "conciseness": conc, "final_answer": fa}


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
    seven dimensions and their mean reaches ``threshold``. Anything else (an exception, no answer within
    ``timeout_s`` seconds, a missing or invalid score) gives ``accepted=False`` with ``judge_failed=True``
    and the reason. The one exception that propagates is :class:`~synth.errors.LLMEndpointError` (the
    endpoint is down or refuses every try): then no sample can be judged and the run fails, naming the URL.
    """
    try:
        raw = judge.score(messages) if timeout_s is None else _score_with_timeout(judge, messages, timeout_s)
    except LLMEndpointError:
        raise  # the endpoint cannot serve at all: the run fails cleanly, naming the URL
    except Exception as err:  # noqa: BLE001 - any judge failure must reject, never pass
        return JudgeVerdict(accepted=False, scores={}, mean=None, reason=f"judge_error:{type(err).__name__}",
                            judge_failed=True)
    if not isinstance(raw, dict):
        return JudgeVerdict(accepted=False, scores={}, mean=None, reason="judge_error:not_a_mapping",
                            judge_failed=True)
    scores: dict[str, float] = {}
    for dim in JUDGE_DIMENSIONS:
        v = raw.get(dim)
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or not 0 <= v <= 1:
            return JudgeVerdict(accepted=False, scores={}, mean=None,
                                reason=f"judge_error:missing_or_invalid:{dim}", judge_failed=True)
        scores[dim] = float(v)
    mean = sum(scores.values()) / len(scores)
    accepted = mean >= threshold
    return JudgeVerdict(accepted=accepted, scores=scores, mean=mean, reason=None if accepted else "below_threshold")
