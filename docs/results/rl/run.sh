#!/usr/bin/env bash
# Issue 32 at CPU scale: SFT-only against SFT + GRPO (both warm-started on environment episodes), 2 model sizes x
# 2 task counts x 3 seeds (24 real runs), held-out environments, effects with 90% CIs, SFT and RL laws side by
# side. Reuses finished runs when rerun.
# Usage (from the repository root, after `make install`):  bash docs/results/rl/run.sh
# CFG and OUT override the config and the results folder (e.g. deep/: CFG=docs/results/rl/deep/rl4.toml
# OUT=docs/results/rl/deep); the experiment and the runs folder are the config's.
set -euo pipefail
cd "$(dirname "$0")/../../.."
TS=${TS:-.venv/bin/toolscale}
PY=${PY:-.venv/bin/python}
CFG=${CFG:-docs/results/rl/rl.toml}
OUT=${OUT:-docs/results/rl}
EXP=$(grep -m1 '^name = ' "$CFG" | cut -d'"' -f2)
RUNS=$(sed -n 's/^folder = "\.\/\([^"]*\)".*/\1/p' "$CFG" | head -1)
start=$(date +%s)

$TS validate "$CFG"
$TS grid design "$CFG"
$TS launch --config "$CFG" --executor local --wait --resume
$TS status --config "$CFG" --experiment "$EXP"
for bench in indist-env heldout-env; do
  for metric in f1 token_prob; do
    $TS effect --config "$CFG" --experiment "$EXP" --axis grpo_steps --benchmark "$bench" --metric "$metric" \
        --level 0.9 --json > "$OUT/effect-grpo_steps-$bench-$metric.json"
    $TS effect --config "$CFG" --experiment "$EXP" --axis grpo_steps --benchmark "$bench" --metric "$metric" \
        --level 0.9 | tee "$OUT/effect-grpo_steps-$bench-$metric.txt"
  done
done
# SFT and RL laws fitted separately, side by side, over N and task_count (no hold-out: two sizes)
for metric in f1 token_prob; do
  mkdir -p "$OUT/laws-$metric"
  $TS report --config "$CFG" --experiment "$EXP" --benchmark indist-env --metric "$metric" --law saturating \
      --holdout none --bootstrap 100 --compare-stages sft --compare-stages sft,grpo \
      --out "$OUT/laws-$metric" --json > "$OUT/laws-$metric/summary.json" \
      || echo "stage comparison on $metric failed (see above)"
done
$TS export --config "$CFG" --experiment "$EXP" --out "$OUT/runs.csv"
$PY docs/results/rl/curves.py "$RUNS" "$OUT"      # reward curves, fill rates, variance shares, FLOPs per stage
{
  echo "code_version: $(git rev-parse HEAD 2>/dev/null || cat .code_version)"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "wall_s: $(( $(date +%s) - start ))"
  echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB, load $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$OUT/environment.txt"
echo "done: $OUT"
