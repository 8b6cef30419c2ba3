"""The LLM task writer: user queries from the tool docs and the planned chain, augmented, then gated.

ASTRA's task synthesis (seed 000, Q3), on any :class:`~synth.chat_client.ChatClient`:

1. **Write.** The model gets the documents of the plan's tools, the planned calls with the values the
   user states (a memorised-constant defect keeps its value out) and the template draft, and writes the
   request. A chain-conditioned task asks for the whole sequence; a server-only task (one entry tool)
   asks for what that one tool does.
2. **Augment.** With probability :data:`AUGMENT_SHARE` one of the three augmentations, chosen by the
   task's random stream: ``diverse`` (reword with different phrasing and structure), ``complicate``
   (add a realistic constraint or condition), ``persona`` (write as a named kind of user).
3. **Gate.** The rule gate (:func:`synth.roles.rule_gate`), every stated value present verbatim
   (``missing_value``), then three rubric prompts scored 1-5: ``question_quality``, ``scenario_realism``
   and ``tool_use_necessity``; a score below ``threshold`` rejects the task under that gate's name, an
   unparseable score under ``gate_error:GATE`` (fail-closed).

A reply the client cannot use rejects the task under the client's reason; an endpoint that is down
fails the run.
"""

from __future__ import annotations

import json
import random
import threading
from collections import Counter
from typing import Any

from synth.chat_client import ChatClient, parse_score, sample_reason
from synth.errors import SampleRejected
from synth.plans import Plan, ServerSpec
from synth.roles import rule_gate
from synth.tasks import render_query

__all__ = ["AUGMENTATIONS", "AUGMENT_SHARE", "TASK_GATES", "LLMTaskWriter"]

AUGMENTATIONS: dict[str, str] = {
    "diverse": "Rewrite the request with clearly different wording and sentence structure, same meaning.",
    "complicate": "Rewrite the request adding one realistic constraint or condition the user cares about, "
                  "without changing which tools are needed.",
    "persona": "Rewrite the request as written by a specific kind of user (say who they are in one clause).",
}
"""ASTRA's three query augmentations and the instruction each sends."""

AUGMENT_SHARE = 0.5
"""Share of tasks that get one augmentation."""

TASK_GATES: dict[str, str] = {
    "question_quality": "Is the request clear, specific and answerable, with every needed value stated? "
                        "1 = unclear or unanswerable, 5 = clear and complete.",
    "scenario_realism": "Would a real user plausibly send this request to a service with these tools? "
                        "1 = contrived, 5 = entirely realistic.",
    "tool_use_necessity": "Does answering require calling the tools (not just general knowledge)? "
                          "1 = no tool needed, 5 = impossible without the tools.",
}
"""The three task gates (ASTRA), each scored 1-5."""


class LLMTaskWriter:
    """Writes, augments and gates queries with a chat model (see the module docstring)."""

    name = "llm"

    def __init__(self, client: ChatClient, threshold: int = 3, role: str = "task_writer"):
        self.client = client
        self.threshold = threshold
        self.role = role
        self.gate_scores: Counter[str] = Counter()
        """Sum of the scores given per gate (with ``gate_counts``, the mean per gate)."""
        self.gate_counts: Counter[str] = Counter()
        """Scores parsed per gate."""
        self.fallbacks = 0
        """Gate replies whose score was parsed by the lenient fallback."""
        self._lock = threading.Lock()
        self._scores: dict[str, dict[str, float]] = {}

    def _ask(self, prompt: str, system: str) -> str:
        try:
            reply = self.client.chat(self.role, [{"role": "system", "content": system},
                                                 {"role": "user", "content": prompt}])
        except Exception as err:  # noqa: BLE001 - sample-level errors reject, the rest propagate
            reason = sample_reason(err)
            if reason is None:
                raise
            raise SampleRejected(str(err), f"task_writer:{reason}") from None
        return (reply.content or "").strip()

    def write(self, plan: Plan, spec: ServerSpec, rng: random.Random) -> tuple[str, list[str]]:
        draft, _ = render_query(plan, spec, random.Random(plan.seed))
        docs = [spec.docs[t].to_openai()["function"] for t in dict.fromkeys(c.tool for c in plan.ordered())
                if t in spec.docs]
        values = _stated_values(plan)
        kind = ("one request that this single tool answers" if plan.task_kind == "server"
                else "one request that needs these tools in this order, each using what the previous returned")
        prompt = (f"Tools of the {plan.server} service:\n{json.dumps(docs, ensure_ascii=False)}\n\n"
                  f"Planned calls: {' -> '.join(c.tool for c in plan.ordered() if not c.hidden)}\n"
                  f"Values the user states (copy each exactly): {json.dumps(values, ensure_ascii=False)}\n"
                  f"Draft: {draft}\n\nWrite {kind}, as the user would type it. Do not name the tools. "
                  "Reply with the request only.")
        system = "You write realistic user requests for a tool-using assistant."
        query = _unquote(self._ask(prompt, system))
        aug = ["llm"]
        if rng.random() < AUGMENT_SHARE:
            kind_aug = rng.choice(sorted(AUGMENTATIONS))
            rewritten = _unquote(self._ask(
                f"Request: {query}\n\n{AUGMENTATIONS[kind_aug]} Keep these values exactly: "
                f"{json.dumps(values, ensure_ascii=False)}. Reply with the request only.", system))
            if rewritten:
                query, aug = rewritten, ["llm", kind_aug]
        return query, aug

    def gate(self, plan: Plan, spec: ServerSpec) -> str | None:
        with self._lock:
            self._scores.pop(plan.task_id, None)
        reason = rule_gate(plan)
        if reason is not None:
            return reason
        if not plan.query.strip():
            return "empty_query"
        if any(str(v) not in plan.query for v in _stated_values(plan).values()):
            return "missing_value"
        tools = ", ".join(f"{d.name} ({d.description})" for d in spec.docs.values())
        for gate, rubric in TASK_GATES.items():
            text = self._ask(f"Tools available: {tools}\n\nUser request: {plan.query}\n\n{rubric}\n"
                             'Reply with JSON only: {"score": N} where N is 1, 2, 3, 4 or 5.',
                             "You review user requests for a tool-use dataset. Be strict.")
            try:
                score, fallback = parse_score(text)
            except ValueError:
                return f"gate_error:{gate}"
            with self._lock:
                self.fallbacks += fallback
                self.gate_scores[gate] += score
                self.gate_counts[gate] += 1
                self._scores.setdefault(plan.task_id, {})[gate] = float(score)
            if score < self.threshold:
                return gate
        return None

    def last_scores(self, plan: Plan) -> dict[str, float]:
        """The gate scores the plan's latest request got (1-5 per gate)."""
        with self._lock:
            return dict(self._scores.get(plan.task_id, {}))

    def stats(self) -> dict[str, Any]:
        """Mean score per gate and the fallback count."""
        return {"gate_means": {g: self.gate_scores[g] / n for g, n in sorted(self.gate_counts.items())},
                "fallback_parses": self.fallbacks}


def _stated_values(plan: Plan) -> dict[str, Any]:
    """``{"tool.param": value}`` the query must state (query-bound, not vague, scalar)."""
    out: dict[str, Any] = {}
    for c in plan.ordered():
        for p, a in sorted(c.args.items()):
            if a[0] == "q" and p not in c.vague and isinstance(a[1], str | int | float) \
                    and not isinstance(a[1], bool):
                out[f"{c.tool}.{p}"] = a[1]
    return out


def _unquote(text: str) -> str:
    t = text.strip()
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "\"'":
        t = t[1:-1].strip()
    return t
