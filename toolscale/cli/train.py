"""``toolscale train``: one SFT run of one ladder rung on one synthesised dataset."""

from __future__ import annotations

import argparse
import os
import sys
from importlib import resources

from toolscale.cli._common import Formatter, seed_int, emit_json, positive_int
from toolscale.config import ExperimentConfig, load_config, parse_config
from toolscale.errors import UsageError

__all__ = ["register"]

EPILOG = """\
examples:
  toolscale train --data data/r0 --model-size tiny-s --out models/r0-tiny-s
  toolscale train --config my.toml --data data/r0 --model-size tiny-l --out models/r0 --max-steps 50 --json
  toolscale train --objective grpo --envs envs.jsonl --init models/r0-tiny-s --out models/r0-rl --max-steps 20

Sizes come from the config's [[ladder]] (default: the built-in micro preset).
A rerun resumes from the last checkpoint in --out (pass --no-resume to start over)."""


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``train`` to the CLI."""
    p = sub.add_parser("train", help="train one model with SFT (TRL) on a synthesised dataset, or GRPO in environments",
                       formatter_class=Formatter, epilog=EPILOG)
    p.add_argument("--data", metavar="DIR", help="dataset folder written by `toolscale synth` (sft)")
    p.add_argument("--model-size", metavar="NAME", help="ladder rung name from the config (sft)")
    p.add_argument("--out", required=True, metavar="MODEL_DIR", help="where the trained model and tokenizer go")
    p.add_argument("--config", metavar="CONFIG", help="experiment config (TOML) with the ladder (default: micro)")
    p.add_argument("--max-steps", type=positive_int, metavar="N", help="optimizer steps (default: the rung's)")
    p.add_argument("--seed", type=seed_int, default=0, help="seed of init and data order (default 0)")
    p.add_argument("--threads", type=positive_int, help="torch CPU threads (default: the config's train.threads)")
    p.add_argument("--no-resume", action="store_true", help="ignore checkpoints in --out and start over")
    p.add_argument("--objective", choices=["sft", "grpo"], default="sft",
                   help="sft (default) or grpo: RL in executable environments, from a trained model")
    p.add_argument("--envs", metavar="FILE", help="envs.jsonl from `toolscale envs build` (grpo)")
    p.add_argument("--init", metavar="MODEL_DIR", help="model folder GRPO starts from, e.g. an SFT run (grpo)")
    p.add_argument("--num-generations", type=positive_int, help="GRPO group size (default: the config's "
                                                                 "train.grpo_generations; its other grpo_* "
                                                                 "settings apply too)")
    p.add_argument("--json", action="store_true", help="print the training accounting as JSON")
    p.set_defaults(func=_train)


def _config(path: str | None) -> ExperimentConfig:
    if path:
        return load_config(path)
    import tomllib

    text = resources.files("toolscale.presets").joinpath("micro.toml").read_text(encoding="utf-8")
    return parse_config(tomllib.loads(text))


def _train(args: argparse.Namespace) -> int:
    cfg = _config(args.config)
    threads = args.threads or cfg.train.threads
    kwargs = dict(seed=args.seed, threads=threads, resume=not args.no_resume)
    if args.objective == "grpo":
        from train.grpo import train_grpo

        if not args.envs or not args.init:
            raise UsageError("--objective grpo needs --envs FILE and --init MODEL_DIR")
        from train.grpo import Sampling

        t = cfg.train
        label, total = "grpo", args.max_steps or 20
        knobs = dict(num_generations=args.num_generations or t.grpo_generations,
                     prompts_per_step=t.grpo_prompts_per_step, max_completion_length=t.grpo_max_completion_length,
                     learning_rate=t.grpo_learning_rate, abf=t.grpo_abf, draw_cap=t.grpo_draw_cap, reward=t.grpo_reward,
                     beta=t.grpo_beta, negative_weight=t.grpo_negative_weight, vllm_mode=t.grpo_vllm,
                     sampling=Sampling(temperature=t.grpo_temperature, top_k=t.grpo_top_k, top_p=t.grpo_top_p))
        run = lambda **kw: train_grpo(args.envs, args.init, args.out, max_steps=total,  # noqa: E731
                                      **knobs, **kwargs, **kw)
    else:
        from train.sft import train_sft

        if not args.data or not args.model_size:
            raise UsageError("toolscale train needs --data DIR and --model-size NAME (or --objective grpo)")
        size = cfg.model_size(args.model_size)
        label, total = size.name, args.max_steps or size.max_steps
        run = lambda **kw: train_sft(args.data, size, args.out, max_steps=args.max_steps, train=cfg.train,  # noqa: E731
                                     **kwargs, **kw)
    if sys.stderr.isatty() and not args.json:
        from rich.progress import Progress

        with Progress(transient=True) as bar:
            task = bar.add_task(f"train {label}", total=total)

            def on_step(step: int, steps: int, loss: float | None) -> None:
                bar.update(task, completed=step, total=steps,
                           description=f"train {label}" + (f" loss {loss:.3f}" if loss is not None else ""))

            stats = run(on_step=on_step)
    else:
        stats = run()
    if os.environ.get("RANK", "0") != "0":  # torch distributed: one process reports
        return 0
    if args.json:
        emit_json({"model_dir": args.out, "objective": args.objective, "model_size": label,
                   **stats.model_dump(mode="json")})
    else:
        loss = "n/a" if stats.final_loss is None else f"{stats.final_loss:.3f}"
        print(f"trained {label} ({stats.params:,.0f} params, {args.objective}) for {stats.steps} steps on "
              f"{stats.train_tokens:,.0f} tokens ({stats.train_flops:.3g} FLOPs) in {stats.wall_s:.1f}s; "
              f"final loss {loss}; model in {args.out}")
    return 0
