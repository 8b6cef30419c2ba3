"""The registry's connection core: the single-writer lock, the schema version, migrations, transactions.

DuckDB allows one writing process at a time. Commands open the registry for as
long as they need it and close it; compute jobs never open it (they write result
files, see :mod:`grid.results`). A second process that wants the file while it is
held waits up to ``lock_timeout_s`` (default 30 s, env ``TOOLSCALE_LOCK_TIMEOUT``)
and then gets :class:`~grid.errors.RegistryLockedError` naming the holder's PID.

Every multi-row write runs in one transaction: a process killed mid-write leaves
the file as it was before the write. The stores (:mod:`grid.run_store`,
:mod:`grid.artifact_store`, :mod:`grid.fit_store`) build on :class:`Connection`;
together with it they are the only code that runs SQL.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Self

import duckdb

from grid.errors import (RegistryCorruptError, RegistryError, RegistryLockedError, RegistryNotFoundError,
                         RegistryPathError, RegistryWriteError)
from toolscale.errors import UsageError
from grid.models import RegistryCheck, TableCheck
from grid.schema import MIGRATIONS, SCHEMA_VERSION

__all__ = ["Connection", "DEFAULT_LOCK_TIMEOUT_S", "code_version", "now", "registry_failure", "check_registry",
           "check_registry_path", "lock_timeout_from_env", "migrate_registry"]

DEFAULT_LOCK_TIMEOUT_S = 30.0
"""Seconds a process waits for another one to release the registry file (env ``TOOLSCALE_LOCK_TIMEOUT``)."""

_LOCK_PID = re.compile(r"PID (\d+)")
_MAGIC = b"DUCK"
"""DuckDB's file magic, at bytes 8-11 (after the header checksum)."""
MAX_LOCK_TIMEOUT_S = 86400.0


def lock_timeout_from_env() -> float:
    """``TOOLSCALE_LOCK_TIMEOUT`` in seconds (default :data:`DEFAULT_LOCK_TIMEOUT_S`); exit 2 if not in [0, 1 day]."""
    raw = os.environ.get("TOOLSCALE_LOCK_TIMEOUT")
    if raw is None or not raw.strip():
        return DEFAULT_LOCK_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not 0 <= value <= MAX_LOCK_TIMEOUT_S:  # NaN fails too
        raise UsageError(f"TOOLSCALE_LOCK_TIMEOUT must be a number of seconds in [0, {MAX_LOCK_TIMEOUT_S:g}]; "
                         f"got {raw[:40]!r}")
    return value


def check_registry_path(path: str) -> None:
    """Refuse a ``path`` that exists but is not a DuckDB file (:class:`RegistryPathError`, exit 2).

    DuckDB opens an existing CSV, Parquet or JSON file as an *in-memory* database: every write then goes
    nowhere. So an existing path must be a regular file with DuckDB's magic bytes; a missing one is created.
    """
    p = Path(path)
    if p.is_dir():
        raise RegistryPathError(f"--registry {path} is a folder; name the registry's .duckdb file "
                                f"(for example {p / 'toolscale.duckdb'})")
    if not p.exists():
        return
    if not p.is_file():
        raise RegistryPathError(f"--registry {path} is not a regular file (a FIFO, socket or device); name the "
                                "registry's .duckdb file")
    try:
        with open(p, "rb") as fh:
            head = fh.read(12)
    except OSError as exc:
        raise RegistryWriteError(f"cannot read registry {path}: {exc.strerror or exc}") from None
    if head[8:12] != _MAGIC:
        kind = {".csv": "a CSV table", ".parquet": "a Parquet table", ".json": "a JSON file",
                ".jsonl": "a JSON-lines file"}.get(p.suffix.lower(), "not a DuckDB file")
        raise RegistryPathError(
            f"--registry {path} is {kind}{' (no DuckDB header)' if kind.startswith('a ') else ''}, not a "
            f"registry ({len(head)} header bytes); pass the .duckdb registry (a table is imported with "
            "`toolscale import-runs TABLE --registry REGISTRY.duckdb`)")


