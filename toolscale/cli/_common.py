"""Small helpers shared by the command modules: registry resolution, JSON and tables."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from toolscale.config import ExperimentConfig, load_config
from toolscale.errors import UsageError

__all__ = ["add_registry_args", "benchmark_of", "registry_path", "config_of", "emit_json", "print_table", "Formatter",
           "positive_float", "positive_int", "nonneg_int", "check_tool_axis", "check_grpo_budget", "open_fraction",
           "writable_file", "writable_dir", "amount"]

Formatter = argparse.RawDescriptionHelpFormatter
DEFAULT_REGISTRY = "./toolscale.duckdb"


def add_registry_args(p: argparse.ArgumentParser, config_required: bool = False) -> None:
    """``--registry PATH`` and ``--config CONFIG`` (the config's registry path is used when given)."""
    p.add_argument("--config", required=config_required, metavar="CONFIG", help="experiment config (TOML)")
    p.add_argument("--registry", metavar="PATH",
                   help=f"DuckDB registry file (default: the config's, else {DEFAULT_REGISTRY})")


def config_of(args: argparse.Namespace) -> ExperimentConfig | None:
    """The loaded config named by ``--config``, or None."""
    path = getattr(args, "config", None)
    return load_config(path) if path else None


def registry_path(args: argparse.Namespace, config: ExperimentConfig | None = None) -> str:
    """``--registry``, else the config's ``experiment.registry``, else ``./toolscale.duckdb``."""
    if getattr(args, "registry", None):
        return args.registry
    config = config or config_of(args)
    return config.experiment.registry if config else DEFAULT_REGISTRY


def benchmark_of(args: argparse.Namespace, config: ExperimentConfig | None, command: str) -> str:
    """``--benchmark``, else the benchmark of the stored fit ``--fit-id`` (UsageError, exit 2, for neither; an
    unknown id is :class:`grid.errors.UnknownNameError`, exit 2)."""
    if args.benchmark:
        return args.benchmark
    if args.fit_id is None:
        raise UsageError(f"{command} needs --benchmark NAME (a stored fit's --fit-id ID names its own)")
    from grid.registry import Registry

    with Registry(registry_path(args, config), read_only=True) as reg:
        return reg.fit(args.fit_id).benchmark


def _clean(obj: Any) -> Any:
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_clean(v) for v in obj]
    if hasattr(obj, "model_dump"):
        return _clean(obj.model_dump(mode="json"))
    if isinstance(obj, Path):
        return str(obj)
    return obj


def emit_json(obj: Any) -> None:
    """Print ``obj`` as JSON on stdout (NaN and inf become null)."""
    print(json.dumps(_clean(obj), indent=2, default=str))


def print_table(rows: list[dict[str, Any]], title: str | None = None, file=None) -> None:
    """A rich table of ``rows`` (dicts with the same keys) on stdout."""
    from rich.console import Console
    from rich.table import Table

    out = file or sys.stdout
    # a log or pipe gets the table's natural width (up to 160 columns), not names cut at 80
    console = Console(file=out, width=None if out.isatty() else 160)
    if not rows:
        console.print(f"{title}: (none)" if title else "(none)")
        return
    table = Table()
    for key in rows[0]:
        table.add_column(str(key))
    for row in rows:
        table.add_row(*[_fmt(v) for v in row.values()])
    if title and len(title) > console.measure(table).maximum:  # a title wider than the table is not wrapped
        console.print(title, style="italic", soft_wrap=True, highlight=False)
    else:
        table.title = title
    console.print(table)


def _fmt(v: Any) -> str:
    """Table cell text: 4 significant digits, exponents short (``9.846e4``, so tables fit 80 columns)."""
    if isinstance(v, float):
        text = f"{v:.4g}"
        if "e" in text:
            mantissa, exp = text.split("e")
            text = f"{mantissa}e{int(exp)}"
        return text
    return "" if v is None else str(v)


def positive_float(text: str) -> float:
    """argparse type: a finite number > 0 (the error names the value)."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}") from None
    if not math.isfinite(x) or x <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return x


def seed_int(text: str) -> int:
    """argparse type: a seed, an integer in [0, 2**32 - 1] (numpy's and torch's range; the error names it)."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer seed, got {text!r}") from None
    if not 0 <= n < 2**32:
        raise argparse.ArgumentTypeError(f"must be a seed in [0, 4294967295], got {n}")
    return n


