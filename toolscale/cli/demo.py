"""``toolscale demo``: the whole pipeline on this machine, as the sequence of commands a user would type.

Part 1 (real): collect tool docs from the bundled MCP servers over stdio -> the
``demo`` preset, the proxy-ladder protocol of docs/results/ at demo scale: a learning-rate
scan at three widths chosen on the validation split -> the design (a width-only ladder of 4-layer
models, the widest rung held out, at ~4x the largest fitted run's FLOPs where the full protocol
asks 16x) -> per run: synthesise, probe, train a tiny proxy model with TRL and the experiment's
shared tokenizer, keep checkpoints, choose one on the validation split, score it on both fixed
benchmarks (local executor) -> fit the early-stopped envelope in bits per byte -> held-out
extrapolation report -> ``allocate``.

Part 2 (SIMULATED, labelled as such): the default 342-run design filled from a
known law, fitted, reported and allocated, to show the full-size path.

Every step is an ordinary ``toolscale`` command, printed before it runs; running
the demo twice reuses the registry (no duplicate runs: the design is idempotent and
``launch`` submits only pending runs).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from toolscale.cli._common import Formatter

__all__ = ["register", "write_demo_config"]

BENCHMARK = "heldout-calls"
"""The simulated part's benchmark."""
REAL_BENCHMARK = "indist-calls"
"""The real part's benchmark: 256 new call items on the training servers, held-out databases."""
METRIC = "bpb"
"""Tiny CPU models get no call exactly right (accuracy 0 everywhere), so the real part fits bits per
byte of the reference answers (comparable across runs: one tokenizer, and per byte)."""
REAL_EXPERIMENT = "demo-micro"
FULL_FACTOR = 16.0
"""The held-out rung's FLOPs factor of the full protocol (docs/results/proxy.toml)."""
SIM_EXPERIMENT = "simulated-default"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run the whole pipeline on CPU in minutes (real micro grid + simulated 300 runs)",
                       formatter_class=Formatter,
                       epilog="examples:\n  toolscale demo                  # both parts, into ./demo_out\n"
                              "  toolscale demo --part simulated # only the simulated full-size path\n"
                              "  toolscale demo --out /tmp/demo --max-parallel 2")
    p.add_argument("--out", default="demo_out", help="folder for the registry, runs and reports (default demo_out)")
    p.add_argument("--part", choices=["all", "real", "simulated"], default="all", help="which part to run")
    p.add_argument("--max-parallel", type=int, default=2, help="runs trained at once (default 2)")
    p.add_argument("--budget", type=float, default=5000.0, help="budget of the final allocate (usd)")
    p.add_argument("--preset", default="demo", metavar="NAME_OR_TOML",
                   help="the real part's experiment: a packaged preset or a TOML file with the same sections "
                        "(default demo; the test suite runs a micro one)")
    p.set_defaults(func=_demo)


def write_demo_config(out: Path, preset: str, name: str, max_parallel: int) -> Path:
    """The preset (a packaged name, or a ``.toml`` file) with its registry, run folder and parallelism pointed
    into ``out``; returns the path (``out/<preset name>.toml``)."""
    from toolscale.cli.project import example_config_text

    source = Path(preset)
    text = source.read_text(encoding="utf-8") if source.suffix == ".toml" and source.is_file() \
        else example_config_text(preset)
    preset = source.stem if source.suffix == ".toml" else preset
    registry = str((out / "toolscale.duckdb").resolve())
    folder = str((out / "runs").resolve())
    lines = []
    section = None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("["):
            section = stripped.strip("[]")
        key = stripped.split("=", 1)[0].strip() if "=" in stripped and not stripped.startswith("#") else None
        if section == "experiment" and key == "name":
            line = f'name = "{name}"'
        elif section == "experiment" and key == "registry":
            line = f'registry = "{registry}"'
        elif section == "executor" and key == "folder":
            line = f'folder = "{folder}"'
        elif section == "executor" and key == "max_parallel":
            line = f"max_parallel = {max_parallel}"
        lines.append(line)
    path = out / f"{preset}.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


