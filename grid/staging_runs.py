"""Rows to runs, in SQL: run identity, long tables, checkpoints, derived D and C, the split, and the staged tables.

Called by :func:`grid.staging.stage_table` on its private DuckDB connection once table ``raw`` is typed (a
``"#<column>"`` number column per mapped numeric column) and the output file is attached as ``out``.

A run is identified by the mapped ``run_id`` column, kept verbatim as the registry's run id. Without one, a
long table (a ``benchmark`` column) or a table of checkpoints (a ``step`` column) identifies a run by its mapped
run-level fields (size, tokens and FLOPs unless there is a step, seed, split, axes), and a wide table by the
whole row, as before; those runs get a hashed id ``i-<16 hex>``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import duckdb

from grid.errors import TableImportError
from grid.schema import axis_column
from grid.split import heldout_threshold
from toolscale.config import FLOPS_PER_PARAM_TOKEN

__all__ = ["build_runs", "split_sql", "RUN_LEVEL"]

RUN_LEVEL = ("model_size", "model_params", "train_tokens", "train_flops", "seed", "split")
"""Mapped fields that belong to a run (every row of one run must agree on them), besides its axes."""
_NULL = "CAST(NULL AS DOUBLE)"


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _first(m: duckdb.DuckDBPyConnection, sql: str) -> tuple | None:
    rows = m.execute(sql + " ORDER BY _line LIMIT 1").fetchall()
    return rows[0] if rows else None


def _num(col: str) -> str:
    """The column holding ``col`` parsed as a number once (NULL for a missing or unparsable cell)."""
    return _q("#" + col)


def split_sql(m: duckdb.DuckDBPyConnection, table: str, heldout_fraction: float, mapped: bool) -> str:
    """The SQL of each run's split: the mapped column, or the top-FLOPs rule (:func:`grid.split.heldout_threshold`)
    over the runs of ``table`` when every run's FLOPs are known."""
    if mapped:
        return "split"
    flops = m.execute(f"SELECT c FROM {table}").fetchnumpy()["c"]
    if hasattr(flops, "mask") and flops.mask.any():
        return "split"
    cut = heldout_threshold(flops.astype(float).tolist(), heldout_fraction, min_fit=1)
    if cut is None:
        return "split"
    bound = f"CAST({_lit(repr(float(cut[0])))} AS DOUBLE)"  # exact: the shortest repr round-trips
    return f"CASE WHEN c {'>' if cut[1] else '>='} {bound} THEN 'heldout' ELSE split END"




def _key(mapping: dict[str, str], axes: Sequence[str], columns: Sequence[str]) -> str:
    """SQL of a row's run key (text) before any checkpoint suffix."""
    if "run_id" in mapping:  # verbatim: " run-2 " is the user's id, spaces included
        return _q(mapping["run_id"])
    if "benchmark" not in mapping and "step" not in mapping:
        cells = ", ".join(f"coalesce({_q(c)}, '')" for c in columns)
        return f"left(sha256(concat_ws(chr(31), {cells})), 16)"
    fields = [t for t in (*RUN_LEVEL, *axes) if t in mapping and not ("step" in mapping and
                                                                      t in ("train_tokens", "train_flops"))]
    parts = ", ".join(f"coalesce(trim({_q(mapping[t])}), '')" for t in fields) or "''"
    return f"left(sha256(concat_ws(chr(31), {parts})), 16)"


def _check_blank(m: duckdb.DuckDBPyConnection, mapping: dict[str, str], target: str) -> None:
    if target not in mapping:
        return
    col = mapping[target]
    bad = _first(m, f"SELECT _line, {_q(col)} FROM raw WHERE ts_blank({_q(col)})")
    if bad:
        raise TableImportError(f"row {bad[0]}: column {col!r} ({target}) is empty ({bad[1]!r}); every row needs "
                               "it (leave such rows out with --where)")


