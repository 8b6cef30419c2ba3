#!/usr/bin/env bash
# Issue 32 through `toolscale launch` with the copy drills (rl4.toml here): SFT-only against SFT + GRPO at one
# 4-layer size, 3 seeds; the first GRPO step's groups with reward variance, and the held-out effect with its 90% CI.
# Usage (from the repository root, after `make install`):  bash docs/results/rl/deep/run.sh
set -euo pipefail
cd "$(dirname "$0")/../../../.."
TS=${TS:-.venv/bin/toolscale}
PY=${PY:-.venv/bin/python}
CFG=docs/results/rl/deep/rl4.toml
OUT=docs/results/rl/deep
EXP=rl-deep
start=$(date +%s)
$TS validate "$CFG"
$TS grid design "$CFG"
$TS launch --config "$CFG" --executor local --wait --resume
$TS status --config "$CFG" --experiment "$EXP"
for bench in indist-env heldout-env; do
  $TS effect --config "$CFG" --experiment "$EXP" --axis grpo_steps --benchmark "$bench" --metric f1 \
      --level 0.9 --json > "$OUT/effect-grpo_steps-$bench-f1.json"
  $TS effect --config "$CFG" --experiment "$EXP" --axis grpo_steps --benchmark "$bench" --metric f1 \
      --level 0.9 | tee "$OUT/effect-grpo_steps-$bench-f1.txt"
done
$TS export --config "$CFG" --experiment "$EXP" --out "$OUT/runs.csv"
$PY docs/results/rl/curves.py runs/rl-deep "$OUT"
for d in runs/rl-deep/work/*/warmstart; do
  [ -f "$d/copy_drills.json" ] && echo "$(basename "$(dirname "$d")") $($PY -c 'import json,sys; s=json.load(open(sys.argv[1]))["summary"] if "summary" in json.load(open(sys.argv[1])) else json.load(open(sys.argv[1])); print(json.dumps(s)[:300])' "$d/copy_drills.json")"
done > "$OUT/copy_drills.txt" || true
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "wall_s: $(( $(date +%s) - start ))"
  echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB, load $(cut -d' ' -f1-3 /proc/loadavg), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
} > "$OUT/environment.txt"
echo "done: $OUT"
