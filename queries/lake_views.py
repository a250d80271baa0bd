"""DuckDB over the lake: one view per lake table and per seed, read-only.

This module reads the lake and nothing else (it knows :mod:`schemas.arrow`
for the columns, never Beam or the replay), so the CLI (``pitwatch sql``,
``pitwatch query``, ``pitwatch export-duckdb``), notebooks and tests share it.

Views (``spec/outputs.md``):

* ``events``, ``rejects``, ``rounds``, ``packs``, ``findings``:
  ``read_parquet('LAKE/<table>/**/*.parquet', hive_partitioning = true)`` with
  ``gaming_day`` typed DATE from the folder name, so ``WHERE gaming_day = …``
  (a literal or a bound parameter) opens only that day's file.
* ``runs`` (``LAKE/runs/*.parquet``) and ``rules`` (``LAKE/rules/*.parquet``).
* ``seeds_<stem>`` for every ``seeds/*.csv`` shipped with pitwatch, e.g.
  ``seeds_combate_paytable`` (``read_csv``, header row, types detected).

A table with no file yet (a young lake: no findings written) is still a view,
empty, with the columns of :mod:`schemas.arrow`, so a query never fails for
want of a table.  Column order is the files' order (``gaming_day``, the
partition key, comes last).

Read-only, two layers:

1. every statement is parsed by DuckDB (``extract_statements``) and only
   ``SELECT`` (which covers ``WITH``, ``FROM …``, ``VALUES``, ``DESCRIBE``,
   ``SHOW``, ``SUMMARIZE``) and ``EXPLAIN [ANALYZE]`` of a ``SELECT`` run;
   everything else (``INSERT``, ``CREATE``, ``COPY``, ``ATTACH``, ``SET``,
   ``PRAGMA``, ``CALL``, ``INSTALL``/``LOAD`` …) is refused;
2. after the views exist the connection itself is narrowed: file access only
   under the lake and the seeds folder (``allowed_directories`` +
   ``enable_external_access = false``), no extension auto-install/auto-load,
   ``TimeZone`` UTC, then ``lock_configuration = true``.

Schema note: partitioned views do not use ``union_by_name`` (it would open
every file's footer at bind time and defeat partition pruning), so all files
of a table must have the same columns (``pipelines.lake.write_partition``
always writes the full schema).
"""
from __future__ import annotations

import importlib.resources
import os
import re

import duckdb
import pyarrow as pa
import pyarrow.fs as pafs

from schemas.arrow import LAKE_TABLES, PARTITIONED

SEED_PREFIX = "seeds_"
READ_ONLY_TYPES = {"SELECT"}


class LakeQueryError(ValueError):
    """A user's SQL or lake cannot be used (refused statement, DuckDB error, no lake)."""


# ---------------------------------------------------------------- paths


def _is_remote(lake: str) -> bool:
    return "://" in lake


def lake_root(lake: str) -> str:
    """The lake as DuckDB sees it: an absolute local path, or the URI as given."""
    return lake.rstrip("/") if _is_remote(lake) else os.path.abspath(lake)


