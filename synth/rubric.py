"""The LLM rubric judge: one prompt per dimension, seven parsed 1-5 scores, fail-closed.

Each of the seven dimensions (:data:`synth.models.JUDGE_DIMENSIONS`, ASTRA seed 000 Q3) has its own
rubric (:data:`RUBRICS`) sent with the conversation's transcript. A reply's score ``s`` in 1..5 maps to
``(s - 1) / 4`` in [0, 1]; the trajectory's mean over the seven is compared with the threshold by
:func:`synth.judge.judge_trajectory`.

Parsing (:func:`synth.chat_client.parse_score`): the strict form ``{"score": N}``; a lenient *fallback*
(``score: N``, or one lone digit) is accepted and counted. A reply with no score, or a failed
request, raises :class:`~synth.errors.JudgeError`, and the sample is rejected (never passed).
:meth:`RubricJudge.stats` reports the fallback rate (per dimension reply) and the failure rate (per
trajectory).
"""

from __future__ import annotations

import threading
from typing import Any

from synth.chat_client import ChatClient, parse_score, transcript
from synth.errors import JudgeError
from synth.models import JUDGE_DIMENSIONS

__all__ = ["RUBRICS", "RubricJudge"]

RUBRICS: dict[str, str] = {
    "query_understanding": "Did the assistant understand the user's request: the values it passed in its "
                           "first tool calls are the ones the user gave? 1 = misread, 5 = exactly right.",
    "query_planning": "Did the assistant plan the right tools for the request, and do the tools it said it "
                      "would use match those it called? 1 = wrong plan, 5 = right plan, followed.",
    "tool_call_understanding": "Did the assistant read each tool result correctly: use what succeeded, retry "
                               "or admit what failed? 1 = ignored or misread results, 5 = handled every one.",
    "tool_call_planning": "Is every argument of every call supported by the request or an earlier result "
                          "(no invented ids or values)? 1 = invented, 5 = all supported.",
    "tool_call_success": "How many tool calls succeeded? 1 = none, 3 = about half, 5 = all.",
    "conciseness": "Did the assistant avoid needless or repeated calls and text? 1 = very redundant, "
                   "5 = nothing superfluous.",
    "final_answer": "Is the final answer faithful to the tool results, complete, and honest about what "
                    "failed? 1 = no answer or unfaithful, 5 = faithful, complete and honest.",
}
"""One rubric per judge dimension, each scored 1-5."""

_SYSTEM = "You grade one dimension of a tool-use conversation. Be strict and consistent."


class RubricJudge:
    """Seven rubric prompts to a chat model (see the module docstring)."""

    name = "llm"

    def __init__(self, client: ChatClient, role: str = "judge"):
        self.client = client
        self.role = role
        self.replies = 0
        """Dimension replies parsed."""
        self.fallbacks = 0
        """Dimension replies parsed by the lenient fallback."""
        self.trajectories = 0
        """Trajectories scored (or attempted)."""
        self.failures = 0
        """Trajectories whose scoring failed (each one rejected)."""
        self._lock = threading.Lock()

    def score(self, messages: list[dict]) -> dict[str, float]:
        text = transcript(messages)
        prompts = [[{"role": "system", "content": _SYSTEM},
                    {"role": "user", "content": f"Conversation:\n{text}\n\nDimension: {dim}\n{RUBRICS[dim]}\n"
                                                'Reply with JSON only: {"score": N} where N is 1, 2, 3, 4 or 5.'}]
                   for dim in JUDGE_DIMENSIONS]
        try:
            replies = self._ask(prompts)
        except Exception:
            self._count(failures=1)
            raise
        scores: dict[str, float] = {}
        fallbacks = 0
        for dim, reply in zip(JUDGE_DIMENSIONS, replies):
            try:
                s, fallback = parse_score(reply.content or "")
            except ValueError as err:
                self._count(failures=1, replies=len(scores), fallbacks=fallbacks)
                raise JudgeError(f"judge reply for {dim} has no score: {err}") from None
            fallbacks += fallback
            scores[dim] = (s - 1) / 4
        self._count(replies=len(scores), fallbacks=fallbacks)
        return scores

    def _count(self, failures: int = 0, replies: int = 0, fallbacks: int = 0) -> None:
        """Add one scored trajectory's counts (several servers' threads may share the judge)."""
        with self._lock:
            self.trajectories += 1
            self.failures += failures
            self.replies += replies
            self.fallbacks += fallbacks

    def _ask(self, prompts: list[list[dict]]) -> list[Any]:
        """The replies to the seven prompts: all at once when the client has ``chat_many`` (the shared
        :class:`~synth.llm.client.LLMClient`: up to the role's ``concurrency`` in flight), else one by one.
        The first unusable reply raises."""
        many = getattr(self.client, "chat_many", None)
        if many is None:
            return [self.client.chat(self.role, p) for p in prompts]
        replies = many(self.role, [{"messages": p} for p in prompts])
        for r in replies:
            if isinstance(r, BaseException):
                raise r
        return replies

    def stats(self) -> dict[str, Any]:
        """``fallback_rate`` (per dimension reply) and ``failure_rate`` (per trajectory)."""
        return {"fallback_rate": self.fallbacks / self.replies if self.replies else 0.0,
                "failure_rate": self.failures / self.trajectories if self.trajectories else 0.0}
