"""``toolscale train``: one SFT run of one ladder rung on one synthesised dataset."""

from __future__ import annotations

import argparse
import sys
from importlib import resources

from toolscale.cli._common import Formatter, emit_json
from toolscale.config import ExperimentConfig, load_config, parse_config

__all__ = ["register"]

EPILOG = """\
examples:
  toolscale train --data data/r0 --model-size tiny-s --out models/r0-tiny-s
  toolscale train --config my.toml --data data/r0 --model-size tiny-l --out models/r0 --max-steps 50 --json

Sizes come from the config's [[ladder]] (default: the built-in micro preset).
A rerun resumes from the last checkpoint in --out (pass --no-resume to start over)."""


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``train`` to the CLI."""
    p = sub.add_parser("train", help="train one model with SFT (TRL) on a synthesised dataset",
                       formatter_class=Formatter, epilog=EPILOG)
    p.add_argument("--data", required=True, metavar="DIR", help="dataset folder written by `toolscale synth`")
    p.add_argument("--model-size", required=True, metavar="NAME", help="ladder rung name from the config")
    p.add_argument("--out", required=True, metavar="MODEL_DIR", help="where the trained model and tokenizer go")
    p.add_argument("--config", metavar="CONFIG", help="experiment config (TOML) with the ladder (default: micro)")
    p.add_argument("--max-steps", type=_positive_int, metavar="N", help="optimizer steps (default: the rung's)")
    p.add_argument("--seed", type=int, default=0, help="seed of init and data order (default 0)")
    p.add_argument("--threads", type=_positive_int, help="torch CPU threads (default: the config's train.threads)")
    p.add_argument("--no-resume", action="store_true", help="ignore checkpoints in --out and start over")
    p.add_argument("--json", action="store_true", help="print the training accounting as JSON")
    p.set_defaults(func=_train)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def _config(path: str | None) -> ExperimentConfig:
    if path:
        return load_config(path)
    import tomllib

    text = resources.files("toolscale.presets").joinpath("micro.toml").read_text(encoding="utf-8")
    return parse_config(tomllib.loads(text))


def _train(args: argparse.Namespace) -> int:
    from train.sft import train_sft

    cfg = _config(args.config)
    size = cfg.model_size(args.model_size)
    threads = args.threads or cfg.train.threads
    kwargs = dict(max_steps=args.max_steps, seed=args.seed, threads=threads, resume=not args.no_resume)
    if sys.stderr.isatty() and not args.json:
        from rich.progress import Progress

        with Progress(transient=True) as bar:
            task = bar.add_task(f"train {size.name}", total=args.max_steps or size.max_steps)

            def on_step(step: int, total: int, loss: float | None) -> None:
                bar.update(task, completed=step, total=total,
                           description=f"train {size.name}" + (f" loss {loss:.3f}" if loss is not None else ""))

            stats = train_sft(args.data, size, args.out, on_step=on_step, **kwargs)
    else:
        stats = train_sft(args.data, size, args.out, **kwargs)
    if args.json:
        emit_json({"model_dir": args.out, "model_size": size.name, **stats.model_dump(mode="json")})
    else:
        print(f"trained {size.name} ({stats.params:,.0f} params) for {stats.steps} steps on {stats.train_tokens:,.0f} "
              f"tokens ({stats.train_flops:.3g} FLOPs) in {stats.wall_s:.1f}s; final loss {stats.final_loss:.3f}; "
              f"model in {args.out}")
    return 0