class _Steps:
    """Runs CLI commands in order, echoing each, stopping at the first failure."""

    def __init__(self) -> None:
        self.timings: list[tuple[str, float]] = []

    def run(self, title: str, argv: list[str], capture_json: bool = False) -> dict | None:
        from rich.console import Console

        from toolscale.cli import main

        console = Console(stderr=True)
        console.rule(f"[bold]{title}")
        console.print(f"$ toolscale {' '.join(argv)}", style="cyan", highlight=False)
        t0 = time.monotonic()
        if capture_json:
            import contextlib
            import io

            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                code = main(argv)
            out = buf.getvalue()
        else:
            code = main(argv)
            out = ""
        took = time.monotonic() - t0
        self.timings.append((title, took))
        if code != 0:
            from toolscale.errors import ToolscaleError

            raise ToolscaleError(f"demo step {title!r} failed (exit {code}); rerun `toolscale demo` to resume")
        console.print(f"[dim]{title}: {took:.1f} s[/dim]")
        return json.loads(out) if capture_json else None


def _real(out: Path, steps: _Steps, args: argparse.Namespace) -> dict:
    cfg = write_demo_config(out, args.preset, REAL_EXPERIMENT, args.max_parallel)
    c = str(cfg)
    steps.run("1. collect tool docs from the bundled MCP servers (stdio)", ["collect", "--config", c, "--bundled"])
    steps.run("2a. learning-rate scan at three widths, chosen on the validation split, carried by a rule",
              ["lr-scan", c])
    steps.run("2b. design: fractional factorial x a width-only ladder (4 layers), the widest "
              "held out", ["grid", "design", c])
    steps.run("3. synthesise, probe, train and evaluate every run (local executor)",
              ["launch", "--config", c, "--executor", "local", "--wait", "--resume", "--poll", "2"])
    steps.run("4. runs by state", ["status", "--config", c, "--experiment", REAL_EXPERIMENT])
    fit = steps.run("5. fit the law (bits per byte) on the fit split, check the held-out runs",
                    ["fit", "--config", c, "--experiment", REAL_EXPERIMENT, "--benchmark", REAL_BENCHMARK,
                     "--metric", METRIC, "--law", "auto", "--holdout", "split", "--json"],
                    capture_json=True)
    report_dir = out / "report"
    steps.run("6. held-out extrapolation report", ["report", "--config", c, "--experiment", REAL_EXPERIMENT,
                                                     "--benchmark", REAL_BENCHMARK, "--metric", METRIC,
                                                     "--law", "auto", "--holdout", "split",
                                                     "--out", str(report_dir)])
    steps.run("7. allocate a budget", ["allocate", "--config", c, "--budget", f"{args.budget:g}", "--benchmark",
                                       REAL_BENCHMARK, "--experiment", REAL_EXPERIMENT])
    from toolscale.config import load_config

    rung = load_config(cfg).ladder[0].name  # the cheapest rung: the demo checks the path, one seed per plan
    verification = steps.run(
        f"8. verify: train the allocator's, the diversity-only and an equal-spend plan (one seed each, {rung})",
        ["verify", "--config", c, "--budget", f"{args.budget:g}", "--benchmark", REAL_BENCHMARK, "--experiment",
         REAL_EXPERIMENT, "--seeds", "1", "--model-size", rung, "--poll", "2", "--plot", str(out / "verification.png"),
         "--json"], capture_json=True)
    return {"config": c, "fit": fit, "report": str(report_dir), "experiment": REAL_EXPERIMENT, "metric": METRIC,
            "verification": verification}


def _simulated(out: Path, steps: _Steps, args: argparse.Namespace) -> dict:
    cfg = write_demo_config(out, "default", SIM_EXPERIMENT, args.max_parallel)
    c = str(cfg)
    steps.run("S1. SIMULATED: fill the default 342-run design (four sizes) from a known law",
              ["simulate", "--config", c, "--experiment", SIM_EXPERIMENT, "--benchmark", BENCHMARK])
    fit = steps.run("S2. SIMULATED: fit and held-out check", ["fit", "--config", c, "--experiment", SIM_EXPERIMENT,
                                                             "--benchmark", BENCHMARK, "--json"], capture_json=True)
    report_dir = out / "report-simulated"
    steps.run("S3. SIMULATED: report", ["report", "--config", c, "--experiment", SIM_EXPERIMENT, "--benchmark",
                                        BENCHMARK, "--out", str(report_dir)])
    steps.run("S4. SIMULATED: allocate", ["allocate", "--config", c, "--budget", f"{args.budget * 4:g}",
                                          "--benchmark", BENCHMARK, "--experiment", SIM_EXPERIMENT])
    return {"config": c, "fit": fit, "report": str(report_dir), "experiment": SIM_EXPERIMENT, "metric": "score"}


