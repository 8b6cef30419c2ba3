"""Probe (issue 32): what a policy does on N fresh RL envs (evalf1.py's envs, sampling and seed), beyond F1: calls
per episode against the golden plan's, calls that do not parse, golden tool names called (recall) and other names
called, episodes that end in an answer (a turn without a call) and policy tokens per episode. Run it before and
after GRPO to see where F1 goes. usage: behave.py MODEL_DIR N [G]"""
import json, re, sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
from synth import Environment
from train.grpo import rl_envs
from train.rollout import MultiTurnRollout, Sampling
m, n = Path(sys.argv[1]), int(sys.argv[2])
g = int(sys.argv[3]) if len(sys.argv) > 3 else 4
torch.manual_seed(0); torch.set_num_threads(1)
tok = AutoTokenizer.from_pretrained(m); model = AutoModelForCausalLM.from_pretrained(m).eval()
envs = rl_envs(n, 5)
ro = MultiTurnRollout(envs, tok, num_generations=g, max_completion_length=256, max_context=2048,
                      sampling=Sampling(temperature=1.0, top_k=10))
groups = ro.play(model, envs, g)
CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)
rows = []
for s, grp in zip(envs, groups):
    golden = [c["name"] for c in Environment(s).golden_calls()]
    for e in grp:
        policy = [t for t, k in zip(e.completion_ids, e.env_mask) if k]
        turns, cur = [], []
        for t, k in zip(e.completion_ids, e.env_mask):   # policy segments between observations
            if k:
                cur.append(t)
            elif cur:
                turns.append(cur); cur = []
        if cur:
            turns.append(cur)
        text = [tok.decode(t, skip_special_tokens=False) for t in turns]
        calls = [c for t in text for c in CALL.findall(t)]
        names = []
        for c in calls:
            try:
                names.append(json.loads(c)["name"])
            except Exception:
                names.append(None)
        rows.append({"phase": s.env_id.split("-")[0], "f1": e.f1, "calls": len(calls), "golden": len(golden),
                     "bad": sum(x is None for x in names),
                     "recall": len(set(golden) & set(names)) / len(set(golden)),
                     "other": sum(x is not None and x not in golden for x in names),
                     "answered": bool(text) and not CALL.search(text[-1]), "tokens": len(policy)})
mean = lambda k, r=rows: round(sum(float(x[k]) for x in r) / len(r), 3)  # noqa: E731
keys = ("f1", "calls", "golden", "bad", "recall", "other", "answered", "tokens")
print(json.dumps({"model": str(m), "envs": n, "G": g, **{k: mean(k) for k in keys},
                  "by_phase": {p: {k: mean(k, [x for x in rows if x["phase"] == p]) for k in keys}
                               for p in sorted({x["phase"] for x in rows})}}))
