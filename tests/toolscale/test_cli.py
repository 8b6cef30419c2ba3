"""The umbrella CLI: help lists every command with an example; errors are one line with the right code."""

from __future__ import annotations

import subprocess
import sys

import pytest

from toolscale.cli import build_parser, main


def test_help_lists_every_subcommand_with_a_description(capsys) -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert sub.choices, "no subcommands registered"
    for name, p in sub.choices.items():
        helps = {c.dest: c.help for c in sub._choices_actions}
        assert helps.get(name), f"subcommand {name} has no one-line help"
        assert "example" in (p.epilog or ""), f"subcommand {name} has no example in its epilog"
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in sub.choices:
        assert name in out


def test_user_error_is_one_line_without_traceback(tmp_path) -> None:
    proc = subprocess.run([sys.executable, "-m", "toolscale.cli", "status", "--registry", str(tmp_path / "none.duckdb")],
                          capture_output=True, text=True)
    assert proc.returncode == 2  # a wrong path is a user mistake, as the README says
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().count("\n") == 0
    assert "registry not found" in proc.stderr


def test_usage_error_exit_code_two(capsys) -> None:
    assert main(["import-runs"]) == 2
    assert main(["no-such-command"]) == 2


def test_a_stray_argument_points_at_its_own_commands_help(capsys) -> None:
    # `toolscale eval gold ...` said "(see `toolscale --help`)", the umbrella's help, which has no eval options
    assert main(["eval", "gold", "--benchmark", "indist-calls"]) == 2
    assert capsys.readouterr().err == ("toolscale eval: error: unrecognized arguments: gold "
                                       "(see `toolscale eval --help`)\n")
    assert main(["registry", "check", "--registry", "r.duckdb", "extra"]) == 2
    assert "(see `toolscale registry check --help`)" in capsys.readouterr().err
    assert main(["--bogus"]) == 2
    assert "toolscale: error: unrecognized arguments: --bogus (see `toolscale --help`)" in capsys.readouterr().err


@pytest.mark.parametrize(("value", "text"), [(98464.0, "9.846e4"), (2.904e11, "2.904e11"), (1e-5, "1e-5"),
                                             (12.3456, "12.35"), (3.0, "3"), (None, "")])
def test_table_cells_are_short(value, text):
    from toolscale.cli._common import _fmt

    assert _fmt(value) == text


@pytest.mark.parametrize("cells", [["3"], ["a column text so wide that the whole table is wider than its title, which then heads it as before"]])
def test_a_table_title_is_never_wrapped(cells):
    """A title wider than its table (a registry's path) is printed whole on its own line; a narrower one heads
    the table as before."""
    import io

    from toolscale.cli._common import print_table

    title = "/some/long/folder/of/a/team/registry.duckdb (schema v7, 1,234,567 bytes)"
    buf = io.StringIO()
    print_table([{"table": "runs", "rows": c} for c in cells], title=title, file=buf)
    lines = buf.getvalue().splitlines()
    assert sum(title in line for line in lines) == 1, lines