def nonneg_int(text: str) -> int:
    """argparse type: an integer >= 0 (the error names the value)."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {text!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {n}")
    return n


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1 (the error names the value)."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {n}")
    return n


def check_tool_axis(config: ExperimentConfig) -> int | None:
    """Refuse a ``tool_diversity`` axis above the tools available to the experiment's domain (tools: bundled
    training tools plus the config's ``[synth].servers``, started only when needed; code: the training
    library APIs); returns the count, or None without the axis."""
    axis = next((a for a in config.axes if a.name == "tool_diversity"), None)
    if axis is None:
        return None
    from synth.domains import domain_of

    return domain_of(config).tool_capacity(config)


def check_grpo_budget(config: ExperimentConfig) -> dict | None:
    """Refuse (UsageError) a config whose golden GRPO episodes exceed the policy budget or a rung's context
    (``train.budget``: a byte bound and estimate, before any tokenizer exists); None without the grpo stage."""
    t = config.train
    if "grpo" not in t.stages:
        return None
    from train.budget import budget_report
    from train.grpo import load_env_samples, rl_envs

    seed = config.experiment.seeds[0] if config.experiment.seeds else 0
    samples = load_env_samples(t.grpo_envs) if t.grpo_envs else rl_envs(t.grpo_n_envs, seed,
                                                                          curriculum=t.grpo_curriculum, validate=False)
    shortest = min((s for s in config.ladder if not s.pretrained), key=lambda s: s.max_seq_len, default=None)
    report = budget_report(samples, max_completion_length=t.grpo_max_completion_length,
                           max_context=shortest.max_seq_len if shortest else 10**9)
    if report["over_policy"]:
        raise UsageError(f"{report['over_policy']} of {report['n']} golden GRPO episodes exceed "
                         f"train.grpo_max_completion_length = {t.grpo_max_completion_length} (the longest needs up to "
                         f"{report['max_policy']} tokens); raise it")
    if report["over_context"] and shortest is not None:
        raise UsageError(f"{report['over_context']} of {report['n']} golden GRPO episodes (prompt, calls and "
                         f"observations) exceed max_seq_len = {shortest.max_seq_len} of rung {shortest.name!r} (the "
                         f"longest is about {report['max_context']} tokens); raise max_seq_len or use fewer "
                         "distractors")
    return report


def open_fraction(text: str) -> float:
    """argparse type: a number strictly between 0 and 1 (the error names the value)."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1), got {text!r}") from None
    if not (math.isfinite(x) and 0.0 < x < 1.0):
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1), got {text}")
    return x


def _unwritable(path: Path, what: str) -> str:
    """Why ``path`` cannot be written (empty when it can): checked before any work starts. The nearest folder
    that exists is tried with a real temporary file (root passes every ``os.access`` check, /proc refuses)."""
    import os
    import tempfile

    if what == "file" and path.exists() and not path.resolve().is_file():
        return f"{what} {path} exists and is not a regular file"
    if path.exists() and not os.access(path, os.W_OK):
        return f"{what} {path} is not writable"
    probe = path.resolve() if what == "folder" and path.is_dir() else path.resolve().parent
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        return f"{what} {path}: {probe} is not a folder"
    try:
        fd, tmp = tempfile.mkstemp(dir=probe, prefix=".toolscale-probe.")
    except OSError as err:
        return f"cannot write {what} {path}: folder {probe}: {err.strerror or err}"
    os.close(fd)
    os.unlink(tmp)
    return ""


def amount(x: float, decimals: int = 2) -> str:
    """``x`` with thousands separators and ``decimals`` places; ``%.4g`` from 1e15 up (not 300 digits)."""
    return f"{x:,.{decimals}f}" if abs(x) < 1e15 else f"{x:.4g}"


PLOT_SUFFIXES = (".png", ".pdf", ".svg", ".jpg", ".jpeg")
"""What ``--plot`` may be named (the formats matplotlib writes that a person opens)."""


def writable_file(path: str | Path, flag: str = "--out", *, suffixes: Sequence[str] = (),
                  protect: Sequence[str | Path | None] = ()) -> Path:
    """``path`` as a Path, or UsageError (exit 2) naming ``flag`` when the file cannot be written there, its
    suffix is not one of ``suffixes`` (lower case, with the dot; empty: any), or it is one of the ``protect``
    files (the registry, the config: a write would replace them)."""
    from toolscale.errors import UsageError

    p = Path(path)
    if not str(path).strip():
        raise UsageError(f"{flag} is empty; give a file name")
    if p.is_dir():
        raise UsageError(f"{flag} {p} is a folder; give a file name")
    for other in protect:
        if other is not None and p.exists() and Path(other).exists() and p.resolve() == Path(other).resolve():
            raise UsageError(f"{flag} {p} is the file {other} this command reads; writing would replace it")
    if suffixes and p.suffix.lower() not in suffixes:
        raise UsageError(f"{flag} {p}: suffix {p.suffix or '(none)'!r} is not one of {', '.join(suffixes)}")
    problem = _unwritable(p, "file")
    if problem:
        raise UsageError(f"{flag}: {problem}")
    return p


def writable_dir(path: str | Path, flag: str = "--out") -> Path:
    """``path`` as a Path, or UsageError (exit 2) naming ``flag`` when the folder cannot be created or written."""
    from toolscale.errors import UsageError

    p = Path(path)
    if not str(path).strip():
        raise UsageError(f"{flag} is empty; give a folder")
    if p.exists() and not p.is_dir():
        raise UsageError(f"{flag} {p} exists and is not a folder")
    problem = _unwritable(p, "folder")
    if problem:
        raise UsageError(f"{flag}: {problem}")
    return p
