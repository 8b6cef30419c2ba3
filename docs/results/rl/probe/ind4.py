"""Random-token induction pretraining (vocab 1024), then drill docs: does the circuit carry to ids? usage: ind4.py PRE_STEPS DRILL_STEPS"""
import os, sys, time, json, torch, random
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
from toolscale.config.ladder import ModelSize
from train.proxy import build_model
from transformers import AutoTokenizer
torch.set_num_threads(1); torch.manual_seed(0)
pre, dsteps = int(sys.argv[1]), int(sys.argv[2]); lr = 1e-3
tok = AutoTokenizer.from_pretrained(os.environ.get("PROBES", ".") + "/base/tok")
docs = [json.loads(l)["text"] for l in open(os.environ.get("PROBES", ".") + "/drill/corpus.jsonl")]
enc = [e for e in (tok(d)["input_ids"][:256] for d in docs if d.startswith(("ids:", "{", "the "))) if len(e) == 256]
size = ModelSize(name="p", hidden_size=64, num_layers=4, num_heads=2, vocab_size=1024, max_seq_len=2048, max_steps=1, batch_size=4, learning_rate=lr)
m = build_model(size); opt = torch.optim.AdamW(m.parameters(), lr=lr, weight_decay=0.0)
rng = random.Random(0); t0 = time.time()
L = ["QX/4821", "bn_9302", "TR7716", "ZP-5540", "wk_1187", "HL/3029", "MC8841", "DV-2265"]
test = torch.tensor([tok("ids: " + " ".join(L) + "\nagain: " + " ".join(L))["input_ids"]])
k = (test[0] == tok.convert_tokens_to_ids("ain")).nonzero()[0].item()
def ev(step, loss, tag):
    with torch.no_grad(): lp = torch.log_softmax(m(input_ids=test).logits[0].float(), -1)
    a = -lp[:k - 2].gather(-1, test[0, 1:k - 1, None]).mean().item(); b = -lp[k + 1:-1].gather(-1, test[0, k + 2:, None]).mean().item()
    print(tag, step, round(loss, 3), "nll first", round(a, 2), "again", round(b, 2), f"{time.time()-t0:.0f}s", flush=True)
for step in range(1, pre + dsteps + 1):
    if step <= pre:
        x = torch.randint(3, 1024, (16, 64)); ids = torch.cat([x, x], 1)
    else:
        ids = torch.tensor(rng.sample(enc, 16))
    out = m(input_ids=ids, labels=ids); out.loss.backward()
    torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0); opt.step(); opt.zero_grad()
    if step % 100 == 0: ev(step, out.loss.item(), "pre" if step <= pre else "drill")