def now() -> datetime:
    """Current UTC time without tzinfo (DuckDB TIMESTAMP)."""
    return datetime.now(UTC).replace(tzinfo=None)


def code_version(root: str | Path | None = None) -> str:
    """The git commit of the code (``+dirty`` when the tree has changes), or ``unknown``."""
    cwd = Path(root) if root else Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=5)
        if head.returncode != 0:
            return "unknown"
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd,
                               capture_output=True, text=True, timeout=5)
        return head.stdout.strip()[:12] + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


_CORRUPT = ("could not read enough bytes", "checksum", "corrupt", "not a valid duckdb", "invalid block",
            "deserializ", "serializ", "malformed", "magic bytes", "unexpected end")
_UNWRITABLE = ("permission denied", "read-only file system", "cannot open file", "failed to create", "wal",
               "could not write", "could not open file")


def registry_failure(path: str, err: BaseException) -> RegistryError:
    """One line for a DuckDB error on the registry file: corrupt, unwritable, disk full, or (else) unreadable.

    The messages name the file and what to do: restore a backup and run ``toolscale registry check``; open
    a folder that lets DuckDB create ``FILE.wal`` beside the file; free disk space.
    """
    msg = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    low = msg.lower()
    folder = Path(path).resolve().parent
    if "no space left" in low or "disk full" in low or "not enough space" in low:
        return RegistryWriteError(f"disk full while writing registry {path} ({msg}); free space on {folder}, "
                                  "nothing was committed")
    if any(k in low for k in _CORRUPT) or isinstance(err, duckdb.InternalException | duckdb.SerializationException):
        return RegistryCorruptError(
            f"registry {path} is corrupt or truncated ({msg}); restore it from your backup copy "
            f"and run `toolscale registry check --registry {path}` to see which tables are readable")
    if isinstance(err, duckdb.TransactionException) or any(k in low for k in _UNWRITABLE):
        if not os.access(folder, os.W_OK):
            return RegistryWriteError(f"cannot write registry {path}: its folder {folder} is not writable (DuckDB "
                                      f"creates {Path(path).name}.wal beside the file); nothing was changed")
        return RegistryWriteError(f"cannot write registry {path}: {msg}")
    return RegistryError(f"cannot use registry {path}: {msg}")


def _connect(path: str, read_only: bool, timeout_s: float) -> duckdb.DuckDBPyConnection:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            con = duckdb.connect(path, read_only=read_only)
            con.execute("SET enable_progress_bar = false")  # no progress bar on stderr: one line per error
            return con
        except duckdb.Error as err:
            msg = str(err)
            if not isinstance(err, duckdb.IOException) or "lock" not in msg.lower():
                raise registry_failure(path, err) from None
            if time.monotonic() >= deadline:
                pid = _LOCK_PID.search(msg)
                holder = f"process {pid.group(1)}" if pid else "another process"
                raise RegistryLockedError(
                    f"registry {path} is locked by {holder}; waited {timeout_s:g} s "
                    f"(set TOOLSCALE_LOCK_TIMEOUT to wait longer)") from None
            time.sleep(0.2)


