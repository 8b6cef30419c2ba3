"""Fixtures of the synth tests: an in-process chat client that answers from a script (fault cases)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest


@dataclass(frozen=True)
class Call:
    """A reply's tool call (the shape of synth.chat_client.ToolCallLike)."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Reply:
    """A chat reply (the shape of synth.chat_client.ReplyLike)."""

    content: str = ""
    tool_calls: list[Call] = field(default_factory=list)
    finish_reason: str | None = "stop"


class ScriptedChat:
    """``chat(role, messages, tools)`` answered by ``script(role, messages, tools) -> Reply | str``; logs requests."""

    def __init__(self, script):
        self.script = script
        self.requests: list[tuple[str, list[dict], list[dict] | None]] = []

    def chat(self, role, messages, tools=None):
        self.requests.append((role, messages, tools))
        out = self.script(role, messages, tools)
        if isinstance(out, BaseException):
            raise out
        return Reply(out) if isinstance(out, str) else out


@pytest.fixture
def scripted_chat():
    """The ScriptedChat class (with Reply and Call as attributes)."""
    ScriptedChat.Reply = Reply
    ScriptedChat.Call = Call
    return ScriptedChat
