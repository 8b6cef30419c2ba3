"""Issue 33's golden-trajectory target: every kept code trajectory's tests pass when replayed in the jail.

    .venv/bin/python benchmarks/code_golden.py [FOLDER ...] [--out FILE]

Each FOLDER is a code dataset (``manifest.json`` with ``domain = "code"``) or a folder holding some (an
experiment's ``runs/.../datasets``). For every kept row the module is rebuilt from the row's own
``write_file`` calls (creates and appends, in order), its hidden tests are regenerated from the dataset's
recipe (:func:`synth.code.tasks.plan_tasks`, the same tasks by id), and all are run in the bubblewrap jail
in batches. Prints one line per dataset and the total: rows replayed, rows whose every test passed.
Without FOLDER it builds two fresh datasets (40 tasks each) and replays them.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from synth.code.dataset import build_code_dataset
from synth.code.models import CodeRecipe
from synth.code.render import tests_source
from synth.code.runner import Suite, run_suites
from synth.code.tasks import plan_tasks


def final_module(row: dict) -> str:
    """The module a row's episode leaves behind, from its write_file calls alone."""
    text = ""
    for m in row["messages"]:
        for c in m.get("tool_calls") or []:
            if c["function"]["name"] == "write_file":
                args = json.loads(c["function"]["arguments"])
                text = text + args["content"] if args.get("append") else args["content"]
    return text


def replay(folder: Path) -> tuple[int, int, list[str]]:
    """``(rows, rows passing every test, failures)`` of one dataset folder."""
    manifest = json.loads((folder / "manifest.json").read_text())
    recipe = CodeRecipe.model_validate(manifest["recipe"])
    tasks = {p.task.task_id: p.task for p in plan_tasks(recipe) if p.task is not None}
    rows = [json.loads(line) for line in (folder / "train.jsonl").read_text().splitlines() if line.strip()]
    suites = []
    for row in rows:
        task = tasks[json.loads(row["meta"])["task_id"]]
        suites.append((task.task_id, Suite(task.module, final_module(row), tests_source(task))))
    results = run_suites([s for _, s in suites])
    bad = [f"{tid}: {results[s.key].error or results[s.key].failures[:1]}" for tid, s in suites
           if not results[s.key].all_passed]
    return len(rows), len(rows) - len(bad), bad


def datasets(paths: list[Path]) -> list[Path]:
    """Code dataset folders under ``paths``."""
    out = []
    for p in paths:
        for m in sorted([p / "manifest.json", *p.glob("*/manifest.json")]):
            if m.is_file() and json.loads(m.read_text()).get("domain") == "code":
                out.append(m.parent)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="*", type=Path)
    ap.add_argument("--out", type=Path, help="also write the lines to this file")
    args = ap.parse_args(argv)
    tmp = None
    folders = args.folders
    if not folders:
        tmp = tempfile.TemporaryDirectory()
        for seed, dep in ((0, 0.0), (1, 1.0)):
            build_code_dataset(CodeRecipe(task_count=40, tool_diversity=40, spec_dependency=dep, error_rate=0.2,
                                          seed=seed), Path(tmp.name) / f"ds{seed}")
        folders = [Path(tmp.name)]
    lines, total, ok = [], 0, 0
    t0 = time.perf_counter()
    for d in datasets(folders):
        n, good, bad = replay(d)
        total, ok = total + n, ok + good
        lines.append(f"{d.name}: {good} of {n} kept trajectories pass their hidden tests in the jail"
                     + (f"; failing: {bad[:3]}" if bad else ""))
    lines.append(f"total: {ok} of {total} ({ok / total:.1%}) in {time.perf_counter() - t0:.0f} s; target 100%"
                 if total else "no code dataset found")
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if args.out:
        args.out.write_text(text)
    return 0 if total and ok == total else 1


if __name__ == "__main__":
    raise SystemExit(main())
