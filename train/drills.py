"""Copy drills for the RL warm start: fresh id lists repeated across a slice of episode text (issue 32).

A policy earns F1 only if its calls copy ids (an order number, an event id) from the question or an observation
into the arguments. A tiny proxy learns that copy from episodes alone too slowly to use it. :class:`CopyDrills` is
an auxiliary loss that the warm start adds at every optimizer step: a fresh batch of sequences, each a list of ids
shaped like the episodes' copied values (:func:`shaped_like`), then a short slice of a golden episode's tokens, then
the same list again; the loss is the mean next-token loss over the batch, summed with the episodes' own loss.
This is the recipe the issue-32 probes measured to form a copy (``docs/results/rl/probe/mixwarm.py`` with
``LONG=4``: 16 sequences, 32 id tokens, gaps of 17-52 tokens); rows of drill turns inside the SFT data, the option's
first form, formed no copy on any of 3 seeds.

Pure but for :meth:`CopyDrills.loss`, which runs the model: rows and a tokenizer in, token batches out.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from typing import Any

from train.chat import normalize_messages, render

__all__ = ["CopyDrills", "copied_values", "shaped_like", "IDS_PER_LIST", "LIST_TOKENS", "GAP"]

IDS_PER_LIST = 12
"""Fresh ids drawn for one drill's list (then cut to :data:`LIST_TOKENS` tokens)."""
LIST_TOKENS = 32
"""Tokens of a drill's list; a shorter list repeats its last token up to this length."""
GAP = (17, 52)
"""Tokens of episode text between the list and its repeat, drawn uniformly (inclusive): the RL environments'
copy distances in the probes that formed a copy."""


def copied_values(row: dict[str, Any]) -> list[str]:
    """String argument values (3 characters or more) of the row's tool calls, in call order, with repeats."""
    out = []
    for msg in row["messages"]:
        for call in msg.get("tool_calls") or []:
            args = call["function"].get("arguments") or {}
            args = json.loads(args) if isinstance(args, str) else args
            out += [v for v in args.values() if isinstance(v, str) and len(v) >= 3]
    return out


def shaped_like(value: str, rng: random.Random) -> str:
    """A fresh id of ``value``'s shape: each letter a random letter of the same case, each digit a random digit,
    every other character kept (``OR-1502`` -> ``KW-7381``)."""
    def one(c: str) -> str:
        if c.isdigit():
            return rng.choice("0123456789")
        if c.isascii() and c.isalpha():
            return rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ" if c.isupper() else "abcdefghijklmnopqrstuvwxyz")
        return c
    return "".join(one(c) for c in value)


class CopyDrills:
    """The warm start's copy-drill loss: ``sequences`` fresh drills per optimizer step (issue 32).

    Each drill is ``list + slice + list``: :data:`LIST_TOKENS` tokens of fresh ids shaped like the golden
    episodes' copied values, then :data:`GAP` tokens of one episode (a random slice), then the list again. The
    batch of a step depends only on ``seed`` and the step, so a resumed run draws the same drills. Raises
    ``ValueError`` when ``sequences`` < 1 or when no episode copies a value (nothing to shape the ids on).

    ``rows``: golden-episode trajectory rows (pinned interface 1); ``tokenizer``: the model's tokenizer.
    """

    def __init__(self, rows: Sequence[dict[str, Any]], tokenizer: Any, *, sequences: int, seed: int = 0):
        if isinstance(sequences, bool) or not isinstance(sequences, int) or sequences < 1:
            raise ValueError(f"copy drills need sequences >= 1, got {sequences!r}")
        self.values = [v for r in rows for v in copied_values(r)]
        if not self.values:
            raise ValueError("no golden episode copies a value into a call: nothing to drill")
        self.tokenizer, self.sequences, self.seed = tokenizer, sequences, seed
        encode = lambda r: tokenizer(render(normalize_messages(r["messages"]), r.get("tools")),  # noqa: E731
                                     add_special_tokens=False)["input_ids"]
        self.episodes = [ids for ids in map(encode, rows) if ids]
        self.nll: list[tuple[int, float, float]] = []
        """(step, first list, repeat): mean next-token loss in nats over each half, one entry per step drilled."""

    @property
    def identity(self) -> dict[str, Any]:
        """What the drills add to a run's identity (``run.json``)."""
        return {"sequences": self.sequences, "list_tokens": LIST_TOKENS, "gap": list(GAP)}

    def batch(self, step: int) -> list[list[int]]:
        """The drills of optimizer step ``step``: ``sequences`` token lists, each ``list + slice + list``."""
        rng = random.Random(f"drills:{self.seed}:{step}")
        out = []
        for _ in range(self.sequences):
            text = " " + " ".join(shaped_like(rng.choice(self.values), rng) for _ in range(IDS_PER_LIST))
            ids = self.tokenizer(text, add_special_tokens=False)["input_ids"][:LIST_TOKENS]
            ids += [ids[-1]] * (LIST_TOKENS - len(ids))
            episode = rng.choice(self.episodes)
            k = min(len(episode), rng.randint(*GAP))
            at = rng.randint(0, len(episode) - k)
            out.append(ids + episode[at:at + k] + ids)
        return out

    def loss(self, model: Any, step: int) -> Any:
        """The mean next-token loss of step ``step``'s drills under ``model`` (a scalar tensor with its graph);
        records the first list's and the repeat's mean loss in :attr:`nll`."""
        import torch
        import torch.nn.functional as F

        seqs = self.batch(step)
        n, device = max(map(len, seqs)), next(model.parameters()).device
        pad = lambda q, fill: q + [fill] * (n - len(q))  # noqa: E731
        ids = torch.tensor([pad(q, 0) for q in seqs], device=device)
        mask = torch.tensor([pad([1] * len(q), 0) for q in seqs], device=device)
        logits = model(input_ids=ids, attention_mask=mask).logits[:, :-1].float()
        nll = F.cross_entropy(logits.transpose(1, 2), ids[:, 1:], reduction="none") * mask[:, 1:]
        first = nll[:, :LIST_TOKENS - 1].mean()
        ends = torch.tensor([len(q) - 1 for q in seqs], device=device)
        cols = torch.arange(nll.shape[1], device=device)
        repeat = (cols >= (ends - LIST_TOKENS)[:, None]) & (cols < ends[:, None])
        self.nll.append((int(step), float(first.detach()), float(nll[repeat].detach().mean())))
        return nll.sum() / mask[:, 1:].sum()

    def summary(self, tail: int = 50) -> dict[str, Any]:
        """The drills' record for ``copy_drills.json``: the settings, the first list's and the repeat's mean
        loss (nats per token) over the last ``tail`` steps drilled, and every tenth step's pair. A repeat far
        below the first list means the model copies; equal ones, that no copy formed."""
        last = self.nll[-tail:]
        mean = lambda i: sum(e[i] for e in last) / len(last) if last else None  # noqa: E731
        return {**self.identity, "steps_drilled": len(self.nll), "first_list_nll": mean(1), "repeat_nll": mean(2),
                "curve": [{"step": s, "first_list_nll": round(a, 4), "repeat_nll": round(b, 4)}
                          for s, a, b in self.nll if s % 10 == 0]}
