"""GRPO's tool worlds and budgets, measured without training (issue 32).

* **Perfect-policy F1** through the real :class:`train.rollout.MultiTurnRollout`: a scripted policy replays each
  environment's golden calls one per turn (``tests/train/scripted.py``; the environments, sandbox, tokenizer and
  chat template are real), over a curriculum of environments (single-hop, multi-hop, parallel with
  distractors), at the default policy budget and at the old default of 96 tokens, with and without a one-line
  rationale before each call.
* **Golden episode lengths** and bytes per token, with byte-level BPE tokenizers trained on synthesised SFT
  data (vocabulary 512 and 1024): the basis of ``validate``'s estimate (``train.budget.BYTES_PER_TOKEN``).
* **Aligned worlds**: gold RL tool names that the bundled servers document (what SFT data can teach), and that
  an SFT set drawing on every training tool calls (the others follow the catalogue's ``get_<entity>``
  convention); distractors that are stubs answering "no matching record"; hops whose answer is their own
  argument.

Usage::

    .venv/bin/python benchmarks/rl_budget.py [--quick] [--json] [--n 24]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def perfect_f1(envs, tok, budget: int, rationale: bool) -> float:
    from tests.train.scripted import ScriptedPolicy
    from train.rollout import MultiTurnRollout

    roll = MultiTurnRollout(envs, tok, num_generations=1, max_completion_length=budget, max_context=1 << 16)
    policy = ScriptedPolicy(envs, tok, rationale=rationale)
    return statistics.mean(roll.episode(policy, s).f1 for s in envs)


def sft_texts(tasks: int) -> tuple[list[str], set[str]]:
    """Rendered conversations of a synthesised SFT set drawing on every training tool, and the tool names it
    calls."""
    from synth.dataset import build_dataset
    from synth.models import Recipe
    from synth.servers.catalog import SERVERS
    from synth.servers.db import TRAIN_DOMAINS
    from train.chat import render
    from train.data import read_rows

    every = sum(len(SERVERS[d].tools) for d in TRAIN_DOMAINS)
    with tempfile.TemporaryDirectory(prefix="toolscale-bench-rl-") as tmp:
        build_dataset(Recipe.from_axes({"task_count": tasks, "tool_diversity": every}, seed=0), Path(tmp) / "d")
        rows = read_rows(Path(tmp) / "d")
    names = {c["function"]["name"] for r in rows for m in r["messages"] for c in (m.get("tool_calls") or [])}
    return [render(r["messages"], r.get("tools")) for r in rows], names


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--n", type=int, default=None)
    args = ap.parse_args()
    n = args.n or (6 if args.quick else 24)

    from synth.envs.reward import canonical_answer
    from toolscale.config import TrainSpec
    from train.budget import golden_texts
    from train.grpo import rl_envs
    from train.tokenizer import train_tokenizer

    envs = rl_envs(n, seed=11, validate=True)
    texts, sft_names = sft_texts(32 if args.quick else 128)
    golden = [golden_texts(s) for s in envs]
    default = TrainSpec().grpo_max_completion_length
    records = []

    def rec(figure: str, value, unit: str = "", target: str = "") -> None:
        records.append({"benchmark": "rl_budget", "figure": figure, "value": value, "unit": unit, "target": target})

    tok = None
    for vocab in (512, 1024):
        tok = train_tokenizer(texts, vocab)
        for name, i in (("golden policy text", 0), ("golden episode", 1)):
            ratios = [len(g[i].encode()) / len(tok(g[i], add_special_tokens=False)["input_ids"]) for g in golden]
            counts = [len(tok(g[i], add_special_tokens=False)["input_ids"]) for g in golden]
            rec(f"{name}, vocab {vocab}: bytes/token (least)", round(min(ratios), 2), "B/token",
                "> train.budget.BYTES_PER_TOKEN = 2.0")
            rec(f"{name}, vocab {vocab}: tokens (largest)", max(counts), "tokens")
    for budget in (default, 96):
        for rationale in (False, True):
            f1 = perfect_f1(envs, tok, budget, rationale)
            rec(f"perfect-policy mean F1, budget {budget}{' + rationale' if rationale else ''}", round(f1, 3), "",
                "1.00" if budget == default else "")
    from synth.servers.catalog import SERVERS

    gold = {t.tool for s in envs for t in s.targets}
    catalog = {t.name for srv in SERVERS.values() for t in srv.tools}
    rec("gold RL tool names the bundled servers document", f"{len(gold & catalog)}/{len(gold)}", "names",
        "review: 0/47")
    rec("gold RL tool names an SFT set over every training tool calls", f"{len(gold & sft_names)}/{len(gold)}",
        "names", "review: 0/47")
    stubs = sum("no matching record" in src.source for s in envs for src in s.tool_sources
                if src.name in {d.name for d in s.distractors})
    rec("distractors that are stubs answering nothing", f"{stubs}/{sum(len(s.distractors) for s in envs)}", "tools",
        "0 (review: 39/77 under SFT names)")
    degenerate = sum(canonical_answer(t.arguments[k]) == canonical_answer(t.answer)
                     for s in envs for t in s.targets for k in t.arguments)
    rec("hops whose answer is their own argument", f"{degenerate}/{sum(len(s.targets) for s in envs)}", "targets",
        "0 (review: 7/90)")
    if not args.json:
        for r in records:
            print(f"{r['figure']:<62} {r['value']!s:>8} {r['unit']:<8} {r['target']}")
    print(json.dumps(records))


if __name__ == "__main__":
    main()
