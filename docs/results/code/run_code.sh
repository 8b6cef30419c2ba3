#!/usr/bin/env bash
# The code-domain replication (issue 33), in one command, on the proxy-ladder protocol of docs/results/proxy.toml
# (code.toml here is that config with the code domain's axes, synthesis and benchmarks): the learning-rate scan
# (chosen on code-valid), the design, every run (synthesise code tasks and replay their tests in the jail,
# probe, train with the shared tokenizer keeping checkpoints, score them on code-valid and the chosen one on
# both code benchmarks), a fit per benchmark of the early-stopped envelope in bits per byte with its held-out
# check, the score-law fit that runs the interaction test, the reports, the golden replay, then the cross-domain
# fits (joint.sh: both domains' exported runs at their envelope, shared exponents).
#
# Usage (from the repository root, after `make install`):
#   bash docs/results/code/run_code.sh [TOOL_RESULTS_DIR]   # default docs/results (the tool domain's proxy runs)
# CFG and OUT override the config and the results folder (the registry is the config's); GOLDEN=0 skips the
# golden replay (e.g. logspaced/: the same datasets as this folder's run).
# TOOL_RESULTS_DIR must hold the tool domain's fit-indist-calls.json, fit-heldout-servers.json and runs.csv
# from docs/results/run_proxy.sh on the same protocol. Budget: not measured; the tool domain's proxy.toml takes
# about 75 minutes on 2 idle cores, and code tasks add a jailed test replay per task. Reuses finished runs.
set -euo pipefail
cd "$(dirname "$0")/../../.."
TS=${TS:-.venv/bin/toolscale}
PY=${PY:-.venv/bin/python}
CFG=${CFG:-docs/results/code/code.toml}
OUT=${OUT:-docs/results/code}
TOOLS=${1:-docs/results}
EXP=$(grep -m1 '^name = ' "$CFG" | cut -d'"' -f2)
REG=$(sed -n 's/^registry = "\.\/\([^"]*\)".*/\1/p' "$CFG" | head -1)
mkdir -p "$OUT" "$(dirname "$REG")"
t0=$(date +%s)
stamp() { echo "[$(( ($(date +%s) - t0) / 60 )) min] $*"; }
FIT=(--config "$CFG" --experiment "$EXP" --holdout split --bootstrap 100)

stamp "validate"; $TS validate "$CFG"
stamp "learning-rate scan"; $TS lr-scan "$CFG" --json > "$OUT/lr_scan.json"
stamp "design"; $TS grid design "$CFG" --json > "$OUT/design.json"
stamp "launch"; $TS launch --config "$CFG" --executor local --wait --resume
$TS status --config "$CFG" --experiment "$EXP"
for B in code-indist code-heldout-apis; do
  stamp "fit $B/bpb"
  $TS fit "${FIT[@]}" --benchmark "$B" --metric bpb --law auto --target envelope --json > "$OUT/fit-$B.json"
  $TS report "${FIT[@]}" --benchmark "$B" --metric bpb --law auto --target envelope --out "$OUT/report-$B" > /dev/null
done
stamp "fit code-indist/token_prob (score laws: the additive vs multiplicative test of spec_dependency)"
$TS fit "${FIT[@]}" --benchmark code-indist --metric token_prob --law auto --json > "$OUT/fit-code-indist-token_prob.json"
$TS export --config "$CFG" --experiment "$EXP" --out "$OUT/runs.csv"
stamp "golden replay of every dataset"
if [ "${GOLDEN:-1}" = 1 ]; then
  $PY benchmarks/code_golden.py "$(dirname "$REG")/datasets" --out "$OUT/golden_replay.txt" || echo "golden replay: not 100% (see above)"
fi
stamp "cross-domain fits: both domains' runs at their envelope, shared exponents, per-domain constants"
CODE_RUNS="$OUT/runs.csv" bash docs/results/code/joint.sh "$OUT" "$TOOLS"
stamp "analysis"
$PY docs/results/code/analyse.py --tools "$TOOLS" --registry "$REG" --experiment "$EXP" > "$OUT/analysis.md"
{
  echo "config: $CFG"
  echo "tool domain results compared: $TOOLS"
  echo "code_version: $(git rev-parse HEAD)"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "wall_minutes: $(( ($(date +%s) - t0) / 60 ))"
  echo "load_average_at_end: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
  echo "python: $($PY --version 2>&1); torch $($PY -c 'import torch; print(torch.__version__)' 2>/dev/null)"
} > "$OUT/environment.txt"
stamp "done: $OUT"
