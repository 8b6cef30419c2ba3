"""The same induction check with stock transformers configs (gpt2 or llama, 4 layers, hidden 64, 2 heads).
usage: ind2.py gpt2|llama STEPS LR"""
import sys, time, torch
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM
torch.set_num_threads(1); torch.manual_seed(0)
kind, steps, lr = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
if kind == "gpt2":
    m = GPT2LMHeadModel(GPT2Config(vocab_size=256, n_positions=256, n_embd=64, n_layer=4, n_head=2))
else:
    m = LlamaForCausalLM(LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=256, num_hidden_layers=4, num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=256))
opt = torch.optim.AdamW(m.parameters(), lr=lr, weight_decay=0.0)
t0 = time.time()
for step in range(1, steps + 1):
    x = torch.randint(3, 256, (16, 32)); ids = torch.cat([x, x], 1)
    out = m(input_ids=ids, labels=ids)
    out.loss.backward(); torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0); opt.step(); opt.zero_grad()
    if step % 250 == 0:
        with torch.no_grad():
            lp = torch.log_softmax(m(input_ids=ids).logits.float(), -1)
            nll2 = -lp[:, 32:-1].gather(-1, ids[:, 33:, None]).mean().item()
        print(kind, step, round(out.loss.item(), 3), "second-half nll", round(nll2, 3), f"{time.time()-t0:.0f}s", flush=True)