def _rows(m: duckdb.DuckDBPyConnection, mapping: dict[str, str], axes: Sequence[str], columns: Sequence[str],
          benchmark: str | None, weight: str | None) -> None:
    """Table ``t``: one typed row per file row, with its run key ``rk``."""
    def col(target: str) -> str:
        return _num(mapping[target]) if target in mapping else _NULL

    params = f"coalesce({col('model_params')}, {col('model_size')})"
    fallback = f"coalesce(format('{{:.3g}}', {params}), 'unknown')"
    label = (f"CASE WHEN ts_blank({_q(mapping['model_size'])}) THEN {fallback} ELSE trim({_q(mapping['model_size'])}) "
             "END" if "model_size" in mapping else fallback)
    used = set(mapping.values()) | ({weight} if weight else set())
    meta_cols = [c for c in columns if c not in used]
    meta = f"json_object({', '.join(f'{_lit(c)}, {_q(c)}' for c in meta_cols)})" if meta_cols else "json_object()"
    recipe = f"json_object({', '.join(f'{_lit(a)}, {_num(mapping[a])}' for a in axes)})" if axes else "json_object()"
    bench = f"trim({_q(mapping['benchmark'])})" if "benchmark" in mapping else _lit(benchmark or "")
    split = f"trim({_q(mapping['split'])})" if "split" in mapping else "'fit'"
    w = _num(weight) if weight else _NULL
    m.execute(f"""CREATE TABLE t AS SELECT _line, {_key(mapping, axes, columns)} AS rk, {label} AS model_size,
        {params} AS model_params, {col('train_tokens')} AS d0, {col('train_flops')} AS c0,
        CAST(coalesce({col('seed')}, 0) AS INTEGER) AS seed, {bench} AS benchmark, {split} AS split,
        {recipe} AS recipe, {meta} AS columns, {col('score')} AS score, {col('loss')} AS loss, {w} AS w,
        {col('step')} AS step{''.join(f', {_num(mapping[a])} AS {_q(axis_column(a))}' for a in axes)}
        FROM raw""")
    m.execute("DROP TABLE raw")


def _duplicates(m: duckdb.DuckDBPyConnection, mapping: dict[str, str]) -> None:
    """One row per run, benchmark and step."""
    dup = m.execute("SELECT rk, benchmark, step, count(*), min(_line), max(_line) FROM t GROUP BY rk, benchmark, step "
                    "HAVING count(*) > 1 ORDER BY min(_line) LIMIT 1").fetchall()
    if not dup:
        return
    rk, bench, step, n, a, b = dup[0]
    at = f" at step {step:g}" if step is not None else ""
    if "benchmark" in mapping:
        raise TableImportError(f"run {rk!r} has {n} values for benchmark {bench!r}{at} (rows {a} and {b}); keep one "
                               "row per run, benchmark and step")
    what = "run_id" if "run_id" in mapping else "run (same mapped fields)"
    raise TableImportError(f"two rows have the same {what} ({rk!r}, {n} rows){at}: rows {a} and {b}; map a unique "
                           "column to run_id")


def _checkpoints(m: duckdb.DuckDBPyConnection, mapping: dict[str, str], checkpoints: str,
                 notes: list[str]) -> None:
    """Column ``run_key``: the run key, with ``@step`` for every checkpoint kept (``all``); ``last`` keeps each
    run's last checkpoint only."""
    if "step" in mapping and checkpoints == "last":
        before = m.execute("SELECT count(DISTINCT (rk, step)) FROM t").fetchall()[0][0]
        m.execute("CREATE TABLE t2 AS SELECT * FROM t QUALIFY step = max(step) OVER (PARTITION BY rk) ORDER BY _line; "
                  "DROP TABLE t; ALTER TABLE t2 RENAME TO t")
        runs = m.execute("SELECT count(DISTINCT rk) FROM t").fetchall()[0][0]
        if before > runs:
            notes.append(f"kept the last checkpoint of each run: {runs:,} runs from {before:,} checkpoints "
                         "(--checkpoints all keeps every one)")
    key = "rk || '@' || format('{:g}', step)" if "step" in mapping and checkpoints == "all" else "rk"
    m.execute(f"ALTER TABLE t ADD COLUMN run_key VARCHAR; UPDATE t SET run_key = {key}")


def _agree(m: duckdb.DuckDBPyConnection, mapping: dict[str, str], axes: Sequence[str]) -> None:
    """Rows of one run (a long table) must agree on its run-level fields."""
    fields = {"model_size": "model_size", "model_params": "model_params", "train_tokens": "d0",
              "train_flops": "c0", "seed": "seed", "split": "split",
              **{a: _q(axis_column(a)) for a in axes}}
    for target, expr in fields.items():
        if target not in mapping:
            continue
        bad = m.execute(f"SELECT run_key, min(_line), max(_line) FROM t GROUP BY run_key HAVING "
                        f"count(DISTINCT coalesce(CAST({expr} AS VARCHAR), '')) > 1 ORDER BY min(_line) LIMIT 1"
                        ).fetchall()
        if bad:
            raise TableImportError(f"run {bad[0][0]!r}: its rows disagree on {target} (column {mapping[target]!r}, "
                                   f"rows {bad[0][1]} to {bad[0][2]}); one run has one value")


