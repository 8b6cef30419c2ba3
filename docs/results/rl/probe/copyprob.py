"""Probe: teacher-forced probability of the first golden call's argument value (the copied span) on the RL envs.
usage: copyprob.py DIR"""
import json, sys, math
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
from synth import Environment
from synth.envs.io import load_envs
from train.rollout import MultiTurnRollout
d = Path(sys.argv[1])
torch.set_num_threads(1)
tok = AutoTokenizer.from_pretrained(d / "model"); model = AutoModelForCausalLM.from_pretrained(d / "model").eval()
res = []
for name in ("rl_envs.jsonl", "rl_envs_1.jsonl"):
    envs = load_envs(d / name)
    ro = MultiTurnRollout(envs, tok, num_generations=1, max_completion_length=256, max_context=2048)
    for s in envs:
        env = Environment(s); env.reset()
        call = env.golden_calls()[0]
        key, val = next(iter(call["arguments"].items()))
        head = '<tool_call>{"name": "' + call["name"] + '", "arguments": {"' + key + '": "'
        p = ro.prompt_ids[s.env_id]
        h = tok(head, add_special_tokens=False)["input_ids"]
        v = tok(str(val), add_special_tokens=False)["input_ids"]
        ids = torch.tensor([p + h + v])
        with torch.no_grad():
            lp = torch.log_softmax(model(ids).logits[0].float(), -1)
        start = len(p) + len(h)
        vlp = [lp[start - 1 + i, t].item() for i, t in enumerate(v)]
        hlp = [lp[len(p) - 1 + i, t].item() for i, t in enumerate(h)]
        res.append({"env": s.env_id, "value": val, "value_tokens": len(v), "value_logp": sum(vlp),
                    "value_token_p": [round(math.exp(x), 3) for x in vlp], "head_p": math.exp(sum(hlp) / len(h))})
        print(res[-1], flush=True)
vp = [math.exp(r["value_logp"]) for r in res]
print(json.dumps({"envs": len(res), "mean_p_value_exact": sum(vp) / len(vp),
                  "median_token_p": sorted(p for r in res for p in r["value_token_p"])[len([p for r in res for p in r["value_token_p"]]) // 2],
                  "mean_head_token_p": sum(r["head_p"] for r in res) / len(res)}))