class Connection:
    """An open registry file, migrated to :data:`~grid.schema.SCHEMA_VERSION`. A context manager; closes on exit.

    Parameters
    ----------
    path : path of the ``.duckdb`` file (created, with its schema, if missing).
    read_only : open without write access (still takes a shared lock); an older schema is migrated first
        (briefly read-write), or refused with one line naming ``toolscale registry migrate``.
    lock_timeout_s : seconds to wait for another process to release the file.
    migrate : migrate an older file at once (False: :func:`migrate_registry`, to see the old version first, and
        :func:`check_registry`, which never changes the file).
    """

    _CHUNK = 400
    """Rows per multi-row statement (DuckDB's prepared statements slow down past a few thousand parameters)."""

    def __init__(self, path: str | Path, *, read_only: bool = False, lock_timeout_s: float | None = None,
                 migrate: bool = True):
        self.path = str(path)
        check_registry_path(self.path)
        if read_only and not Path(self.path).exists():
            raise RegistryNotFoundError(f"registry not found: {self.path} (run `toolscale grid design` or "
                                        "`import-runs` first)")
        if not read_only:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        timeout = lock_timeout_s if lock_timeout_s is not None else lock_timeout_from_env()
        self.con = _connect(self.path, read_only, timeout)
        self.read_only = read_only
        try:
            if not read_only:
                if migrate:
                    self.migrate()
            elif (v := self._check_version()) < SCHEMA_VERSION and migrate:
                self.con.close()
                self._migrate_for_reading(v, timeout)
        except duckdb.Error as err:
            self.con.close()
            raise registry_failure(self.path, err) from None
        except BaseException:
            self.con.close()
            raise

    def _migrate_for_reading(self, old: int, timeout: float) -> None:
        """An older registry opened for reading: migrate it once (briefly read-write), then reopen read-only.

        Read paths query today's columns; an unmigrated file would fail on the first one. Where the file cannot
        be written, one line says so and names the command that migrates it.
        """
        try:
            Connection(self.path, lock_timeout_s=timeout).close()  # opening read-write migrates
        except (RegistryWriteError, RegistryLockedError) as err:
            raise RegistryWriteError(
                f"registry {self.path} has schema version {old}, older than this code's {SCHEMA_VERSION}, and "
                f"could not be migrated here ({err}); run `toolscale registry migrate --registry {self.path}` "
                "where the file is writable") from None
        self.con = _connect(self.path, True, timeout)

    # ---- lifecycle -------------------------------------------------------
    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        """Close; a DuckDB error raised inside the block leaves as one :class:`RegistryError` line."""
        try:
            self.close()
        except duckdb.Error:
            pass
        if isinstance(exc, duckdb.Error):
            raise registry_failure(self.path, exc) from exc

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """All-or-nothing block: rolled back on any exception."""
        self.con.begin()
        try:
            yield
        except BaseException:
            self.con.rollback()
            raise
        self.con.commit()

    # ---- schema ----------------------------------------------------------
    def schema_version(self) -> int:
        """Version of the file's schema (0 for an empty file)."""
        has_meta = self.con.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'schema_meta'").fetchone()[0]
        if not has_meta:
            return 0
        row = self.con.execute("SELECT value FROM schema_meta WHERE key = 'schema_version'").fetchone()
        if not row:
            return 0
        try:
            v = int(str(row[0]).strip())
        except ValueError:
            v = -1
        if v < 0:
            raise RegistryCorruptError(
                f"registry {self.path} is corrupt: its schema_version is {str(row[0])[:40]!r}, not a version "
                f"number; restore it from your backup copy and run `toolscale registry check --registry "
                f"{self.path}` to see which tables are readable")
        return v

    def _check_version(self) -> int:
        v = self.schema_version()
        if v > SCHEMA_VERSION:
            raise RegistryError(f"registry {self.path} has schema version {v}, newer than this code's "
                                f"{SCHEMA_VERSION}; upgrade toolscale")
        return v

    def migrate(self) -> int:
        """Apply the missing migrations in one transaction; returns the new version."""
        self._check_version()
        v = self.schema_version()
        if v == SCHEMA_VERSION:
            return v
        with self.transaction():
            for statements in MIGRATIONS[v:]:
                for sql in statements:
                    self.con.execute(sql)
            self.con.execute("INSERT OR REPLACE INTO schema_meta VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)])
        return SCHEMA_VERSION

    # ---- integrity ---------------------------------------------------------
    def check_tables(self) -> list[TableCheck]:
        """Read every row of every table (DuckDB verifies each block's checksum as it reads it).

        A table that fails is reported with DuckDB's first error line and the others are still read.
        """
        names = [r[0] for r in self.con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' ORDER BY table_name"
        ).fetchall()]
        out = []
        for name in names:
            try:
                cur = self.con.execute(f'SELECT * FROM "{name}"')
                rows = 0
                while batch := cur.fetchmany(10_000):
                    rows += len(batch)
                out.append(TableCheck(table=name, rows=rows, ok=True))
            except duckdb.Error as err:
                out.append(TableCheck(table=name, rows=None, ok=False, error=str(err).strip().splitlines()[0]))
        return out

    # ---- shared SQL helpers ----------------------------------------------
    @staticmethod
    def _json(value: Any) -> str:
        """``value`` as canonical JSON text (sorted keys; anything else as ``str``)."""
        return json.dumps(value, sort_keys=True, default=str)

    @staticmethod
    def _where(**filters: Any) -> tuple[str, list[Any]]:
        """``(" WHERE a = ? AND b IN (?, ?)", args)`` for the filters that are not None.

        A scalar filters with ``=``; a list, tuple or set with ``IN`` (an empty one
        matches nothing). The keyword names are column names written by this
        package's code, never user text. No filters: ``("", [])``.
        """
        clauses: list[str] = []
        args: list[Any] = []
        for column, value in filters.items():
            if value is None:
                continue
            if isinstance(value, list | tuple | set | frozenset):
                values = list(value)
                if not values:
                    clauses.append("FALSE")
                    continue
                clauses.append(f"{column} IN ({', '.join('?' for _ in values)})")
                args.extend(values)
            else:
                clauses.append(f"{column} = ?")
                args.append(value)
        return (" WHERE " + " AND ".join(clauses) if clauses else ""), args

    def _existing(self, table: str, column: str, values: Sequence[str]) -> set[str]:
        """The ``values`` present in ``table.column`` (queried in chunks)."""
        out: set[str] = set()
        values = list(dict.fromkeys(values))
        for i in range(0, len(values), self._CHUNK):
            part = values[i:i + self._CHUNK]
            where, args = self._where(**{column: part})
            out.update(r[0] for r in self.con.execute(f"SELECT {column} FROM {table}{where}", args).fetchall())
        return out

    def _values(self, sql: str, row_sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run ``sql`` with ``{values}`` replaced by chunks of ``rows`` as a multi-row VALUES list."""
        for i in range(0, len(rows), self._CHUNK):
            part = rows[i:i + self._CHUNK]
            self.con.execute(sql.format(values=", ".join(row_sql for _ in part)), [x for row in part for x in row])


def migrate_registry(path: str | Path) -> tuple[int, int]:
    """Migrate the registry at ``path`` to :data:`~grid.schema.SCHEMA_VERSION`: ``(version before, after)``."""
    check_registry_path(str(path))
    if not Path(path).exists():
        raise RegistryNotFoundError(f"registry not found: {path}")
    with Connection(path, migrate=False) as con:
        before = con._check_version()
        return before, con.migrate()


def check_registry(path: str | Path) -> RegistryCheck:
    """Open ``path`` read-only and read every table end to end; never raises for a damaged file.

    Raises :class:`~grid.errors.RegistryNotFoundError` only when there is no file at all.
    """
    p = Path(path)
    if not p.exists():
        raise RegistryNotFoundError(f"registry not found: {p}")
    size = p.stat().st_size
    try:
        con = Connection(p, read_only=True, migrate=False)
    except RegistryLockedError:
        raise
    except RegistryError as err:
        return RegistryCheck(path=str(p), size_bytes=size, schema_version=None, ok=False, error=str(err))
    try:
        version = con.schema_version()
        tables = con.check_tables()
    except duckdb.Error as err:
        return RegistryCheck(path=str(p), size_bytes=size, schema_version=None, ok=False,
                             error=str(registry_failure(str(p), err)))
    finally:
        try:
            con.close()
        except duckdb.Error:
            pass
    return RegistryCheck(path=str(p), size_bytes=size, schema_version=version, tables=tables,
                         ok=all(t.ok for t in tables))
