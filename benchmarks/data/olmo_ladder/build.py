"""Rebuild ``ladder.csv`` from a checkout of allenai/OLMo-ladder (Apache-2.0); run by hand, never by a test.

    python benchmarks/data/olmo_ladder/build.py /path/to/OLMo-ladder > benchmarks/data/olmo_ladder/ladder.csv

What it keeps of ``src/scripts/paper/data/ladder-runs/`` (the paper's "final" configuration,
``src/scripts/paper/configs/final.json``): every checkpoint of the 16 ladder runs (190M, 370M, 760M and
1.3B parameters, each at 1, 2, 5 and 10 x Chinchilla-optimal tokens), and one row for the 13B target
(``peteish13_eval_final.csv``): the mean of its last 5 evaluations, which is how the authors' scripts define its
actual accuracy (``moving_avg=5``, ``data["ys"][-1]``), at the N and D the paper predicts for
(``-n 13202396160 -d 5000088518656``). Per task: the task's bits-per-byte loss (``rc_5shot_bpb``) and its
accuracy (``rc_5shot_len_norm``); MMLU is the question-weighted mean of its four test categories with the
authors' weights (``WEIGHT_BY_KEY``: 0.215, 0.335, 0.219, 0.231). Values are rounded to 6 significant digits.
Columns keep W&B's names (``_step``, ``throughput/total_tokens``, ``eval/...``).
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

TASKS = ["mmlu_avg_test", "hellaswag_val", "arc_challenge_test", "arc_easy_test", "piqa_val", "csqa_val",
         "socialiqa_val", "openbookqa_test"]
MMLU = {"mmlu_stem_test": 0.215, "mmlu_humanities_test": 0.335, "mmlu_social_sciences_test": 0.219,
        "mmlu_other_test": 0.231}
TARGET = ("13B-5T", 13202396160, 5000088518656)


def _metrics(row: dict[str, str]) -> dict[str, float]:
    out = {}
    for task in TASKS:
        parts = MMLU if task == "mmlu_avg_test" else {task: 1.0}
        total = sum(parts.values())
        for kind, key in (("bpb", "eval/downstream_bpb/{}_rc_5shot_bpb"), ("acc", "eval/downstream/{}_rc_5shot_len_norm")):
            out[key.format(task)] = sum(w * float(row[key.format(t)]) for t, w in parts.items()) / total
    return out


def main(root: Path) -> None:
    paper = root / "src/scripts/paper"
    configs = json.loads((paper / "configs/final.json").read_text())
    rows = []
    for name, cfg in configs.items():
        if cfg["mode"] != "train":
            continue
        for rel in cfg["paths"]:
            run = Path(rel).stem
            for r in csv.DictReader(open(root / rel)):
                rows.append({"run": run, "params": cfg["n"], "_step": int(float(r["_step"])),
                             "throughput/total_tokens": int(float(r["throughput/total_tokens"])), "split": "fit",
                             **_metrics(r)})
    last = list(csv.DictReader(open(paper / "data/ladder-runs/peteish13_eval_final.csv")))[-5:]
    ms = [_metrics(r) for r in last]
    name, n, d = TARGET
    rows.append({"run": name, "params": n, "_step": int(float(last[-1]["_step"])), "throughput/total_tokens": d,
                 "split": "heldout", **{k: sum(m[k] for m in ms) / len(ms) for k in ms[0]}})
    w = csv.DictWriter(sys.stdout, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    for row in rows:
        w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in row.items()})


if __name__ == "__main__":
    main(Path(sys.argv[1]))
