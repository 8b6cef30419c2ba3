"""The LLM agent policy: the model writes the assistant turns and tool calls through ``tools=``.

Up to ``max_turns`` (default :data:`MAX_TURNS`, ASTRA's 32) chat completions per trajectory. Each
reply's tool calls are checked and executed against the backend (live MCP servers, bundled servers, or
the emulator for document-only tools); their results go back as ``tool`` messages and the next turn is
requested. A reply without tool calls is the final answer and ends the trajectory.

Injected errors as ASTRA's: an *emulated* call attempt (:func:`synth.rollout.emulated`) fails with
probability ``error_rate`` on the tool side (:data:`synth.rollout.ERROR_KINDS`: ``timeout``,
``unreachable``), never reaching the tool; the model's own call is left as it wrote it.

Rejected (:class:`~synth.errors.SampleRejected`, counted by reason), never silently kept:

``policy:unknown_tool``
    a call of a tool that was not offered;
``policy:bad_arguments``
    arguments that are not a JSON object (truncated or malformed);
``policy:schema_violation``
    arguments that violate the tool's input schema (missing required, unknown, ill-typed, off-enum);
``policy:truncated``
    a reply cut at ``max_tokens`` (``finish_reason == "length"``);
``policy:max_turns``
    no final answer within ``max_turns``;
``policy:empty_answer``
    a final answer with no text;
``policy:REASON``
    a reply the client could not use (its reason).
"""

from __future__ import annotations

import json
import random
from typing import Any

from synth.backends import Backend, argument_problem
from synth.chat_client import ChatClient, ReplyLike, sample_reason, wire_messages
from synth.errors import SampleRejected, ToolCallError
from synth.plans import Plan, ServerSpec
from synth.rollout import ERROR_KINDS, ERROR_WEIGHTS, CallRecord, Trace, emulated, message, system_prompt

__all__ = ["MAX_TURNS", "LLMPolicy"]

MAX_TURNS = 32
"""Most assistant turns per trajectory (ASTRA's rollout limit)."""

_ERROR_TEXT = {"timeout": "the request timed out after 30 s", "unreachable": "the service is unreachable"}


class LLMPolicy:
    """Rolls out a task with a chat model (see the module docstring)."""

    name = "llm"

    def __init__(self, client: ChatClient, max_turns: int = MAX_TURNS, role: str = "policy"):
        if max_turns < 1:
            raise ValueError(f"max_turns must be >= 1, got {max_turns}")
        self.client = client
        self.max_turns = max_turns
        self.role = role

    def _reply(self, messages: list[dict], tools: list[dict]) -> ReplyLike:
        try:
            return self.client.chat(self.role, wire_messages(messages), tools=tools)
        except Exception as err:  # noqa: BLE001 - sample-level errors reject, the rest propagate
            reason = sample_reason(err)
            if reason is None:
                raise
            raise SampleRejected(str(err), f"policy:{reason}") from None

    def rollout(self, plan: Plan, spec: ServerSpec, backend: Backend, rng: random.Random,
                error_rate: float) -> Trace:
        trace = Trace(messages=[message("system", system_prompt(plan.server)), message("user", plan.query)])
        tools = [d.to_openai() for d in spec.docs.values()]
        n_ids = 0
        failed_last: dict[str, bool] = {}
        for _turn in range(self.max_turns):
            reply = self._reply(trace.messages, tools)
            if reply.finish_reason == "length":
                raise SampleRejected("the policy's reply was cut at max_tokens", "policy:truncated")
            if not reply.tool_calls:
                text = (reply.content or "").strip()
                if not text:
                    raise SampleRejected("the policy's final answer is empty", "policy:empty_answer")
                trace.messages.append(message("assistant", text))
                trace.abandoned = [t for t, failed in failed_last.items() if failed]
                return trace
            batch = []
            for call in reply.tool_calls:
                doc = spec.docs.get(call.name)
                if doc is None:
                    raise SampleRejected(f"the policy called unknown tool {call.name!r}", "policy:unknown_tool")
                try:
                    args = json.loads(call.arguments) if call.arguments.strip() else {}
                except ValueError:
                    raise SampleRejected(f"{call.name}: arguments are not JSON: {call.arguments[:60]!r}",
                                         "policy:bad_arguments") from None
                if not isinstance(args, dict):
                    raise SampleRejected(f"{call.name}: arguments are not an object", "policy:bad_arguments")
                problem = argument_problem(doc, args)
                if problem is not None:
                    raise SampleRejected(problem, "policy:schema_violation")
                n_ids += 1
                injected = None
                if emulated(backend, plan.server, call.name) and rng.random() < error_rate:
                    injected = rng.choices(ERROR_KINDS, ERROR_WEIGHTS)[0]
                sent = args
                batch.append((f"call_{n_ids}", call.name, sent, injected))
            calls_json = [{"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(sent)}}
                          for cid, name, sent, _ in batch]
            trace.messages.append(message("assistant", (reply.content or "").strip(), tool_calls=calls_json))
            for cid, name, sent, injected in batch:
                out, err = _execute(backend, plan, name, sent, injected)
                if injected:
                    trace.injected.append(injected)
                ok = err is None
                retry = failed_last.get(name, False)
                trace.records.append(CallRecord(cid, name, sent, ok, out, None if ok else (injected or "tool_error"),
                                                -1, retry, injected))
                failed_last[name] = not ok
                body = json.dumps(out, sort_keys=True, ensure_ascii=False) if ok else json.dumps(
                    {"error": injected or "tool_error", "message": err})
                trace.messages.append(message("tool", body, tool_call_id=cid, name=name))
        raise SampleRejected(f"no final answer within {self.max_turns} turns", "policy:max_turns")


def _execute(backend: Backend, plan: Plan, name: str, sent: dict[str, Any], injected: str | None
             ) -> tuple[dict | None, str | None]:
    if injected in ("timeout", "unreachable"):
        return None, _ERROR_TEXT[injected]
    try:
        return backend.call(plan.server, plan.instance, name, sent), None
    except ToolCallError as e:
        return None, str(e)
