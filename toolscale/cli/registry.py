"""``toolscale registry check``: read every table of a registry so damage shows before a fit depends on it."""

from __future__ import annotations

import argparse

from toolscale.cli._common import Formatter, add_registry_args, emit_json, print_table, registry_path

__all__ = ["register"]


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``registry check`` and ``registry migrate``."""
    p = sub.add_parser("registry", help="registry maintenance (check, migrate)", formatter_class=Formatter,
                       epilog="example:\n  toolscale registry check --registry toolscale.duckdb")
    rs = p.add_subparsers(dest="registry_command", metavar="SUBCOMMAND", title="subcommands")
    c = rs.add_parser("check", help="read every table end to end (DuckDB verifies each block's checksum); "
                                    "exit 1 if anything is unreadable", formatter_class=Formatter,
                      epilog="examples:\n  toolscale registry check --registry toolscale.duckdb\n"
                             "  toolscale registry check --config my.toml --json")
    add_registry_args(c)
    c.add_argument("--json", action="store_true", help="machine-readable report")
    c.set_defaults(func=_check)
    m = rs.add_parser("migrate", help="bring an older registry to this code's schema version (read commands "
                                      "also do it when the file is writable)", formatter_class=Formatter,
                      epilog="example:\n  toolscale registry migrate --registry old.duckdb")
    add_registry_args(m)
    m.add_argument("--json", action="store_true", help="machine-readable report")
    m.set_defaults(func=_migrate)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def _migrate(args: argparse.Namespace) -> int:
    from grid.connection import migrate_registry

    path = registry_path(args)
    before, after = migrate_registry(path)
    if args.json:
        emit_json({"path": path, "schema_version_before": before, "schema_version": after})
    else:
        print(f"{path}: schema version {before} -> {after}" if before != after
              else f"{path}: already at schema version {after}")
    return 0


def _check(args: argparse.Namespace) -> int:
    from grid.connection import check_registry

    report = check_registry(registry_path(args))
    if args.json:
        emit_json(report)
        return 0 if report.ok else 1
    if report.error:
        print(f"{report.path}: cannot be opened: {report.error}")
        return 1
    print_table([{"table": t.table, "rows": t.rows, "ok": "yes" if t.ok else "NO", "error": t.error[:100]}
                 for t in report.tables], title=f"{report.path} (schema v{report.schema_version}, "
                                                f"{report.size_bytes:,} bytes)")
    bad = [t.table for t in report.tables if not t.ok]
    if bad:
        print(f"{report.path}: {len(bad)} of {len(report.tables)} tables unreadable ({', '.join(bad)}); restore "
              "the file from your backup copy")
        return 1
    print(f"{report.path}: ok, every table read ({sum(t.rows or 0 for t in report.tables):,} rows)")
    return 0
