"""Probe: GRPO from a warm-started probe model on its 12 RL envs (rl.toml's settings, draw cap 8).
P (default 1) sets the groups per step; BETA (default 0) the KL weight to the warm start;
G (default 4) the group size; REWARD (default f1) the training reward (f1+partial: partial credit too);
NEG (default 1) the weight on negative advantages (0: positive-only); CAP (default 8) the draw cap.
usage: [LR=5e-4] [TAG=] [P=1] [BETA=0] [G=4] [REWARD=f1] [NEG=1] [CAP=8] grpo.py DIR STEPS [SEED]  (writes DIR/grpo-SEED+TAG)"""
import json, sys, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
from train.grpo import train_grpo
from train.rollout import Sampling
import os
TAG, LR = os.environ.get("TAG", ""), float(os.environ.get("LR", "5e-4"))
d, steps = Path(sys.argv[1]), int(sys.argv[2])
seed = int(sys.argv[3]) if len(sys.argv) > 3 else 0
t0 = time.time()
st = train_grpo(d / "rl_envs.jsonl", d / "model", d / f"grpo-{seed}{TAG}", max_steps=steps, num_generations=int(os.environ.get("G", "4")),
                prompts_per_step=int(os.environ.get("P", "1")), max_completion_length=256, learning_rate=LR, seed=seed, threads=1,
                sampling=Sampling(temperature=1.0, top_k=10), abf=True, draw_cap=int(os.environ.get("CAP", "8")), reward=os.environ.get("REWARD", "f1"),
                beta=float(os.environ.get("BETA", "0")), negative_weight=float(os.environ.get("NEG", "1")))
rows = [json.loads(l) for l in (d / f"grpo-{seed}{TAG}" / "grpo_steps.jsonl").read_text().splitlines()]
for r in rows:
    print(r["step"], "phase", r["phase"], "draws", r["draws"], "kept", r["kept"], "fill", r["fill_rate"],
          "f1", round(r["f1"], 3), "partial", round(r["partial"], 3), flush=True)
print(json.dumps({"steps": steps, "seed": seed, "wall_s": round(time.time() - t0),
                  "skipped": sum(r["skipped"] for r in rows), "mean_fill": sum(r["fill_rate"] for r in rows) / len(rows)}))