def build_runs(m: duckdb.DuckDBPyConnection, mapping: dict[str, str], axes: list[str], columns: list[str], *,
               experiment: str, benchmark: str | None, heldout_fraction: float,
               checkpoints: Literal["last", "all"], weight: str | None, notes: list[str]) -> int:
    """Write ``out.runs`` and ``out.metrics`` (the shape of :func:`grid.import_store.specs_to_tables`) from table
    ``raw``; returns the number of held-out runs."""
    for target in ("run_id", "benchmark", "step"):
        _check_blank(m, mapping, target)
    _rows(m, mapping, axes, columns, benchmark, weight)
    _duplicates(m, mapping)
    _checkpoints(m, mapping, checkpoints, notes)
    if "benchmark" in mapping:
        _agree(m, mapping, axes)
    k6 = FLOPS_PER_PARAM_TOKEN
    run_id = "run_key" if "run_id" in mapping else f"'i-' || left(sha256({_lit(experiment)} || chr(0) || run_key), 16)"
    cols = ["rk", "model_size", "model_params", "d0", "c0", "seed", "split", "recipe", "columns", "step",
            *[_q(axis_column(a)) for a in axes]]
    if "benchmark" in mapping or "step" in mapping:  # several rows per run: its first row's values (they agree)
        g = (f"SELECT run_key, min(_line) AS first_line, {', '.join(f'arg_min({c}, _line) AS {c}' for c in cols)} "
             "FROM t GROUP BY run_key")
    else:  # one row per run (duplicates were refused)
        g = f"SELECT run_key, _line AS first_line, {', '.join(cols)} FROM t"
    m.execute(f"""CREATE TABLE r AS
        WITH g AS ({g}),
        f AS (SELECT *, coalesce(c0, {k6} * model_params * d0) AS c FROM g)
        SELECT * EXCLUDE (d0, c0), coalesce(d0, c / ({k6} * model_params)) AS d, {run_id} AS run_id FROM f""")
    bad = m.execute("SELECT run_key, model_params, d FROM r WHERE c IS NOT NULL AND NOT isfinite(c) "
                    "ORDER BY first_line LIMIT 1").fetchall()
    if bad:
        raise TableImportError(f"run {bad[0][0]!r}: train_flops = 6 N D overflows (N = {bad[0][1]:g}, "
                               f"D = {bad[0][2]:g})")
    split = split_sql(m, "r", heldout_fraction, "split" in mapping)
    axis_sel = "".join(f", {_q(axis_column(a))}" for a in axes)
    step_meta = ", 'step', step, 'checkpoint_of', rk" if "step" in mapping else ""
    m.execute(f"""CREATE TABLE out.runs AS SELECT run_id, {_lit(experiment)} AS experiment,
        'import' AS design_version, CAST(recipe AS VARCHAR) AS recipe, model_size, model_params, d AS train_tokens,
        c AS train_flops, seed, {split} AS split,
        CAST(json_object('import_key', run_key, 'columns', columns, 'token_multiplier', 1.0{step_meta}) AS VARCHAR)
            AS metadata{axis_sel}
        FROM r ORDER BY first_line""")
    score_w, loss_w = ("t.w", "NULL") if "score" in mapping else ("NULL", "t.w")
    m.execute(f"""CREATE TABLE out.metrics AS
        SELECT r.run_id, t.benchmark, 'score' AS metric, '1' AS version, t.score AS score,
               CAST({score_w} AS DOUBLE) AS stderr, CAST(NULL AS INTEGER) AS n_items, TRUE AS higher_is_better
        FROM t JOIN r USING (run_key) WHERE t.score IS NOT NULL
        UNION ALL
        SELECT r.run_id, t.benchmark, 'loss', '1', t.loss, CAST({loss_w} AS DOUBLE), NULL, FALSE
        FROM t JOIN r USING (run_key) WHERE t.loss IS NOT NULL""")
    _notes(m, mapping, notes)
    return int(m.execute("SELECT count(*) FROM out.runs WHERE split = 'heldout'").fetchall()[0][0])


def _notes(m: duckdb.DuckDBPyConnection, mapping: dict[str, str], notes: list[str]) -> None:
    """What the user should know before fitting: sizes that are only labels, no tokens or FLOPs."""
    n_runs, with_n, with_c = m.execute("SELECT count(*), count(model_params), count(c) FROM r").fetchall()[0]
    if with_n == 0:
        labels = [r[0] for r in m.execute("SELECT DISTINCT model_size FROM r LIMIT 3").fetchall()]
        notes.append(f"no run has a parameter count (model sizes such as {', '.join(map(repr, labels))} are labels): "
                     "fit and allocate need N; map a column of counts to model_params (70M, 2.8B are read)")
    elif with_n < n_runs:
        labels = [r[0] for r in m.execute("SELECT DISTINCT model_size FROM r WHERE model_params IS NULL "
                                          "LIMIT 3").fetchall()]
        notes.append(f"{n_runs - with_n} of {n_runs} runs have no parameter count (model sizes such as "
                     f"{', '.join(map(repr, labels))} are labels): fit needs one for every run; give a count (70M, "
                     "2.8B) or leave those rows out with --where")
    elif with_c < n_runs:
        notes.append(f"{n_runs - with_c} of {n_runs} runs have no training tokens or FLOPs: laws over D and the "
                     "top-FLOPs split need them (map train_tokens or train_flops)")
