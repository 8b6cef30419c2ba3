"""Summary of the reduced RL experiment (docs/results/rl/run_reduced.sh): GRPO step rows, fill rates, and the
seed-paired effect of GRPO with the statistics of ``toolscale effect`` (:func:`fit.effects.paired_effects`:
mean paired difference, Student-t interval over seeds), per task count, at 90%.

Reads ``OUT/s<seed>-t<tasks>/{grpo/train_stats.json, eval-<arm>-<benchmark>.json}``; writes ``reduced.json``
(every GRPO step row, every eval figure, the effects) and ``reduced.md`` into ``DEST``. Pairs whose GRPO run or
either eval did not finish are listed as missing, never dropped silently.

Usage: python docs/results/rl/reduced.py OUT DEST
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from types import SimpleNamespace

BENCHMARKS = ("heldout-env", "indist-env")
METRICS = ("f1", "score", "token_prob")


def _load(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def collect(out: Path) -> list[dict]:
    """One record per pair folder: seed, task count, GRPO step rows and accounting, eval metrics per arm."""
    records = []
    for folder in sorted(out.glob("s*-t*")):
        seed, tasks = folder.name[1:].split("-t")
        stats = _load(folder / "grpo" / "train_stats.json")
        evals = {}
        for arm in ("sft", "grpo"):
            for bench in BENCHMARKS:
                e = _load(folder / f"eval-{arm}-{bench}.json")
                if e is not None:
                    evals[f"{arm}/{bench}"] = {m: e["metrics"][m]["score"] for m in METRICS if m in e["metrics"]}
        log = folder / "grpo" / "grpo_steps.jsonl"   # the step rows as they were written (an unfinished run)
        rows = (stats or {}).get("steps") or ([json.loads(x) for x in log.read_text().splitlines() if x.strip()]
                                              if log.is_file() else [])
        records.append({"seed": int(seed), "task_count": int(tasks), "steps": rows, "finished": stats is not None,
                        "flops": (stats or {}).get("flops"), "wall_s": ((stats or {}).get("train") or {}).get("wall_s"),
                        "skipped_steps": (stats or {}).get("skipped_steps"), "evals": evals})
    return records


def effects(records: list[dict], level: float = 0.9) -> list[dict]:
    """``toolscale effect``'s paired effects of the GRPO arm (6 steps) against the SFT-only arm (0)."""
    from fit.effects import paired_effects
    from fit.errors import FitInputError

    out = []
    for bench in BENCHMARKS:
        for metric in METRICS:
            runs = []
            for r in records:
                for arm, steps in (("sft", 0), ("grpo", 6)):
                    value = r["evals"].get(f"{arm}/{bench}", {}).get(metric)
                    if value is not None:
                        runs.append(SimpleNamespace(recipe={"grpo_steps": steps, "task_count": r["task_count"]},
                                                    model_size="tiny-s", seed=r["seed"],
                                                    metrics={f"{bench}/{metric}": value}))
            try:
                out += [e.model_dump(mode="json") for e in paired_effects(runs, "grpo_steps", f"{bench}/{metric}",
                                                                          level=level)]
            except FitInputError as err:
                out.append({"metric": f"{bench}/{metric}", "error": str(err)})
    return out


def _f(x, digits: int = 3) -> str:
    return "—" if x is None else f"{x:.{digits}g}"


def markdown(records: list[dict], effs: list[dict]) -> str:
    """Per-step means over the pairs that reached the step, first-step variance share, the effects."""
    lines = ["# GRPO steps (means over the runs that reached the step)", "",
             "| step | phase | runs | F1 (every episode drawn) | partial credit | groups with reward variance | "
             "fill rate | skipped | draws |", "|---|---|---|---|---|---|---|---|---|"]
    for k in range(max((len(r["steps"]) for r in records), default=0)):
        rows = [r["steps"][k] for r in records if k < len(r["steps"])]
        mean = lambda key: statistics.mean(x[key] for x in rows)  # noqa: E731
        lines.append(f"| {k + 1} | {rows[0]['phase']} | {len(rows)} | {_f(mean('f1'))} | {_f(mean('partial'))} | "
                     f"{_f(mean('variance_share'))} | {_f(mean('fill_rate'))} | {sum(x['skipped'] for x in rows)}"
                     f"/{len(rows)} | {_f(mean('draws'))} |")
    first = [r["steps"][0] for r in records if r["steps"]]
    drawn = sum(x["draws"] for x in first)
    varied = sum(round(x["variance_share"] * x["draws"]) for x in first)
    lines += ["", f"First GRPO step after the warm start: {varied} of {drawn} groups drawn had reward variance "
              f"({len(first)} runs).", "", "# Runs", "",
              "| seed | tasks | GRPO finished | steps logged | skipped | GRPO wall s | generation FLOPs | optimization FLOPs | "
              + " | ".join(f"{a} {b} F1" for b in BENCHMARKS for a in ("SFT-only", "GRPO")) + " |",
              "|---|---|---|---|---|---|---|---|" + "---|" * 2 * len(BENCHMARKS)]
    for r in records:
        fl = r["flops"] or {}
        cells = [_f(r["evals"].get(f"{a}/{b}", {}).get("f1")) for b in BENCHMARKS for a in ("sft", "grpo")]
        lines.append(f"| {r['seed']} | {r['task_count']} | {'yes' if r['finished'] else 'no'} | {len(r['steps'])} | {_f(r['skipped_steps'])} | "
                     f"{_f(r['wall_s'], 4)} | {_f(fl.get('generation'))} | {_f(fl.get('optimization'))} | "
                     + " | ".join(cells) + " |")
    lines += ["", "# Effect of GRPO (6 steps) against SFT-only, paired by seed, 90% t interval", "",
              "| metric | tasks | pairs | SFT-only | GRPO | effect | 90% CI |", "|---|---|---|---|---|---|---|"]
    for e in effs:
        if "error" in e:
            lines.append(f"| {e['metric']} | — | 0 | — | — | — | {e['error']} |")
            continue
        ci = "—" if e["lo"] is None else f"[{e['lo']:.3g}, {e['hi']:.3g}]"
        lines.append(f"| {e['metric']} | {e['others'].get('task_count', 0):g} | {e['n_pairs']} | "
                     f"{_f(e['mean_low'])} | {_f(e['mean_high'])} | {e['effect']:.3g} | {ci} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    out, dest = Path(argv[0]), Path(argv[1])
    records = collect(out)
    effs = effects(records)
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "reduced.json").write_text(json.dumps({"runs": records, "effects": effs}, indent=1), encoding="utf-8")
    (dest / "reduced.md").write_text(markdown(records, effs), encoding="utf-8")
    print(markdown(records, effs))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
