"""Does the proxy learn a copy that matches content rather than a fixed offset? Random tokens (vocabulary 1,024,
batch 16, lr 1e-3, build_model), 32 tokens, then a gap of g random tokens (g drawn uniformly in 0..GMAX at each
step, one g per batch), then the same 32 tokens. Every 500 steps: the repeat's NLL after gaps of 0, GMAX/2, GMAX
and 2 GMAX (the last never trained), against the first half's. GMIN (default 0) raises the smallest gap drawn
(17 and 52: the RL environments' range). usage: [SEED=0] [GMIN=0] ind6.py GMAX STEPS"""
import os, random, sys, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
import torch
from toolscale.config.ladder import ModelSize
from train.proxy import build_model
SEED = int(os.environ.get("SEED", "0")); GMIN = int(os.environ.get("GMIN", "0"))
torch.set_num_threads(1); torch.manual_seed(SEED)
gmax, steps = int(sys.argv[1]), int(sys.argv[2])
rng = random.Random(SEED)
def batch(g):
    x = torch.randint(3, 1024, (16, 32))
    return torch.cat([x, torch.randint(3, 1024, (16, g)), x], 1)
size = ModelSize(name="p", hidden_size=64, num_layers=4, num_heads=2, vocab_size=1024, max_seq_len=512, max_steps=1,
                 batch_size=16, learning_rate=1e-3)
m = build_model(size, seed=SEED); opt = torch.optim.AdamW(m.parameters(), lr=1e-3, weight_decay=0.0)
t0 = time.time()
for step in range(1, steps + 1):
    ids = batch(rng.randint(GMIN, gmax)); m(input_ids=ids, labels=ids).loss.backward()
    torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0); opt.step(); opt.zero_grad()
    if step % 500 == 0:
        row = {}
        for g in (0, gmax // 2, gmax, 2 * gmax):
            ids = batch(g)
            with torch.no_grad():
                lp = torch.log_softmax(m(input_ids=ids).logits.float(), -1)
            nll = -lp[:, :-1].gather(-1, ids[:, 1:, None])[..., 0]
            row[g] = (round(nll[:, :31].mean().item(), 2), round(nll[:, -32:].mean().item(), 2))
        print(f"gmin {GMIN} gmax {gmax} step {step} (first, repeat) NLL by gap {row} {time.time() - t0:.0f}s", flush=True)
