"""Is ambiguity what stops the copy? Repeated sequences (32 + 32 tokens, batch 16, lr 1e-3, build_model, vocabulary
1,024) whose tokens come from an alphabet of K tokens (K small: the same token recurs, as `S`, `-`, `10` do in
ids), or id lists (`ids`: 8 random ids in the environments' shapes, tokenized by the probes' tokenizer, then the
same list). Prints the repeated half's NLL against the first half's. usage: ind5.py K|ids STEPS"""
import os, random, string, sys, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
import torch
from toolscale.config.ladder import ModelSize
from train.proxy import build_model
torch.set_num_threads(1); torch.manual_seed(0)
mode, steps = sys.argv[1], int(sys.argv[2])
rng = random.Random(0)
if mode == "ids":
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(os.environ.get("PROBES", ".") + "/base/tok")
    def rid():
        p = "".join(rng.choice(string.ascii_uppercase) for _ in range(2)); sep = rng.choice(["-", "/", "_", ""])
        return (p.lower() if sep == "_" else p) + sep + "".join(rng.choice(string.digits) for _ in range(4))
    def batch():
        rows = []
        for _ in range(16):
            ids = tok(" " + " ".join(rid() for _ in range(12)), add_special_tokens=False)["input_ids"][:32]
            ids += [ids[-1]] * (32 - len(ids))
            rows.append(ids + ids)
        return torch.tensor(rows)
else:
    alphabet = torch.randperm(1021)[:int(mode)] + 3
    def batch():
        x = alphabet[torch.randint(0, len(alphabet), (16, 32))]
        return torch.cat([x, x], 1)
size = ModelSize(name="p", hidden_size=64, num_layers=4, num_heads=2, vocab_size=1024, max_seq_len=256, max_steps=1,
                 batch_size=16, learning_rate=1e-3)
m = build_model(size); opt = torch.optim.AdamW(m.parameters(), lr=1e-3, weight_decay=0.0)
t0 = time.time()
for step in range(1, steps + 1):
    ids = batch(); out = m(input_ids=ids, labels=ids); out.loss.backward()
    torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0); opt.step(); opt.zero_grad()
    if step % 200 == 0:
        with torch.no_grad():
            lp = torch.log_softmax(m(input_ids=ids).logits.float(), -1)
        nll = -lp[:, :-1].gather(-1, ids[:, 1:, None])[..., 0]
        print(mode, step, "nll first", round(nll[:, :31].mean().item(), 2), "repeated", round(nll[:, 32:].mean().item(), 2),
              f"{time.time() - t0:.0f}s", flush=True)
