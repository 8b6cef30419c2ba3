"""Probe cost share and agreement: the masking probe on toy and synth data (prints figures; asserts nothing).

Targets (issue 5, research plan seed 003): probe FLOPs <= 5 % of the target training run's FLOPs;
agreement of the calibrated probe with the injected labels >= 85 % (on the evaluation split).

    .venv/bin/python benchmarks/probe_cost.py [--tasks 512] [--steps 400] [--quick] [--json]

Runs ``probe_dataset`` on (1) toy data with single-token identifiers (``probes.toydata``) and (2) a
synth dataset (``synth.dataset.build_dataset``, the default recipe), with the target run the default
preset's target rung (its ``6 N D`` over its planned tokens). It also projects the share to the
research plan's cluster scale (a 60M probe against 0.5B-4B targets trained one epoch on the data),
from the measured scoring tokens per data token. ``--json`` prints the records ``benchmarks/run_all``
collects as the last line.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from importlib import resources
from pathlib import Path

import torch

from probes.pipeline import probe_dataset
from probes.toydata import make_dataset, write_dataset
from toolscale.cli.probe import target_flops_from_config
from toolscale.config import ProbeSpec, load_config


def _spec(steps: int, max_seq_len: int, sample: int) -> ProbeSpec:
    return ProbeSpec(hidden_size=64, num_layers=2, num_heads=4, vocab_size=512, max_seq_len=max_seq_len,
                     batch_size=8, train_steps=steps, learning_rate=1e-2, sample_size=sample, seed=0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=int, default=512, help="synth tasks of the realistic dataset")
    ap.add_argument("--toy", type=int, default=300, help="toy trajectories")
    ap.add_argument("--steps", type=int, default=400, help="probe training steps")
    ap.add_argument("--quick", action="store_true", help="128 synth tasks, 160 toy trajectories, 300 steps")
    ap.add_argument("--json", action="store_true", help="also print the records as one JSON line (last)")
    args = ap.parse_args()
    if args.quick:
        args.tasks, args.toy, args.steps = 128, 160, 300
    torch.set_num_threads(1)
    config = load_config(resources.files("toolscale.presets").joinpath("default.toml"))
    target = target_flops_from_config(config, None)
    records, lines = [], []

    with tempfile.TemporaryDirectory() as tmp:
        toy = Path(tmp) / "toy"
        write_dataset(make_dataset(args.toy, defect_rate=0.5, seed=0, id_digits=2), str(toy))
        t0 = time.perf_counter()
        s = probe_dataset(toy, spec=_spec(args.steps, 160, args.toy), target_train_flops=target)
        cal = s.calibration
        lines.append((f"toy ({args.toy} traj., 2-digit ids), {args.steps} steps", s, time.perf_counter() - t0))

        from synth.dataset import build_dataset
        from synth.models import Recipe

        real = Path(tmp) / "synth"
        build_dataset(Recipe(task_count=args.tasks, defect_rate=0.5, seed=0), real)
        t0 = time.perf_counter()
        s2 = probe_dataset(real, spec=_spec(args.steps, 256, 256), target_train_flops=target)
        lines.append((f"synth ({args.tasks} tasks), {args.steps} steps", s2, time.perf_counter() - t0))

    print(f"target run: default preset rung {config.experiment.target_model_size}, {target:.3g} FLOPs")
    print(f"{'dataset':<40} {'actions':>7} {'agree':>6} {'base':>6} {'bal.acc':>7} {'AUC':>6} {'share':>8} "
          f"{'probe FLOPs':>11} {'wall s':>7}")
    for name, s, wall in lines:
        cal = s.calibration
        base = (cal.confusion.tp + cal.confusion.fn) / cal.confusion.n if cal and cal.confusion.n else float("nan")
        print(f"{name:<40} {s.n_actions:>7} {_f(s.agreement):>6} {base:>6.3f} "
              f"{_f(cal.balanced_accuracy if cal else None):>7} {_f(cal.auc if cal else None):>6} "
              f"{_f(s.probe_cost_share, 4):>8} {s.cost.total_flops:>11.3g} {wall:>7.1f}")
        records += [
            {"benchmark": "probe_cost", "figure": f"agreement, {name}", "value": s.agreement, "unit": "fraction",
             "target": ">= 0.85"},
            {"benchmark": "probe_cost", "figure": f"AUC, {name}", "value": cal.auc if cal else None,
             "unit": "fraction", "target": "> 0.5"},
            {"benchmark": "probe_cost", "figure": f"cost share, {name}", "value": s.probe_cost_share,
             "unit": "fraction", "target": "<= 0.05"}]

    # projection to the research plan's scale: a 60M probe, targets 0.5B-4B, one epoch over the data
    c = s2.cost
    data_tokens = c.data_tokens
    r = c.score_tokens / data_tokens  # scoring tokens per data token
    n_probe, n_traj = 60e6, 10_000
    d_data = data_tokens / max(s2.n_trajectories, 1) * n_traj
    d_ptrain = c.train_tokens  # same sample size and steps
    print(f"\nscoring tokens per data token r = {r:.2f} (3 windowed passes per action); projection for "
          f"{n_traj} trajectories ({d_data:.3g} tokens), a 60M probe, one epoch of target training:")
    for n_target in (0.5e9, 1e9, 4e9):
        share = (2 * n_probe * r * d_data + 6 * n_probe * d_ptrain) / (6 * n_target * d_data)
        fraction = min(1.0, max(0.0, (0.05 * 6 * n_target * d_data - 6 * n_probe * d_ptrain)
                                / (2 * n_probe * r * d_data)))
        print(f"  target {n_target / 1e9:.1f}B: probe share if every trajectory is scored {share:.3f}; "
              f"with enforce_budget, {fraction:.0%} of the trajectories are scored")
        records.append({"benchmark": "probe_cost", "figure": f"projected share, 60M probe vs {n_target / 1e9:.1f}B, "
                        "1 epoch", "value": round(share, 4), "unit": "fraction", "target": "<= 0.05"})
    if args.json:
        print(json.dumps(records))


def _f(x: float | None, digits: int = 3) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


if __name__ == "__main__":
    main()
