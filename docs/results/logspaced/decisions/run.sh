#!/usr/bin/env bash
# Issue 29's decision-accuracy extension (README.md here): the log-spaced experiment's other 6 design recipes at
# the held-out rung p-l, 3 seeds each, as held-out runs; the same fits; the analysis. Reuses finished runs.
# Usage (from the repository root, after `make install` and the log-spaced experiment, runs/proxy-log):
#   bash docs/results/logspaced/decisions/run.sh
set -euo pipefail
cd "$(dirname "$0")/../../../.."
TS=${TS:-.venv/bin/toolscale}
PY=${PY:-.venv/bin/python}
HERE=docs/results/logspaced/decisions
CFG=$HERE/proxy.toml
EXP=proxy-log
start=$(date +%s)
stamp() { echo "[$(date -u +%H:%M:%S)] $*"; }

[ -d runs/proxy-log-dec ] || { stamp "copy runs/proxy-log"; cp -a runs/proxy-log runs/proxy-log-dec; }
stamp "add the held-out runs"; $PY $HERE/add_heldout.py "$CFG"
stamp "launch"; $TS launch --config "$CFG" --executor local --wait --resume
$TS status --config "$CFG" --experiment "$EXP"
for B in indist-calls heldout-servers; do
  stamp "fit $B"
  $TS fit --config "$CFG" --experiment "$EXP" --benchmark "$B" --metric bpb --law auto --holdout split \
      --target envelope --bootstrap 100 --no-store --json > "$HERE/fit-$B.json"
done
$TS export --config "$CFG" --experiment "$EXP" --out "$HERE/runs.csv"
stamp "analysis"; $PY $HERE/analyse.py "$CFG" "$HERE" > "$HERE/analysis.md"
{
  echo "code_version: $(git rev-parse HEAD 2>/dev/null || cat .code_version)"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "wall_s: $(( $(date +%s) - start ))"
  echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB, load $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$HERE/environment.txt"
stamp "done: $HERE"
