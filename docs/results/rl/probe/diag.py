"""Per-token probability on a few drill documents of a corpus: is the repeated half (after "again:") copied?
usage: diag.py MODEL_DIR CORPUS_JSONL"""
import json, sys, math, torch
from transformers import AutoModelForCausalLM, AutoTokenizer
d = sys.argv[1]; torch.set_num_threads(1)
tok = AutoTokenizer.from_pretrained(d); model = AutoModelForCausalLM.from_pretrained(d).eval()
print(type(model).__name__, model.config.to_dict().get("max_position_embeddings"), model.config.to_dict().get("rope_theta"))
docs = [json.loads(l)["text"] for l in open(sys.argv[2])]
dr = [t for t in docs if t.startswith("ids:") or t.startswith("{") or t.startswith("the ")][:5]
for t in dr[:5]:
    ids = tok(t)["input_ids"][:600]
    with torch.no_grad(): lp = torch.log_softmax(model(torch.tensor([ids])).logits[0].float(), -1)
    toks = tok.convert_ids_to_tokens(ids)
    # find "again" position
    txt = t[:200]
    ps = [math.exp(lp[i-1, ids[i]].item()) for i in range(1, len(ids))]
    k = next((i for i, s in enumerate(toks) if "again" in s), None)
    print(repr(txt[:80]), "again at", k, "first part mean p", sum(ps[:k-1])/max(1,k-1) if k else None, "after", sum(ps[k:k+40])/40 if k else None)
    print(" ".join(f"{s}:{p:.2f}" for s, p in zip(toks[1:120], ps[:119])))
