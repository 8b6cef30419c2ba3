"""Probe: decoded first turns on the single-hop RL envs. usage: show.py DIR TEMP"""
import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
from synth.envs.io import load_envs
from train.rollout import MultiTurnRollout, Sampling
d, temp = Path(sys.argv[1]), float(sys.argv[2])
torch.manual_seed(0); torch.set_num_threads(1)
tok = AutoTokenizer.from_pretrained(d / "model"); model = AutoModelForCausalLM.from_pretrained(d / "model").eval()
for name in ("rl_envs.jsonl", "rl_envs_1.jsonl"):
    envs = load_envs(d / name)[:4]
    ro = MultiTurnRollout(envs, tok, num_generations=1, max_completion_length=256, max_context=2048,
                          sampling=Sampling(temperature=temp, top_k=10))
    for s, g in zip(envs, ro.play(model, envs, 2)):
        print("==", s.env_id, "| query:", s.prompt[-160:].replace("\n", " "))
        for e in g:
            print("   f1", e.f1, "partial", round(e.partial, 2), "|", tok.decode(e.completion_ids[:120])[:300].replace("\n", " "))
