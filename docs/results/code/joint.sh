#!/usr/bin/env bash
# The cross-domain fits (issue 33) from the two committed experiments' exported runs, both at their early-stopped
# envelope: each run enters as the checkpoint best on its own validation split (valid-calls for the tool domain,
# code-valid for the code domain), read on the test benchmark, with D and FLOPs as of that checkpoint
# (envelope_rows.py; the same values `fit --target envelope` fits). One experiment per benchmark and domain, in a
# fresh registry; then `fit --experiments` with shared exponents and per-domain constants.
#
# Usage (from the repository root, after `make install`): bash docs/results/code/joint.sh [OUT_DIR] [TOOL_RESULTS_DIR]
# TOOL_RESULTS_DIR (default docs/results) holds the tool domain's runs.csv; CODE_RUNS (default
# docs/results/code/runs.csv) is the code domain's export. ROWS=final imports the tool runs' final rows instead
# (the first version of these fits, which mixed the tool domain's final values with the code envelope).
set -euo pipefail
cd "$(dirname "$0")/../../.."
TS=${TS:-.venv/bin/toolscale}
PY=${PY:-.venv/bin/python}
OUT=${1:-docs/results/code}
TOOLS=${2:-docs/results}
CODE_RUNS=${CODE_RUNS:-docs/results/code/runs.csv}
ROWS=${ROWS:-envelope}
WORK=runs/code-joint-$ROWS
REG=$WORK/toolscale.duckdb
rm -rf "$WORK" && mkdir -p "$WORK" "$OUT"
if [ "$ROWS" = envelope ]; then
  $PY docs/results/code/envelope_rows.py "$TOOLS/runs.csv" valid-calls "$WORK/tools.csv"
else
  $PY -c "import pandas as pd, sys; d = pd.read_csv(sys.argv[1]); d[d['step'].isna()].to_csv(sys.argv[2], index=False)" \
      "$TOOLS/runs.csv" "$WORK/tools.csv"
fi
$PY docs/results/code/envelope_rows.py "$CODE_RUNS" code-valid "$WORK/code.csv"
AXES=(--map axis_tool_diversity=tool_diversity --map axis_task_count=task_count --map axis_db_diversity=db_diversity
      --map split=split --map model_params=model_params --map train_tokens=train_tokens --map train_flops=train_flops
      --map seed=seed)
for B in indist-calls heldout-servers; do
  $TS import-runs "$WORK/tools.csv" --registry "$REG" --experiment "tools-$B" --benchmark "$B" \
      --map "$B/bpb=loss" --map axis_repair_rate=repair_rate "${AXES[@]}" > /dev/null
done
for B in code-indist code-heldout-apis; do
  $TS import-runs "$WORK/code.csv" --registry "$REG" --experiment "$B" --benchmark "$B" \
      --map "$B/bpb=loss" --map axis_spec_dependency=spec_dependency "${AXES[@]}" > /dev/null
done
sfx=$([ "$ROWS" = envelope ] && echo "" || echo "-final")
$TS fit --registry "$REG" --experiments tools-indist-calls,code-indist --benchmark indist-calls/loss,code-indist/loss \
    --holdout split --bootstrap 200 --json > "$OUT/joint-indist$sfx.json"
$TS fit --registry "$REG" --experiments tools-heldout-servers,code-heldout-apis \
    --benchmark heldout-servers/loss,code-heldout-apis/loss --holdout split --bootstrap 200 --json > "$OUT/joint-heldout$sfx.json"
echo "wrote $OUT/joint-indist$sfx.json $OUT/joint-heldout$sfx.json"
