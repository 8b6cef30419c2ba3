"""Probe (issue 32): a short, dense copy pre-stage, then the warm start with loss on every token.
Stage 1 (skipped when PRE_STEPS = 0): PRE_STEPS plain-torch steps on repeated id lists (32 + 32 tokens, batch 16,
the ``ind5.py ids`` task), from a fresh ``build_model``. Stage 2: ``train_sft`` on the golden episodes of SRC_PROBE,
``loss_on="all"``, WARM_STEPS steps, from stage 1's model (or from scratch). Both at rate LR.
usage: copywarm.py OUT SRC_PROBE PRE_STEPS WARM_STEPS LR"""
import json, random, shutil, string, sys, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
import torch
from transformers import AutoTokenizer
from toolscale.config.ladder import ModelSize
from train.proxy import build_model
from train.sft import train_sft
out, src, pre, warm, lr = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
out.mkdir(parents=True, exist_ok=True)
torch.set_num_threads(1); torch.manual_seed(0)
for f in ("rl_envs.jsonl", "rl_envs_1.jsonl", "data"):
    (shutil.copytree if (src / f).is_dir() else shutil.copy)(src / f, out / f, **({"dirs_exist_ok": True} if (src / f).is_dir() else {}))
tok = AutoTokenizer.from_pretrained(src / "tok")
size = ModelSize(name="probe", hidden_size=64, num_layers=4, num_heads=2, vocab_size=1024, max_seq_len=2048,
                 max_steps=warm, batch_size=4, learning_rate=lr)
rng = random.Random(0)
def rid():
    p = "".join(rng.choice(string.ascii_uppercase) for _ in range(2)); sep = rng.choice(["-", "/", "_", ""])
    return (p.lower() if sep == "_" else p) + sep + "".join(rng.choice(string.digits) for _ in range(rng.choice([3, 4, 4, 5])))
t0 = time.time()
init = None
if pre:
    m = build_model(size); opt = torch.optim.AdamW(m.parameters(), lr=lr, weight_decay=0.0)
    for step in range(1, pre + 1):
        rows = []
        for _ in range(16):
            ids = tok(" " + " ".join(rid() for _ in range(12)), add_special_tokens=False)["input_ids"][:32]
            rows.append(ids + [ids[-1]] * (32 - len(ids)) + ids + [ids[-1]] * (32 - len(ids)))
        ids = torch.tensor(rows); o = m(input_ids=ids, labels=ids); o.loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0); opt.step(); opt.zero_grad()
        if step % 200 == 0:
            print(f"pre {step} loss {o.loss.item():.3f} {time.time() - t0:.0f}s", flush=True)
    init = out / "copy"
    m.save_pretrained(init); tok.save_pretrained(init)
else:
    init = out / "scratch"
    build_model(size).save_pretrained(init); tok.save_pretrained(init)
(init / "run.json").write_text(json.dumps({"stage": "copy-pre", "steps": pre, "lr": lr}))  # train_sft's init identity
t1 = time.time()
def on_step(s, m_, loss):
    if s % 100 == 0: print(f"warm {s}/{m_} loss {loss} {time.time() - t1:.0f}s", flush=True)
train_sft(out / "data", size, out / "model", max_steps=warm, threads=1, learning_rate=lr, save_steps=0, init=init,
          on_step=on_step, loss_on="all")
print(json.dumps({"pre_steps": pre, "warm_steps": warm, "lr": lr, "loss_on": "all", "pre_s": round(t1 - t0),
                  "warm_s": round(time.time() - t1)}), flush=True)
