#!/usr/bin/env bash
# The issue-29 experiment with log-spaced checkpoints (proxy.toml here; README.md has the declaration): the steps
# of docs/results/run_proxy.sh in the same order, the registry export and the environment written before
# allocate and verify (which run last, and only with VERIFY=1).
# Usage (from the repository root, after `make install`):  bash docs/results/logspaced/run.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."
TS=${TS:-.venv/bin/toolscale}
CFG=docs/results/logspaced/proxy.toml
OUT=docs/results/logspaced
EXP=proxy-log
t0=$(date +%s)
stamp() { echo "[$(( ($(date +%s) - t0) / 60 )) min] $*"; }
stamp "validate"; $TS validate "$CFG"
stamp "learning-rate scan"; $TS lr-scan "$CFG" --json > "$OUT/lr_scan.json"
stamp "design"; $TS grid design "$CFG" --json > "$OUT/design.json"
stamp "launch"; $TS launch --config "$CFG" --executor local --wait --resume
$TS status --config "$CFG" --experiment "$EXP"
for B in indist-calls heldout-servers; do
  stamp "fit $B/bpb (early-stopped envelope)"
  $TS fit --config "$CFG" --experiment "$EXP" --benchmark "$B" --metric bpb --law auto --holdout split \
      --target envelope --bootstrap 100 --json > "$OUT/fit-$B.json"
  $TS report --config "$CFG" --experiment "$EXP" --benchmark "$B" --metric bpb --law auto --holdout split \
      --target envelope --bootstrap 100 --out "$OUT/report-$B" > /dev/null
done
stamp "fit indist-calls/bpb on the final checkpoints (for comparison; not stored)"
$TS fit --config "$CFG" --experiment "$EXP" --benchmark indist-calls --metric bpb --law auto --holdout split \
    --target final --bootstrap 100 --no-store --json > "$OUT/fit-indist-calls-final.json"
$TS export --config "$CFG" --experiment "$EXP" --out "$OUT/runs.csv"
{
  echo "config: $CFG"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "wall_minutes: $(( ($(date +%s) - t0) / 60 ))"
  echo "load_average_at_end: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
  echo "python: $(.venv/bin/python --version 2>&1); torch $(.venv/bin/python -c 'import torch; print(torch.__version__)' 2>/dev/null)"
} > "$OUT/environment.txt"
if [ "${VERIFY:-0}" = 1 ]; then
  stamp "allocate and verify (3 seeds)"
  $TS allocate --config "$CFG" --experiment "$EXP" --benchmark indist-calls --budget 5000 --json > "$OUT/allocation.json" || true
  $TS verify --config "$CFG" --experiment "$EXP" --benchmark indist-calls --budget 5000 --seeds 3 \
      --arms allocator,diversity_only,best_observed --plot "$OUT/verification.png" --json > "$OUT/verification.json" || true
fi
stamp "done: $OUT"
