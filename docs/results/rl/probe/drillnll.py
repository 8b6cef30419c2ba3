"""Probe (issue 32): does a warm start with the product's copy drills (``train/drills.py``) copy inside its own
drill format? NLL per token (nats) of the ids where the user gives them (the first list: no copy possible) and
where the assistant repeats them, on fresh drill rows (seed 99) built from the first 32 golden episodes of the
model's own warm-start data, by turn. A copy shows as repeat NLL far below the first list's.
EPS=path takes the episodes from another train.jsonl (a model trained without the product's data folder).
It measured the option's first form, drill rows (``train.drills.drill_rows``), which the second form
(``train.drills.CopyDrills``, 2026-12-07) replaced: it runs against the code of that date's earlier commits only.
The second form records the same two figures itself, in the warm start's ``copy_drills.json``.
usage: [EPS=path] drillnll.py DIR   (DIR/model from prodwarm.py)"""
import json, os, sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
from train.chat import render
from train.drills import drill_rows
d = Path(sys.argv[1])
torch.set_num_threads(1)
tok = AutoTokenizer.from_pretrained(d / "model"); m = AutoModelForCausalLM.from_pretrained(d / "model").eval()
src = Path(os.environ.get("EPS", d / "model" / "data" / "train.jsonl"))
rows = [json.loads(l) for l in src.read_text().splitlines()]
eps = [r for r in rows if not json.loads(r["meta"]).get("drill")][:32]   # as the warm start passes them
drills = drill_rows(eps, tok, turns=8, seed=99)
first, repeat = [[] for _ in range(8)], [[] for _ in range(8)]
for row in drills:
    text = render(row["messages"], row["tools"])   # as train/data.py renders SFT rows
    enc = tok(text, add_special_tokens=False, return_offsets_mapping=True)
    ids, starts = enc["input_ids"][:2048], [a for a, _ in enc["offset_mapping"]][:2048]
    with torch.no_grad():
        lp = torch.log_softmax(m(torch.tensor([ids])).logits[0].float(), -1)
    nll = lambda a, b: [-lp[i - 1, ids[i]].item() for i, s in enumerate(starts) if a <= s < b and i > 0]  # noqa: E731
    at = 0
    for turn in range(8):
        span = row["messages"][2 * turn + 1]["content"]
        u = text.find(span, at); r = text.find(span, u + len(span))
        if r < 0 or r + len(span) > starts[-1]:
            break
        first[turn] += nll(u + 1, u + len(span)); repeat[turn] += nll(r, r + len(span)); at = r + len(span)
mean = lambda v: round(sum(v) / len(v), 3) if v else None  # noqa: E731
print(json.dumps({"model": str(d), "rows": len(drills),
                  "first_nll_by_turn": [mean(v) for v in first], "repeat_nll_by_turn": [mean(v) for v in repeat],
                  "first_nll": mean([x for v in first for x in v]), "repeat_nll": mean([x for v in repeat for x in v])}))
