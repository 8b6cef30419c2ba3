#!/usr/bin/env bash
# The committed CPU proxy-ladder experiment, in one command: the learning-rate scan (chosen on the validation
# split), the design, every run (synthesise, probe, train with the shared tokenizer keeping checkpoints,
# score them on the validation split and the chosen one on both test benchmarks), a fit per benchmark of the
# early-stopped envelope in bits per byte with its held-out check and decision accuracy, the same fit of the
# final checkpoints for comparison, the reports, the allocation, its verification (3 seeds), runs.csv with
# every checkpoint.
#
# Usage (from the repository root, after `make install`):
#   bash docs/results/run_proxy.sh                                      # the proxy ladder (docs/results/proxy.toml)
#   bash docs/results/run_proxy.sh toolscale/presets/demo.toml /tmp/demo  # the demo-scale ladder
# Budget: about 75 minutes on 2 idle cores for proxy.toml. Reuses finished scan runs and runs when rerun.
set -euo pipefail
cd "$(dirname "$0")/../.."
TS=${TS:-.venv/bin/toolscale}
CFG=${1:-docs/results/proxy.toml}
OUT=${2:-docs/results}
EXP=$(grep -m1 '^name = ' "$CFG" | cut -d'"' -f2)
BENCHES=(indist-calls heldout-servers)
METRIC=bpb
BUDGET=${BUDGET:-5000}
mkdir -p "$OUT"
t0=$(date +%s)
stamp() { echo "[$(( ($(date +%s) - t0) / 60 )) min] $*"; }

stamp "validate"; $TS validate "$CFG"
stamp "learning-rate scan"; $TS lr-scan "$CFG" --json > "$OUT/lr_scan.json"
stamp "design"; $TS grid design "$CFG" --json > "$OUT/design.json"
stamp "launch"; $TS launch --config "$CFG" --executor local --wait --resume
$TS status --config "$CFG" --experiment "$EXP"
for B in "${BENCHES[@]}"; do
  stamp "fit $B/$METRIC (early-stopped envelope)"
  $TS fit --config "$CFG" --experiment "$EXP" --benchmark "$B" --metric "$METRIC" --law auto --holdout split \
      --target envelope --bootstrap 100 --json > "$OUT/fit-$B.json"
  $TS report --config "$CFG" --experiment "$EXP" --benchmark "$B" --metric "$METRIC" --law auto --holdout split \
      --target envelope --bootstrap 100 --out "$OUT/report-$B" > /dev/null
done
B=${BENCHES[0]}
stamp "fit $B/$METRIC on the final checkpoints (for comparison; not stored as the newest fit)"
$TS fit --config "$CFG" --experiment "$EXP" --benchmark "$B" --metric "$METRIC" --law auto --holdout split \
    --target final --bootstrap 100 --no-store --json > "$OUT/fit-$B-final.json"
stamp "allocate on $B"
$TS allocate --config "$CFG" --experiment "$EXP" --benchmark "$B" --budget "$BUDGET" --json > "$OUT/allocation.json" || \
    echo "allocate failed (see above)"
stamp "verify the allocation (3 seeds)"
$TS verify --config "$CFG" --experiment "$EXP" --benchmark "$B" --budget "$BUDGET" --seeds 3 \
    --arms allocator,diversity_only,best_observed --plot "$OUT/verification.png" --json > "$OUT/verification.json" || \
    echo "verify failed (see above)"
$TS export --config "$CFG" --experiment "$EXP" --out "$OUT/runs.csv"
{
  echo "config: $CFG"
  echo "code_version: $(git rev-parse HEAD)"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "wall_minutes: $(( ($(date +%s) - t0) / 60 ))"
  echo "load_average_at_end: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
  echo "python: $(.venv/bin/python --version 2>&1 || python3 --version); torch $(${PY:-.venv/bin/python} -c 'import torch; print(torch.__version__)' 2>/dev/null)"
} > "$OUT/environment.txt"
stamp "done: $OUT"
