#!/usr/bin/env bash
# Seed 001 at CPU scale: mid-training on synth's corpus vs SFT alone at equal total FLOPs, and SFT vs SFT+GRPO,
# at two model sizes with three seeds (24 real runs). Reuses finished runs when rerun.
# Usage (from the repository root, after `make install`):  bash docs/results/midtrain/run.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."
TS=.venv/bin/toolscale
CFG=docs/results/midtrain/midtrain.toml
OUT=docs/results/midtrain
EXP=midtrain-cpu
BENCH=indist-calls
start=$(date +%s)

$TS validate "$CFG"
$TS grid design "$CFG"
$TS launch --config "$CFG" --executor local --wait --resume
$TS status --config "$CFG" --experiment "$EXP"
for bench in indist-calls heldout-servers; do
  for metric in bpb token_prob; do
    for axis in midtrain_tokens grpo_steps; do
      $TS effect --config "$CFG" --experiment "$EXP" --axis "$axis" --benchmark "$bench" --metric "$metric" --json \
          > "$OUT/effect-$axis-$bench-$metric.json"
      $TS effect --config "$CFG" --experiment "$EXP" --axis "$axis" --benchmark "$bench" --metric "$metric" \
          | tee "$OUT/effect-$axis-$bench-$metric.txt"
    done
  done
done
# SFT and RL laws fitted separately, side by side (no hold-out: two sizes)
$TS report --config "$CFG" --experiment "$EXP" --benchmark "$BENCH" --metric token_prob --law saturating \
    --holdout none --bootstrap 100 --compare-stages sft --compare-stages sft,grpo \
    --out "$OUT" --json > "$OUT/stages-summary.json" || echo "stage comparison failed (see above)"
$TS export --config "$CFG" --experiment "$EXP" --out "$OUT/runs.csv"
{
  echo "code_version: $(git rev-parse HEAD)"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "wall_s: $(( $(date +%s) - start ))"
  echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB, load $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$OUT/environment.txt"
echo "done: $OUT"
