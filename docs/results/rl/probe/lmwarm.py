"""Probe: LM loss on every token of the golden episodes (train_midtrain), then the assistant-only warm start.
usage: lmwarm.py OUT SRC_PROBE LM_STEPS SFT_STEPS HIDDEN LAYERS"""
import json, sys, time, shutil
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
from toolscale.config.ladder import ModelSize
from train.chat import normalize_messages, render
from train.midtrain import train_midtrain
from train.sft import train_sft
out, src = Path(sys.argv[1]), Path(sys.argv[2])
lm, sft, hidden, layers = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
out.mkdir(parents=True, exist_ok=True)
for f in ("rl_envs.jsonl", "rl_envs_1.jsonl"):
    shutil.copy(src / f, out / f)
(out / "data").mkdir(exist_ok=True)
shutil.copy(src / "data" / "train.jsonl", out / "data" / "train.jsonl")
rows = [json.loads(l) for l in (out / "data" / "train.jsonl").read_text().splitlines()]
texts = [render(normalize_messages(r["messages"]), json.loads(r["tools"])) for r in rows]
(out / "corpus.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
size = ModelSize(name="probe", hidden_size=hidden, num_layers=layers, num_heads=max(1, hidden // 32),
                 vocab_size=1024, max_seq_len=2048, max_steps=lm, batch_size=4, learning_rate=3e-3)
t0 = time.time()
def on_step(s, m, loss):
    if s % 50 == 0: print(f"step {s}/{m} loss {loss} {time.time()-t0:.0f}s", flush=True)
st = train_midtrain(out / "corpus.jsonl", size, out / "mid", max_steps=lm, threads=1, tokenizer_dir=src / "model",
                    on_step=on_step)
print("lm done", st.final_loss if hasattr(st, "final_loss") else st, round(time.time() - t0), flush=True)
t1 = time.time()
st = train_sft(out / "data", size, out / "model", max_steps=sft, threads=1, learning_rate=3e-3, save_steps=0,
               init=out / "mid", on_step=on_step)
print(json.dumps({"lm_steps": lm, "sft_steps": sft, "hidden": hidden, "layers": layers,
                  "lm_s": round(t1 - t0), "sft_s": round(time.time() - t1)}), flush=True)
