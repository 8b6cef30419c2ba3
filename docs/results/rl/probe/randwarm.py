"""Probe (issue 32): copies in the episodes' own format. A plain-torch warm start from scratch, as mixwarm.py, where
each step is one batch of 4 golden episodes of SRC_PROBE whose values (the string values of the calls' arguments and
of the tool results, and wherever they recur) are, when RAND = 1, replaced consistently by fresh random ones: the
same shape (letters for letters, digits for digits), or for an id with digits, half the time an id in the RL
environments' shapes. The values change at every step, so an episode can only be predicted by copying them. RAND =
0 is the plain loop (mixwarm.py with COPY = 0). With COPY=1 in the environment each step also sums mixwarm.py's
batch of 16 repeated id lists. Loss on every token, cut at 2,048; AdamW at LR, 5% warm-up, cosine.
usage: [SEED=0] [COPY=0] randwarm.py OUT SRC_PROBE STEPS RAND(0|1) LR"""
import json, math, os, random, re, shutil, string, sys, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
import torch
from transformers import AutoTokenizer
from toolscale.config.ladder import ModelSize
from train.chat import normalize_messages, render
from train.proxy import build_model
out, src, steps, rand, lr = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
out.mkdir(parents=True, exist_ok=True)
SEED, COPY = int(os.environ.get("SEED", "0")), int(os.environ.get("COPY", "0"))
torch.set_num_threads(1); torch.manual_seed(SEED)
for f in ("rl_envs.jsonl", "rl_envs_1.jsonl"):
    shutil.copy(src / f, out / f)
tok = AutoTokenizer.from_pretrained(src / "tok")
rows = [json.loads(l) for l in (src / "data" / "train.jsonl").read_text().splitlines()]
rng = random.Random(SEED)


def rid():
    p = "".join(rng.choice(string.ascii_uppercase) for _ in range(2)); sep = rng.choice(["-", "/", "_", ""])
    return (p.lower() if sep == "_" else p) + sep + "".join(rng.choice(string.digits) for _ in range(rng.choice([3, 4, 4, 5])))


def copy_batch():
    out_ = []
    for _ in range(16):
        ids = tok(" " + " ".join(rid() for _ in range(12)), add_special_tokens=False)["input_ids"][:32]
        ids += [ids[-1]] * (32 - len(ids)); out_.append(ids + ids)
    return torch.tensor(out_)


def reshape(v):
    if any(c.isdigit() for c in v) and " " not in v and rng.random() < 0.5:
        return rid()
    return "".join(rng.choice(string.ascii_uppercase) if c.isupper() else rng.choice(string.ascii_lowercase)
                   if c.islower() else rng.choice(string.digits) if c.isdigit() else c for c in v)


def strings(x):
    if isinstance(x, str):
        yield x
    elif isinstance(x, dict):
        for v in x.values():
            yield from strings(v)
    elif isinstance(x, list):
        for v in x:
            yield from strings(v)


def values(msgs):
    found = set()
    for m in msgs:
        for c in m.get("tool_calls") or []:
            found |= set(strings(json.loads(c["function"]["arguments"])))
        if m["role"] == "tool":
            try:
                found |= set(strings(json.loads(m["content"])))
            except ValueError:
                pass
    return [v for v in found if len(v.strip()) >= 2]


def randomised(r):
    msgs = json.loads(json.dumps(r["messages"]))
    vals = sorted(values(msgs), key=len, reverse=True)
    if not vals:
        return msgs
    new = {v: reshape(v) for v in vals}
    pat = re.compile("|".join(re.escape(v) for v in vals))
    sub = lambda s: pat.sub(lambda m: new[m.group(0)], s) if s else s
    for m in msgs:
        if m["role"] != "system":
            m["content"] = sub(m["content"])
        for c in m.get("tool_calls") or []:
            c["function"]["arguments"] = sub(c["function"]["arguments"])
    return msgs


def encode(r, msgs):
    return tok(render(normalize_messages(msgs), json.loads(r["tools"])))["input_ids"][:2048]


size = ModelSize(name="probe", hidden_size=64, num_layers=4, num_heads=2, vocab_size=1024, max_seq_len=2048,
                 max_steps=steps, batch_size=4, learning_rate=lr)
m = build_model(size, seed=SEED); opt = torch.optim.AdamW(m.parameters(), lr=lr, weight_decay=0.0)
warm = max(1, steps // 20)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warm) * 0.5 * (1 + math.cos(math.pi * min(1.0, s / steps))))
if SEED == 0 and rand:
    r0 = rows[0]; print(json.dumps(randomised(r0)[1:])[:900], flush=True)
t0 = time.time()
for step in range(1, steps + 1):
    b = [encode(r, randomised(r) if rand else r["messages"]) for r in rng.sample(rows, 4)]
    n = max(map(len, b))
    ids = torch.tensor([e + [0] * (n - len(e)) for e in b]); att = torch.tensor([[1] * len(e) + [0] * (n - len(e)) for e in b])
    lab = ids.masked_fill(att == 0, -100)
    loss = m(input_ids=ids, attention_mask=att, labels=lab).loss
    if COPY:
        c = copy_batch(); loss = loss + m(input_ids=c, labels=c).loss
    loss.backward(); torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0); opt.step(); sched.step(); opt.zero_grad()
    if step % 100 == 0:
        print(f"step {step}/{steps} loss {loss.item():.3f} {time.time() - t0:.0f}s", flush=True)
m.save_pretrained(out / "model"); tok.save_pretrained(out / "model")
print(json.dumps({"steps": steps, "rand": rand, "copy": COPY, "seed": SEED, "lr": lr, "loss_on": "all", "train_s": round(time.time() - t0)}), flush=True)
