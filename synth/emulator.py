"""The LLM tool emulator for document-only tools: stateful per trajectory, validated, fail-closed.

A tool known only from its document has no backend, so a chat model plays it. Per call:

1. the arguments are checked against the input schema (:func:`synth.backends.argument_problem`); a
   violation is a tool error the conversation shows (:class:`~synth.errors.ToolCallError`);
2. the model gets the tool's document, its output fields, and **every earlier call and output of the
   same trajectory** (so ids it invented stay consistent: the emulator is stateful per trajectory;
   :meth:`LLMEmulator.begin` starts a new one);
3. the reply must be one JSON object carrying every documented output field (the output schema
   ToolDoc records); otherwise the model is told what was wrong and asked again, at most
   ``tries`` times in all, and then the trajectory is rejected (``emulator:invalid_output``).

A repeated call with the same arguments returns the earlier output without a request.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from synth.backends import checked_doc
from synth.chat_client import ChatClient, parse_object, sample_reason
from synth.errors import SampleRejected
from synth.models import ToolDoc

__all__ = ["EMULATOR_TRIES", "LLMEmulator", "output_problem"]

EMULATOR_TRIES = 3
"""Attempts per emulated call before the trajectory is rejected."""


def output_problem(doc: ToolDoc, out: dict[str, Any]) -> str | None:
    """Why an emulated output does not fit the tool's documented output fields, or None."""
    missing = [f for f in doc.output_fields if f not in out and f != "result"]
    if missing:
        return f"missing output field(s) {', '.join(missing)}"
    return None


class LLMEmulator:
    """Document-only tools played by a chat model (see the module docstring)."""

    name = "llm"

    def __init__(self, client: ChatClient, docs: list[ToolDoc], tries: int = EMULATOR_TRIES,
                 role: str = "emulator"):
        self.client = client
        self.tries = tries
        self.role = role
        self._docs = {(d.server, d.name): d for d in docs}
        self._local = threading.local()
        """Per thread: the current trajectory's calls (servers may be rolled out in parallel threads)."""
        self._lock = threading.Lock()
        self.retries = 0
        """Requests repeated because an output did not validate."""

    @property
    def _history(self) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
        if not hasattr(self._local, "history"):
            self._local.history = []
        return self._local.history

    def begin(self, task_id: str) -> None:
        """Start a new trajectory (in this thread): earlier calls are forgotten."""
        self._local.history = []

    def database(self, server: str, instance: tuple[int, int]) -> dict[str, list[dict]]:
        return {}

    def call(self, server: str, instance: tuple[int, int], name: str, arguments: dict[str, Any]) -> dict:
        doc = checked_doc(self._docs, server, name, arguments)
        for prev_name, prev_args, prev_out in self._history:
            if prev_name == name and prev_args == arguments:
                return prev_out
        history = "\n".join(f"{n}({json.dumps(a, sort_keys=True)}) -> {json.dumps(o, sort_keys=True)}"
                            for n, a, o in self._history) or "(none)"
        fields = ", ".join(doc.output_fields) or "whatever the tool returns"
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": f"You are the {server} service's tool {name}, emulated. Reply with "
                                          "one JSON object: the tool's result, consistent with earlier results."},
            {"role": "user", "content": f"Tool document: {json.dumps(doc.to_openai()['function'], ensure_ascii=False)}\n"
                                        f"Output fields: {fields}\nEarlier calls in this session:\n{history}\n\n"
                                        f"Call: {name}({json.dumps(arguments, sort_keys=True)})"}]
        why = "no reply"
        for attempt in range(self.tries):
            try:
                reply = self.client.chat(self.role, messages)
            except Exception as err:  # noqa: BLE001 - sample-level errors reject, the rest propagate
                reason = sample_reason(err)
                if reason is None:
                    raise
                raise SampleRejected(str(err), f"emulator:{reason}") from None
            text = reply.content or ""
            try:
                out = parse_object(text)
                why = output_problem(doc, out) or ""
            except ValueError as err:
                why = str(err)
            if not why:
                self._history.append((name, dict(arguments), out))
                return out
            if attempt + 1 < self.tries:
                with self._lock:
                    self.retries += 1
                messages = messages + [{"role": "assistant", "content": text},
                                       {"role": "user", "content": f"Invalid: {why}. Reply with the JSON object only."}]
        raise SampleRejected(f"emulated {server}.{name}: {why} after {self.tries} tries", "emulator:invalid_output")

    def close(self) -> None:
        self._local = threading.local()
