"""Subcommands of this group are registered here (being built; see the issue tracker)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    """Add this group's subcommands to the CLI."""
