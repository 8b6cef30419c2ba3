"""Probe: mean F1 of a model folder on N fresh RL envs (seed 5: neither the RL nor the warm-start ones),
G episodes each at T=1, top-k 10. ENVS=path plays the first N environments of that file instead (e.g. a probe's own
RL environments, to see whether GRPO raised the reward where it trained). usage: [ENVS=path] evalf1.py MODEL_DIR N [G]"""
import json, sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
from train.grpo import rl_envs
from train.rollout import MultiTurnRollout, Sampling
m, n = Path(sys.argv[1]), int(sys.argv[2])
g = int(sys.argv[3]) if len(sys.argv) > 3 else 4
torch.manual_seed(0); torch.set_num_threads(1)
tok = AutoTokenizer.from_pretrained(m); model = AutoModelForCausalLM.from_pretrained(m).eval()
import os
from synth.envs.io import load_envs
envs = load_envs(os.environ["ENVS"])[:n] if os.environ.get("ENVS") else rl_envs(n, 5)
ro = MultiTurnRollout(envs, tok, num_generations=g, max_completion_length=256, max_context=2048,
                      sampling=Sampling(temperature=1.0, top_k=10))
groups = ro.play(model, envs, g)
by_phase = {}
for s, grp in zip(envs, groups):
    by_phase.setdefault(s.env_id.split("-")[0], []).extend(e.f1 for e in grp)
f1 = [e.f1 for grp in groups for e in grp]
print(json.dumps({"model": str(m), "envs": n, "G": g, "mean_f1": sum(f1) / len(f1),
                  "groups_with_variance": sum(max(e.f1 for e in grp) > min(e.f1 for e in grp) for grp in groups),
                  "f1_by_phase": {k: round(sum(v) / len(v), 4) for k, v in by_phase.items()},
                  "env_f1": [round(sum(e.f1 for e in grp) / g, 3) for grp in groups]}))
