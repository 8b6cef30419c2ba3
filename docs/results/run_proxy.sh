#!/usr/bin/env bash
# The committed CPU proxy experiment: 48 real training runs (3 model sizes), fit, report, allocation.
# Usage (from the repository root, after `make install`):  bash docs/results/run_proxy.sh
# Takes about an hour on a 2-core machine. Reuses finished runs when rerun.
set -euo pipefail
cd "$(dirname "$0")/../.."
TS=.venv/bin/toolscale
CFG=docs/results/proxy.toml
OUT=docs/results
EXP=proxy-cpu
BENCH=heldout-calls
METRIC=token_prob

$TS validate "$CFG"
$TS grid design "$CFG"
$TS launch --config "$CFG" --executor local --wait --resume
$TS status --config "$CFG" --experiment "$EXP"
$TS fit --config "$CFG" --experiment "$EXP" --benchmark "$BENCH" --metric "$METRIC" --bootstrap 400 --json > "$OUT/fit.json"
$TS report --config "$CFG" --experiment "$EXP" --benchmark "$BENCH" --metric "$METRIC" --out "$OUT/report"
$TS allocate --config "$CFG" --experiment "$EXP" --benchmark "$BENCH" --budget 5000 --json > "$OUT/allocation.json"
$TS allocate --config "$CFG" --experiment "$EXP" --benchmark "$BENCH" --budget 5000 > "$OUT/allocation.txt"
$TS allocate --config "$CFG" --experiment "$EXP" --benchmark "$BENCH" --budget 1000 --sweep 2000:40000:8 \
    --plot "$OUT/allocation_sweep.png" --json > "$OUT/allocation_sweep.json"
$TS export --config "$CFG" --experiment "$EXP" --out "$OUT/runs.csv"
{
  echo "code_version: $(git rev-parse HEAD)"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
  echo "python: $(.venv/bin/python --version 2>&1); torch $(.venv/bin/python -c 'import torch; print(torch.__version__)')"
} > "$OUT/environment.txt"
echo "done: $OUT/report/, $OUT/fit.json, $OUT/allocation.json"
