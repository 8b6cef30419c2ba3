"""Probe (issue 32): does an LM stage with copy drills teach the policy to copy ids?
usage: [LR=3e-3] drill.py OUT LM_STEPS SFT_STEPS DRILLS(0=episodes only) [SRC_PROBE]"""
import json, random, string, sys, time, shutil
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
from toolscale.config.ladder import ModelSize
from train.chat import normalize_messages, render
from train.grpo import rl_envs, warm_envs, golden_rows
from train.midtrain import train_midtrain
from train.sft import train_sft
from train.tokenizer import train_tokenizer
from synth.envs.io import dump_envs

out, lm, sft, n_drill = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
import os; LR = float(os.environ.get("LR", "3e-3"))
src = Path(sys.argv[5]) if len(sys.argv) > 5 else None
out.mkdir(parents=True, exist_ok=True)
t0 = time.time()
if src is None:
    rl = rl_envs(12, 0)
    dump_envs(rl, out / "rl_envs.jsonl"); dump_envs(rl_envs(12, 1), out / "rl_envs_1.jsonl")
    rows = [r for r in golden_rows(warm_envs(3000, 0, rl)) if json.loads(r["meta"])["env_reward"] >= 1 - 1e-9]
    (out / "data").mkdir(exist_ok=True)
    (out / "data" / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    texts = [render(normalize_messages(r["messages"]), json.loads(r["tools"])) for r in rows]
    train_tokenizer(texts, 1024).save_pretrained(out / "tok")
else:
    for f in ("rl_envs.jsonl", "rl_envs_1.jsonl", "data", "tok"):
        (shutil.copytree if (src / f).is_dir() else shutil.copy)(src / f, out / f)
    rows = [json.loads(l) for l in (out / "data" / "train.jsonl").read_text().splitlines()]
    texts = [render(normalize_messages(r["messages"]), json.loads(r["tools"])) for r in rows]
print(f"rows {len(rows)} in {time.time()-t0:.0f}s", flush=True)

rng = random.Random(0)
KEYS = ["flight_id", "order_id", "employee_id", "account_id", "booking_id", "event_id", "user_id", "file_id",
        "item_id", "ref", "code", "key", "record_id", "case_id", "unit_id", "lot_id"]
def rid():
    p = "".join(rng.choice(string.ascii_uppercase) for _ in range(2))
    sep = rng.choice(["-", "/", "_", ""])
    if sep == "_" or rng.random() < 0.2: p = p.lower()
    return p + sep + "".join(rng.choice(string.digits) for _ in range(rng.choice([3, 4, 4, 5])))
def drill():
    if rng.random() < 0.5:   # repeat a list: induction
        ids = [rid() for _ in range(rng.randint(8, 24))]
        return "ids: " + " ".join(ids) + "\nagain: " + " ".join(ids) + "\n"
    keys = rng.sample(KEYS, rng.randint(3, 8))   # key -> value recall, in the call's JSON shape
    vals = {k: rid() for k in keys}
    ctx = json.dumps(vals) if rng.random() < 0.5 else ". ".join(f"the {k} is {v}" for k, v in vals.items())
    qs = rng.sample(keys, len(keys))
    return ctx + "\n" + "\n".join('<tool_call>{"name": "get", "arguments": {"' + k + '": "' + vals[k] + '"}}</tool_call>' for k in qs) + "\n"
docs = texts + ["".join(drill() for _ in range(6)) for _ in range(n_drill)]
rng.shuffle(docs)
(out / "corpus.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in docs))
size = ModelSize(name="probe", hidden_size=64, num_layers=4, num_heads=2, vocab_size=1024, max_seq_len=2048,
                 max_steps=lm, batch_size=4, learning_rate=LR)
t1 = time.time()
def on_step(s, m, loss):
    if s % 100 == 0: print(f"step {s}/{m} loss {loss} {time.time()-t1:.0f}s", flush=True)
train_midtrain(out / "corpus.jsonl", size, out / "mid", max_steps=lm, threads=1, tokenizer_dir=out / "tok", on_step=on_step)
t2 = time.time()
train_sft(out / "data", size, out / "model", max_steps=sft, threads=1, learning_rate=LR, save_steps=0,
          init=out / "mid", on_step=on_step)
print(json.dumps({"lm_steps": lm, "sft_steps": sft, "drills": n_drill, "lm_s": round(t2 - t1), "sft_s": round(time.time() - t2)}), flush=True)
