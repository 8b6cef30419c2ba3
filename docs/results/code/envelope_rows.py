"""One row per run at its early-stopped envelope, from a `toolscale export` table with checkpoint rows.

The envelope is what `fit --target envelope` fits (fit/targets.py): the checkpoint whose validation loss
(``<validation>/bpb``) is lowest, the earliest on a tie, read on the test benchmarks that were scored there,
with D as trained to that checkpoint (``train/tokens``) and FLOPs scaled by the same share. Imported with
`toolscale import-runs`, these rows let another experiment's runs enter a cross-domain fit as their own law
fitted them.

    python docs/results/code/envelope_rows.py docs/results/runs.csv valid-calls runs/code/tool_envelope.csv
"""

from __future__ import annotations

import sys

import pandas as pd


def envelope_rows(table: pd.DataFrame, validation: str) -> pd.DataFrame:
    """``table``: an export (one final row per run, ``step`` NaN, plus one row per checkpoint). Returns one row per
    run: its final row's identity and axes with the envelope checkpoint's metrics, D and FLOPs."""
    key = f"{validation}/bpb"
    ck = table[table["step"].notna() & table[key].notna()]
    best = ck.sort_values(["run_id", key, "step"]).groupby("run_id", sort=False).head(1).set_index("run_id")
    final = table[table["step"].isna()].set_index("run_id")
    missing = sorted(set(final.index) - set(best.index))
    if missing:
        raise SystemExit(f"{len(missing)} run(s) have no checkpoint scored on {validation}: {', '.join(missing[:5])}")
    out = final.copy()
    metrics = [c for c in table.columns if "/" in c and not c.startswith(f"{validation}/") and c != "train/tokens"]
    out[metrics] = best.loc[out.index, metrics]
    share = best.loc[out.index, "train/tokens"] / out["train_tokens"]
    out["train_tokens"] = best.loc[out.index, "train/tokens"]
    out["train_flops"] = out["train_flops"] * share
    out["envelope_step"] = best.loc[out.index, "step"]
    return out.drop(columns=["step"]).reset_index()


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    src, validation, dst = argv
    envelope_rows(pd.read_csv(src), validation).to_csv(dst, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
