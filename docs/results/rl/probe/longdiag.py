"""Probe: does a model copy a 32-token id list across a 0-960-token episode slice? NLL of the first and the
repeated list (mixwarm.py LONG's sequences, fresh ids) after gaps of 0, 240 and 960 tokens (or GAPS), 16 lists each. The repeat starts 32 + gap tokens after the list;
in the RL environments the call writes an id 49-84 tokens after the id's place in the question (gaps 17-52).
PREFIX (default 0) puts that many tokens of episode text before the list, so that the list sits where an episode's
ids sit (mixwarm.py's drills always start at position 0).
usage: [GAPS=0,240,960] [PREFIX=0] longdiag.py DIR SRC_PROBE"""
import json, os, random, string, sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
from train.chat import normalize_messages, render
d, src = Path(sys.argv[1]), Path(sys.argv[2])
torch.set_num_threads(1)
tok = AutoTokenizer.from_pretrained(d / "model"); m = AutoModelForCausalLM.from_pretrained(d / "model").eval()
rows = [json.loads(l) for l in (src / "data" / "train.jsonl").read_text().splitlines()]
eps = [tok(render(normalize_messages(r["messages"]), json.loads(r["tools"])))["input_ids"][:2048] for r in rows[:200]]
rng = random.Random(123)
PREFIX = int(os.environ.get("PREFIX", "0")); stream = [t for e in eps for t in e]
def rid():
    p = "".join(rng.choice(string.ascii_uppercase) for _ in range(2)); sep = rng.choice(["-", "/", "_", ""])
    return (p.lower() if sep == "_" else p) + sep + "".join(rng.choice(string.digits) for _ in range(rng.choice([3, 4, 4, 5])))
out = {}
for gap in map(int, os.environ.get("GAPS", "0,240,960").split(",")):
    a_, b_ = [], []
    for _ in range(16):
        ids = tok(" " + " ".join(rid() for _ in range(12)), add_special_tokens=False)["input_ids"][:32]
        e = rng.choice(eps); a = rng.randint(0, max(0, len(e) - gap)); p0 = rng.randint(0, len(stream) - PREFIX)
        pre = stream[p0:p0 + PREFIX] if PREFIX else []; seq = pre + ids + e[a:a + gap] + ids
        with torch.no_grad():
            lp = torch.log_softmax(m(torch.tensor([seq])).logits[0].float(), -1)
        nll = [-lp[i - 1, seq[i]].item() for i in range(1, len(seq))]
        first = nll[len(pre):len(pre) + 31] if pre else nll[:31]
        a_.append(sum(first) / 31); b_.append(sum(nll[-32:]) / 32)
    out[gap] = {"first_list_nll": round(sum(a_) / 16, 3), "repeat_nll": round(sum(b_) / 16, 3)}
print(json.dumps({"model": str(d), "prefix": PREFIX, "nll_by_gap": out}))