def _demo(args: argparse.Namespace) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    steps = _Steps()
    t0 = time.monotonic()
    parts = {}
    if args.part in ("all", "real"):
        parts["real"] = _real(out, steps, args)
    if args.part in ("all", "simulated"):
        parts["simulated"] = _simulated(out, steps, args)
    _summary(out, parts, steps, time.monotonic() - t0)
    return 0


def _summary(out: Path, parts: dict, steps: _Steps, total: float) -> None:
    print("\n=== toolscale demo: summary ===")
    print(f"registry: {(out / 'toolscale.duckdb').resolve()}")
    for name, part in parts.items():
        label = " (SIMULATED data)" if name == "simulated" else ""
        fit = part.get("fit") or {}
        print(f"{name}{label}: report {Path(part['report']).resolve()}")
        print(f"  law {fit.get('law')}: held-out MAE {_num(fit.get('heldout_mae'))}, max error "
              f"{_num(fit.get('heldout_max_error'))}, 90% interval coverage {_num(fit.get('interval_coverage'))}, "
              f"extrapolation factor {_num(fit.get('extrapolation_factor'), '.1f')}x")
        factor = fit.get("extrapolation_factor")
        if name == "real" and factor is not None and factor < FULL_FACTOR:
            print(f"  note: the demo holds out its rung at {factor:.1f}x the largest fitted run's FLOPs (6ND, as the runs "
                  f"record them; `grid design` also prints the factor with attention counted), below the "
                  f"full protocol's {FULL_FACTOR:g}x (a demo-sized rung); docs/results/ runs the full protocol")
        rel, dec = fit.get("heldout_relative_mae"), fit.get("decision_accuracy") or {}
        if rel is not None or dec.get("accuracy") is not None:
            print(f"  held-out relative MAE {_num(rel)}, small-to-large decision accuracy {_num(dec.get('accuracy'))} "
                  f"over {dec.get('pairs', 0)} recipe pairs")
        print("  " + _allocation_line(out / "toolscale.duckdb", part["experiment"], part["metric"]))
        if part.get("verification"):
            print("  " + _verification_line(part["verification"]))
    print("step times: " + ", ".join(f"{t.split('.')[0]} {s:.0f}s" for t, s in steps.timings))
    print(f"total: {total / 60:.1f} min")
    sys.stdout.flush()


def _allocation_line(registry: Path, experiment: str, metric: str) -> str:
    """The newest stored allocation of ``experiment``: spend per axis, prediction, the diversity-only baseline."""
    from grid.registry import Registry

    with Registry(registry, read_only=True) as reg:
        stored = reg.allocations(experiment)
    if not stored:
        return "allocation: none stored"
    from fit.decision import LOSS_METRICS

    a, plan = stored[0], stored[0]["payload"]
    sign = -1.0 if metric in LOSS_METRICS else 1.0  # a loss is planned as its negation
    spend = ", ".join(f"{k} {v:,.0f}" for k, v in plan["plan"]["spend"].items() if v >= 0.5)
    iv = plan.get("interval")
    ivs = f" (90% {min(sign * iv[0], sign * iv[1]):.4f}-{max(sign * iv[0], sign * iv[1]):.4f})" if iv else ""
    return (f"allocation {a['allocation_id']} of {a['budget']:,.0f} {a['unit']}: {spend}; predicted {metric} "
            f"{sign * plan['plan']['predicted_score']:.4f}{ivs}; diversity-only baseline "
            f"{sign * plan['baseline']['predicted_score']:.4f}")


def _verification_line(v: dict) -> str:
    """The realised gain of the verification beside the predicted one (``verify --json``'s VerificationReport)."""
    iv = v.get("predicted_gain_interval")
    ivs = f" [{iv[0]:+.3g}, {iv[1]:+.3g}]" if iv else ""
    where = {True: "inside", False: "outside", None: "not comparable with"}[v.get("inside_interval")]
    seeds = len(v["arms"][0]["seeds"]) if v.get("arms") else 0
    return (f"verification ({seeds} seed{'s' if seeds != 1 else ''} per plan at {v['model_size']}): realised gain "
            f"{_num(v.get('realised_gain'), '+.3g')} over diversity-only, predicted {v['predicted_gain']:+.3g}{ivs}: "
            f"{where} the predicted interval; allocate said: {v['decision']['verdict']}")


def _num(x, fmt: str = ".4f") -> str:
    return "n/a" if x is None else format(x, fmt)
