"""The umbrella CLI: ``toolscale <command>``; a thin layer over library calls.

``main(argv) -> int`` parses, calls one library function per command, renders a
table or ``--json``. Each command group lives in its own module here and exposes
``register(subparsers)``; tests call ``main([...])`` directly.

Errors: a :class:`toolscale.errors.ToolscaleError` prints one line on stderr and
returns its exit code (2 for usage errors, 1 for failures); ``--debug`` shows the
traceback instead.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import traceback
from collections.abc import Sequence
from typing import NoReturn

from toolscale.errors import ToolscaleError

__all__ = ["main", "allocate_main", "build_parser", "COMMAND_MODULES"]

COMMAND_MODULES = ("project", "registry", "grid", "synth", "envs", "probe", "train", "lrscan", "eval", "serve", "launch",
                   "cluster", "fit", "fits", "allocate", "next_runs", "verify", "demo")
"""Modules of :mod:`toolscale.cli` contributing subcommands, in ``--help`` order."""

EPILOG = """\
examples:
  toolscale init my.toml && toolscale validate my.toml
  toolscale grid design my.toml --dry-run --json
  toolscale launch --config my.toml --executor local --wait
  toolscale fit --experiment E --benchmark heldout-calls --json
  allocate --budget 50000 --benchmark heldout-calls --experiment E
  toolscale next --benchmark heldout-calls --budget 50000 --runs 12   # which runs settle it
  toolscale demo              # the whole pipeline on CPU, in minutes

Run `toolscale COMMAND --help` for each command's options and examples."""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: the bad value and where help is, without the usage block (exit 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")

    def parse_args(self, args=None, namespace=None):  # type: ignore[override]
        """As argparse's, but arguments left over are refused by the (sub)command they were given to, so the
        line points at that command's help (`toolscale eval --help`), not the umbrella's."""
        ns, extras = self.parse_known_args(args, namespace)
        if extras:
            parser: argparse.ArgumentParser = self
            for token in sys.argv[1:] if args is None else args:
                subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
                if subs and token in subs[0].choices:
                    parser = subs[0].choices[token]
            parser.error(f"unrecognized arguments: {' '.join(extras)}")
        return ns


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="toolscale",
        description="Scaling laws for the synthetic training data of tool-using agents: design a grid, "
                    "synthesise data, train, evaluate, fit joint laws, and allocate a data budget.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--debug", action="store_true", help="show Python tracebacks for errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for name in COMMAND_MODULES:
        importlib.import_module(f"toolscale.cli.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the process exit code."""
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return int(exc.code or 0)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except ToolscaleError as err:
        if args.debug:
            traceback.print_exc()
        print(f"toolscale: error: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print("toolscale: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `toolscale export | head`
        sys.stderr.close()
        return 0
    except OSError as err:  # the environment, not the code: disk full, a folder made read-only mid-run...
        if args.debug:
            traceback.print_exc()
        where = f": {err.filename}" if err.filename else ""
        print(f"toolscale: error: {err.strerror or err}{where}", file=sys.stderr)
        return 1


def allocate_main(argv: Sequence[str] | None = None) -> int:
    """The ``allocate`` console script: same as ``toolscale allocate``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = ["--debug"] if "--debug" in argv else []
    return main([*debug, "allocate", *[a for a in argv if a != "--debug"]])


def _entry() -> None:  # pragma: no cover - console script shim
    sys.exit(main())
