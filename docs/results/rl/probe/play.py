"""Probe: G=4 rollouts at top-k 10 on the run's RL envs and on rl_envs(12,1). usage: play.py DIR TEMP"""
import json, sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
from synth.envs.io import load_envs
from train.rollout import MultiTurnRollout, Sampling
d, temp = Path(sys.argv[1]), float(sys.argv[2])
torch.manual_seed(0); torch.set_num_threads(1)
tok = AutoTokenizer.from_pretrained(d / "model"); model = AutoModelForCausalLM.from_pretrained(d / "model").eval()
summary = {}
for name in ("rl_envs.jsonl", "rl_envs_1.jsonl"):
    envs = load_envs(d / name)
    ro = MultiTurnRollout(envs, tok, num_generations=4, max_completion_length=256, max_context=2048,
                          sampling=Sampling(temperature=temp, top_k=10))
    groups = ro.play(model, envs, 4)
    var = 0
    for s, g in zip(envs, groups):
        v = max(e.f1 for e in g) - min(e.f1 for e in g) > 1e-9
        var += v
        print(name, s.env_id, "f1", [round(e.f1, 2) for e in g], "partial", [round(e.partial, 2) for e in g], flush=True)
    f1 = sum(e.f1 for g in groups for e in g) / (4 * len(envs))
    pa = sum(e.partial for g in groups for e in g) / (4 * len(envs))
    print(f"{name}: groups with variance {var}/{len(envs)}, mean F1 {f1:.3f}, mean partial {pa:.3f}", flush=True)
    summary[name] = {"groups_with_variance": var, "groups": len(envs), "mean_f1": f1, "mean_partial": pa}
print(json.dumps({"temp": temp, **summary}))
