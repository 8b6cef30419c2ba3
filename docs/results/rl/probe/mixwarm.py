"""Probe (issue 32): keep copies dense throughout. A plain-torch warm start from scratch: every step is one batch of
4 golden episodes of SRC_PROBE (loss on every token, cut at 2,048) plus, when COPY = 1, one batch of 16 repeated id
lists (32 + 32 tokens, the ``ind5.py ids`` task); the two losses are summed. AdamW at LR, 5% warm-up, cosine.
With LONG = 1 (2026-12-07) the copies are long-range instead: each of 8 sequences is 32 id tokens, then a slice of
0-960 tokens of a random episode, then the same ids, so that the copy spans the distance from an episode's question
to its call. LONG = 2 draws the slice's length log-uniformly instead (many short gaps, some long ones), so
that a copy circuit can form on short gaps and must match content, not a fixed offset, to work on all of them.
LONG = 3 is a curriculum: no gap for the first quarter of the steps (the fixed-offset copy that LONG = 0 teaches),
then gaps drawn uniformly up to a bound that grows linearly to 960 tokens at the last step. LONG = 4 draws gaps
uniformly from 17 to 52 tokens (the RL environments' copy distances), 16 sequences per step as with LONG = 0.
THREADS (default 1) sets torch's threads.
usage: [SEED=0] [LONG=0] mixwarm.py OUT SRC_PROBE STEPS COPY(0|1) LR (SEED sets the weights, the episode order and
the ids)"""
import json, math, os, random, shutil, string, sys, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
import torch
from transformers import AutoTokenizer
from toolscale.config.ladder import ModelSize
from train.chat import normalize_messages, render
from train.proxy import build_model
out, src, steps, copy, lr = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
out.mkdir(parents=True, exist_ok=True)
SEED = int(os.environ.get("SEED", "0")); LONG = int(os.environ.get("LONG", "0"))
torch.set_num_threads(int(os.environ.get("THREADS", "1"))); torch.manual_seed(SEED)
for f in ("rl_envs.jsonl", "rl_envs_1.jsonl"):
    shutil.copy(src / f, out / f)
tok = AutoTokenizer.from_pretrained(src / "tok")
rows = [json.loads(l) for l in (src / "data" / "train.jsonl").read_text().splitlines()]
eps = [tok(render(normalize_messages(r["messages"]), json.loads(r["tools"])))["input_ids"][:2048] for r in rows]
size = ModelSize(name="probe", hidden_size=64, num_layers=4, num_heads=2, vocab_size=1024, max_seq_len=2048,
                 max_steps=steps, batch_size=4, learning_rate=lr)
m = build_model(size, seed=SEED); opt = torch.optim.AdamW(m.parameters(), lr=lr, weight_decay=0.0)
warm = max(1, steps // 20)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warm) * 0.5 * (1 + math.cos(math.pi * min(1.0, s / steps))))
rng = random.Random(SEED)
def rid():
    p = "".join(rng.choice(string.ascii_uppercase) for _ in range(2)); sep = rng.choice(["-", "/", "_", ""])
    return (p.lower() if sep == "_" else p) + sep + "".join(rng.choice(string.digits) for _ in range(rng.choice([3, 4, 4, 5])))
def id_list():
    ids = tok(" " + " ".join(rid() for _ in range(12)), add_special_tokens=False)["input_ids"][:32]
    return ids + [ids[-1]] * (32 - len(ids))
def gap(e):
    if LONG == 4:
        return min(len(e), rng.randint(17, 52))
    if LONG == 3:
        return min(len(e), rng.randint(0, int(960 * max(0.0, (step / steps - 0.25) / 0.75))))
    return min(len(e), rng.randint(0, 960) if LONG == 1 else int(math.exp(rng.uniform(0, math.log(961)))) - 1)
def copy_batch():
    if not LONG:
        return torch.tensor([ids + ids for ids in (id_list() for _ in range(16))]), None
    seqs = []
    for _ in range(16 if LONG == 4 else 8):
        ids, e = id_list(), rng.choice(eps); k = gap(e); a = rng.randint(0, len(e) - k)
        seqs.append(ids + e[a:a + k] + ids)
    n = max(map(len, seqs))
    return (torch.tensor([q + [0] * (n - len(q)) for q in seqs]),
            torch.tensor([[1] * len(q) + [0] * (n - len(q)) for q in seqs]))
t0 = time.time()
for step in range(1, steps + 1):
    b = rng.sample(eps, 4); n = max(map(len, b))
    ids = torch.tensor([e + [0] * (n - len(e)) for e in b]); att = torch.tensor([[1] * len(e) + [0] * (n - len(e)) for e in b])
    lab = ids.masked_fill(att == 0, -100)
    loss = m(input_ids=ids, attention_mask=att, labels=lab).loss
    lc = None
    if copy:
        c, ca = copy_batch()
        lc = m(input_ids=c, attention_mask=ca, labels=c if ca is None else c.masked_fill(ca == 0, -100)).loss
        loss = loss + lc
    loss.backward(); torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0); opt.step(); sched.step(); opt.zero_grad()
    if step % 100 == 0:
        print(f"step {step}/{steps} loss {loss.item():.3f} copy {lc.item() if lc is not None else '-'} {time.time() - t0:.0f}s", flush=True)
m.save_pretrained(out / "model"); tok.save_pretrained(out / "model")
print(json.dumps({"steps": steps, "copy": copy, "long": LONG, "seed": SEED, "lr": lr, "loss_on": "all", "train_s": round(time.time() - t0)}), flush=True)
