"""A scripted policy for rollout tests: it plays each environment's golden calls (or fails on purpose).

Only generation is scripted, to control the rewards a test needs: the tokenizer, the chat template, the
environments, the sandbox, the rollout and (in the trainer tests) the model that TRL optimizes are real.
``ScriptedPolicy.generate`` has ``model.generate``'s signature for the arguments the rollout passes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

GOLD = "gold"
FAIL = "fail"


def call_text(call: dict[str, Any]) -> str:
    body = json.dumps({"name": call["name"], "arguments": call["arguments"]}, ensure_ascii=False)
    return f"<tool_call>{body}</tool_call>"


class ScriptedPolicy:
    """Plays ``plan(sample, episode_number) -> "gold" | "fail"`` per episode: ``gold`` issues the golden calls one
    per turn (optionally after a one-line rationale) then the main answer; ``fail`` calls a tool that does not
    exist, once, then answers. Episode numbers count the rows this policy was asked to start, in order."""

    def __init__(self, samples: Sequence[Any], tokenizer, plan: Callable[[Any, int], str] | None = None, *,
                 rationale: bool = False) -> None:
        from synth.envs.api import Environment

        self.tok = tokenizer
        self.by_prompt = {s.prompt: s for s in samples}
        self.golden = {s.env_id: Environment(s).golden_calls() for s in samples}
        self.plan = plan or (lambda sample, k: GOLD)
        self.rationale = rationale
        self.started = 0
        self.training = False
        self.step = 0
        """Set by a test's callback to the trainer's step, for plans that change with it."""

    def _turn(self, text: str) -> str:
        user = text.split("<|im_start|>user\n", 1)[1].split("<|im_end|>", 1)[0]
        sample = self.by_prompt[user]
        turn = text.count("<|im_start|>assistant") - 1
        if turn == 0:  # a new episode: its mode; later turns read it off the first call
            self.started += 1
            mode = self.plan(sample, self.started)
        else:
            mode = FAIL if '"no_such_tool"' in text else GOLD
        calls = self.golden[sample.env_id] if mode == GOLD else [{"name": "no_such_tool", "arguments": {}}]
        if turn < len(calls):
            lead = f"I will call {calls[turn]['name']} now.\n" if self.rationale else ""
            return lead + call_text(calls[turn]) + "<|im_end|>"
        return f"{sample.main_answer or 'Done.'}<|im_end|>"

    def generate(self, input_ids, attention_mask=None, max_new_tokens: int = 1, pad_token_id: int = 0,
                 **kwargs: Any):
        import torch

        rows = []
        for row, ids in enumerate(input_ids.tolist()):
            keep = attention_mask[row].tolist() if attention_mask is not None else [1] * len(ids)
            context = [t for t, m in zip(ids, keep, strict=True) if m]
            text = self.tok.decode(context, skip_special_tokens=False)
            new = self.tok(self._turn(text), add_special_tokens=False)["input_ids"][:max_new_tokens]
            rows.append(ids + new + [pad_token_id] * (max_new_tokens - len(new)))
        return torch.tensor(rows, dtype=torch.long)

    def eval(self):
        self.training = False
        return self

    def train(self, mode: bool = True):
        self.training = mode
        return self
