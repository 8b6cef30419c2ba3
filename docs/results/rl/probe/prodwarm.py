"""Probe (issue 32): the product's warm start with copy drills (``train.grpo.warm_start(copy_drills=N)``,
``[train].warmstart_copy_drills``), from scratch, on the golden episodes of ``warm_envs(3000, 0)``: does the
product path give the copying policy that ``mixwarm.py LONG=4`` gave? A fresh 4-layer, hidden-64 proxy with the
probe tokenizer of SRC_PROBE (a 1-step run at lr 1e-12 as the init that warm_start needs), batch 4 episodes, loss
on every token, AdamW at LR with the product's schedule. N: until 2026-12-07 (first form) one row of N drill turns
per episode, mixed into the data; since the second form, N fresh drills per step under their own loss
(``train.drills.CopyDrills``), summed with the episodes' (``drill_rows`` below is 0 then). Writes OUT/model,
OUT/rl_envs*.jsonl (for copyprob.py) and a JSON line with the timing.
usage: [SEED=0] [THREADS=1] prodwarm.py OUT SRC_PROBE STEPS N LR"""
import json, os, shutil, sys, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
from toolscale.config.ladder import ModelSize
from train.grpo import rl_envs, warm_envs, warm_start
from train.sft import train_sft
out, src, steps, turns, lr = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
SEED, THREADS = int(os.environ.get("SEED", "0")), int(os.environ.get("THREADS", "1"))
out.mkdir(parents=True, exist_ok=True)
for f in ("rl_envs.jsonl", "rl_envs_1.jsonl"):
    shutil.copy(src / f, out / f)
size = ModelSize(name="probe", hidden_size=64, num_layers=4, num_heads=2, vocab_size=1024, max_seq_len=2048,
                 max_steps=steps, batch_size=4, learning_rate=lr)
init = out / "init"
if not (init / "run.json").is_file():   # warm_start starts from a finished run: one step at lr 1e-12 is the fresh init
    train_sft(src / "data", size, init, max_steps=1, seed=SEED, tokenizer_dir=src / "tok", learning_rate=1e-12,
              save_steps=0)
t0 = time.time()
warm = warm_envs(3000, 0, rl_envs(12, 0))
print(f"warm envs {len(warm)} in {time.time() - t0:.0f}s", flush=True)
t1 = time.time()
stats = warm_start(warm, init, size, out / "model", steps=steps, seed=SEED, threads=THREADS, learning_rate=lr,
                   loss_on="all", copy_drills=turns, on_step=lambda s, m, loss: s % 100 or print(
                       f"step {s}/{m} loss {loss} {time.time() - t1:.0f}s", flush=True))
rows = (out / "model" / "data" / "train.jsonl").read_text().splitlines()
print(json.dumps({"steps": steps, "turns": turns, "seed": SEED, "lr": lr, "rows": len(rows),
                  "drill_rows": sum(json.loads(json.loads(r)["meta"]).get("drill", False) for r in rows), "final_loss": stats.final_loss,
                  "train_s": round(time.time() - t1)}), flush=True)
