"""Plain-torch induction check: build_model on random-token repeats (vocab 256, 32 + 32 tokens, batch 16).
usage: ind.py HIDDEN LAYERS HEADS LR STEPS; prints the second half's NLL (0 when the model copies)"""
import sys, time, torch
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
from toolscale.config.ladder import ModelSize
from train.proxy import build_model
torch.set_num_threads(1); torch.manual_seed(0)
h, L, heads, lr = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
size = ModelSize(name="p", hidden_size=h, num_layers=L, num_heads=heads, vocab_size=256, max_seq_len=256, max_steps=1, batch_size=4, learning_rate=lr)
m = build_model(size)
opt = torch.optim.AdamW(m.parameters(), lr=lr, weight_decay=0.0)
t0 = time.time()
for step in range(1, int(sys.argv[5]) + 1):
    x = torch.randint(3, 256, (16, 32)); ids = torch.cat([x, x], 1)
    out = m(input_ids=ids, labels=ids)
    out.loss.backward(); torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0); opt.step(); opt.zero_grad()
    if step % 100 == 0:
        with torch.no_grad():
            lp = torch.log_softmax(m(input_ids=ids).logits.float(), -1)
            nll2 = -lp[:, 32:-1].gather(-1, ids[:, 33:, None]).mean().item()
        print(step, round(out.loss.item(), 3), "second-half nll", round(nll2, 3), f"{time.time()-t0:.0f}s", flush=True)
