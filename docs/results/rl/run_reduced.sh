#!/usr/bin/env bash
# Issue 32, reduced to what fitted a shared 2-core machine in one hour: GRPO (6 steps, rl.toml's grpo_* settings)
# from the six warm-started tiny-s models (3 seeds x task_count 64/128) that docs/results/rl/run.sh had finished
# (SFT 40 steps + warm start 150 steps), on each run's own RL environments; then both arms (warm start = SFT-only,
# and GRPO) scored with the same `toolscale eval` call on heldout-env and indist-env (12 episodes each).
# Usage: SNAP=<run.sh's runs/rl folder> OUT=<scratch> bash docs/results/rl/run_reduced.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
TS=${TS:-.venv/bin/toolscale}
SNAP=${SNAP:-runs/rl}
OUT=${OUT:-runs/rl-reduced}
CFG=docs/results/rl/rl.toml
# run id of the SFT-only arm (grpo_steps = 0) : seed : task_count
PAIRS="r-8406353c2108ffc1:0:64 r-0caaa3e5c5c92cc9:0:128 r-7589d3088fc6b678:1:64 r-711cc007910fbbb3:1:128
r-2ebcb89fdf93afb3:2:64 r-987e5da3bbe65380:2:128"
for pair in $PAIRS; do
  IFS=: read -r run seed tc <<< "$pair"
  w="$SNAP/work/$run"; o="$OUT/s$seed-t$tc"; mkdir -p "$o"
  t0=$(date +%s)
  $TS train --objective grpo --config "$CFG" --envs "$w/envs.jsonl" --init "$w/warmstart" --out "$o/grpo" \
      --max-steps 6 --seed "$seed" --threads 1 --json > "$o/grpo.json" 2> "$o/grpo.err"
  echo "$pair grpo rc=$? $(( $(date +%s) - t0 ))s"
  for bench in heldout-env indist-env; do
    for arm in grpo sft; do
      model="$o/grpo"; [ "$arm" = sft ] && model="$w/warmstart"
      t0=$(date +%s)
      $TS eval --model "$model" --benchmark "$bench" --limit 12 --seed 0 --threads 1 --json \
          > "$o/eval-$arm-$bench.json" 2> "$o/eval-$arm-$bench.err"
      echo "$pair eval $arm $bench rc=$? $(( $(date +%s) - t0 ))s"
    done
  done
done
echo "done"
