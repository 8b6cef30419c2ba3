"""Probe (issue 32): warm-start SFT from scratch on golden episodes; does the policy learn to copy ids?
usage: [DIGITS=single] warm.py OUT N_WARM STEPS HIDDEN LAYERS [LR [SRC_PROBE|- [LOSS_ON]]]"""
import json, os, sys, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
from toolscale.config.ladder import ModelSize
from train.grpo import rl_envs, warm_envs, golden_rows
from train.sft import train_sft
DIGITS = os.environ.get("DIGITS", "merged")
if DIGITS == "single":  # every digit its own token (Qwen's rule): train_tokenizer's ByteLevel, after a digit split
    import types
    import tokenizers
    from tokenizers import pre_tokenizers as _pt

    def _byte_level(**kw):
        return _pt.Sequence([_pt.Digits(individual_digits=True), _pt.ByteLevel(**kw)])
    _byte_level.alphabet = _pt.ByteLevel.alphabet
    tokenizers.pre_tokenizers = types.SimpleNamespace(ByteLevel=_byte_level)  # train_tokenizer imports it late
from synth.envs.io import dump_envs

out, n, steps, hidden, layers = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
lr = float(sys.argv[6]) if len(sys.argv) > 6 else 3e-3
out.mkdir(parents=True, exist_ok=True)
t0 = time.time()
rl = rl_envs(12, 0)
dump_envs(rl, out / "rl_envs.jsonl")
dump_envs(rl_envs(12, 1), out / "rl_envs_1.jsonl")
src = Path(sys.argv[7]) if len(sys.argv) > 7 and sys.argv[7] != "-" else None   # reuse another probe's golden rows
loss_on = sys.argv[8] if len(sys.argv) > 8 else "assistant"
(out / "data").mkdir(exist_ok=True)
if src is not None:
    (out / "data" / "train.jsonl").write_text((src / "data" / "train.jsonl").read_text())
    rows = (out / "data" / "train.jsonl").read_text().splitlines()
else:
    warm = warm_envs(n, 0, rl)
    rows = [r for r in golden_rows(warm) if json.loads(r["meta"])["env_reward"] >= 1 - 1e-9]
    (out / "data" / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
print(f"golden rows {len(rows)}/{n} in {time.time()-t0:.0f}s", flush=True)
size = ModelSize(name="probe", hidden_size=hidden, num_layers=layers, num_heads=max(1, hidden // 32),
                 vocab_size=1024, max_seq_len=2048, max_steps=steps, batch_size=4, learning_rate=lr)
t1 = time.time()
last = {}
def on_step(s, m, loss):
    if loss is not None: last["loss"] = loss
    if s % 50 == 0: print(f"step {s}/{m} loss {loss} {time.time()-t1:.0f}s", flush=True)
st = train_sft(out / "data", size, out / "model", max_steps=steps, threads=1, learning_rate=lr, save_steps=0,
               on_step=on_step, loss_on=loss_on)
print(json.dumps({"n_warm": n, "rows": len(rows), "steps": steps, "hidden": hidden, "layers": layers, "lr": lr, "loss_on": loss_on, "digits": DIGITS,
                  "final_loss": last.get("loss"), "train_s": round(time.time() - t1)}), flush=True)