def _sql_str(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _has_parquet(lake: str, name: str) -> bool:
    """Whether ``LAKE/<name>/`` holds at least one visible ``*.parquet`` file."""
    if _is_remote(lake):
        fs, root = pafs.FileSystem.from_uri(lake)
    else:
        fs, root = pafs.LocalFileSystem(), os.path.abspath(lake)
    folder = f"{root.rstrip('/')}/{name}"
    if fs.get_file_info(folder).type != pafs.FileType.Directory:
        return False
    for info in fs.get_file_info(pafs.FileSelector(folder, recursive=True)):
        if info.type == pafs.FileType.File and info.base_name.endswith(".parquet") \
                and not info.base_name.startswith("."):
            return True
    return False


def seed_files() -> dict[str, str]:
    """``seeds_<stem>`` → absolute path of every CSV shipped in the ``seeds`` package."""
    root = importlib.resources.files("seeds")
    out = {}
    for entry in sorted(root.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".csv"):
            stem = re.sub(r"\W", "_", entry.name[:-4])
            out[SEED_PREFIX + stem] = os.fspath(entry)
    return out


# ---------------------------------------------------------------- view SQL


def view_columns(name: str) -> pa.Schema:
    """The columns of view ``name`` in order: the file's columns, then ``gaming_day`` if partitioned."""
    schema = LAKE_TABLES[name]
    if name in PARTITIONED:
        i = schema.get_field_index("gaming_day")
        schema = schema.remove(i).append(schema.field(i))
    return schema


def _duckdb_types(schema: pa.Schema) -> list[str]:
    con = duckdb.connect()
    try:
        return [str(t) for t in con.from_arrow(schema.empty_table()).types]
    finally:
        con.close()


def empty_select(name: str) -> str:
    """A SELECT of no rows with the columns of lake table ``name`` (for tables not written yet)."""
    schema = view_columns(name)
    cols = ", ".join(f"CAST(NULL AS {t}) AS \"{f.name}\"" for f, t in zip(schema, _duckdb_types(schema)))
    return f"SELECT {cols} WHERE false"


def table_select(lake: str, name: str) -> str:
    """The SELECT behind view ``name``: the Parquet files, or an empty typed row set."""
    if not _has_parquet(lake, name):
        return empty_select(name)
    root = lake_root(lake)
    if name in PARTITIONED:
        glob = _sql_str(f"{root}/{name}/**/*.parquet")
        return (f"SELECT * FROM read_parquet({glob}, hive_partitioning = true, "
                "hive_types = {'gaming_day': DATE})")
    glob = _sql_str(f"{root}/{name}/*.parquet")
    return f"SELECT * FROM read_parquet({glob}, hive_partitioning = false, union_by_name = true)"


def seed_select(path: str) -> str:
    return f"SELECT * FROM read_csv({_sql_str(path)}, header = true)"


def view_statements(lake: str, *, seeds_as_tables: bool = False) -> list[str]:
    """``CREATE VIEW`` for every lake table and seed (seeds as tables when asked: the export)."""
    out = [f"CREATE OR REPLACE VIEW {name} AS {table_select(lake, name)}" for name in LAKE_TABLES]
    kind = "TABLE" if seeds_as_tables else "VIEW"
    out += [f"CREATE OR REPLACE {kind} {name} AS {seed_select(path)}" for name, path in seed_files().items()]
    return out


# ---------------------------------------------------------------- connection


def connect(lake: str) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with the lake's views, narrowed to reading."""
    if not _is_remote(lake) and not os.path.isdir(lake):
        raise LakeQueryError(f"no lake at {lake} (not a folder)")
    con = duckdb.connect(":memory:")
    try:
        con.execute("SET TimeZone = 'UTC'")
        if _is_remote(lake):
            con.execute("LOAD httpfs")
        for statement in view_statements(lake):
            con.execute(statement)
        _narrow(con, lake)
    except duckdb.Error as exc:
        con.close()
        raise LakeQueryError(f"cannot open the lake {lake}: {first_line(exc)}") from None
    return con


def _narrow(con: duckdb.DuckDBPyConnection, lake: str) -> None:
    allowed = [lake_root(lake) + "/"] + sorted({os.path.dirname(p) + "/" for p in seed_files().values()})
    con.execute(f"SET allowed_directories = [{', '.join(_sql_str(d) for d in allowed)}]")
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET autoload_known_extensions = false")
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# ---------------------------------------------------------------- read-only guard

_EXPLAIN = re.compile(r"explain\b(?:\s+analy[sz]e\b)?\s*(?:\([^()]*\))?(.*)\Z", re.I | re.S)


def _strip_leading_comments(sql: str) -> str:
    for pos, kind in duckdb.tokenize(sql):
        if kind != duckdb.token_type.comment:
            return sql[pos:]
    return ""


def _statement_type(stmt) -> str:
    try:
        return stmt.type.name
    except ValueError:  # a statement type the Python enum does not know: refuse it
        return "UNKNOWN"


def check_read_only(con: duckdb.DuckDBPyConnection, sql: str) -> str:
    """Return the single statement of ``sql`` if it only reads; else raise :class:`LakeQueryError`."""
    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as exc:
        raise LakeQueryError(first_line(exc)) from None
    if len(statements) != 1:
        raise LakeQueryError(f"give exactly one SQL statement (got {len(statements)})")
    stmt = statements[0]
    kind = _statement_type(stmt)
    if kind == "EXPLAIN":
        inner = _EXPLAIN.match(_strip_leading_comments(stmt.query).strip())
        if inner is None or not inner.group(1).strip():
            raise LakeQueryError("refused: EXPLAIN of something that is not a query")
        check_read_only(con, inner.group(1))
        return sql
    if kind not in READ_ONLY_TYPES:
        raise LakeQueryError(
            f"refused: the lake is read-only and this statement is {kind}; "
            "only SELECT (WITH, FROM, DESCRIBE, SHOW, SUMMARIZE) and EXPLAIN run here")
    return sql


def run_sql(con: duckdb.DuckDBPyConnection, sql: str, params: dict | None = None
            ) -> tuple[list[str], list[tuple]]:
    """Run one read-only statement with ``params`` bound by DuckDB; return (columns, rows)."""
    check_read_only(con, sql)
    try:
        cur = con.execute(sql, params or None)
        columns = [d[0] for d in cur.description] if cur.description else []
        return columns, cur.fetchall()
    except duckdb.Error as exc:
        raise LakeQueryError(first_line(exc)) from None
