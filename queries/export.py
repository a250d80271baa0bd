"""A DuckDB database file holding a copy of the lake's tables and the investigations as table macros.

The file is self-contained for an analyst with any DuckDB client (CLI,
DBeaver, a notebook): every lake table and seed is *materialised* in it (a
copy of the rows as they are at the export, read through the analysts'
connection of :func:`pitwatch.queries.lake_views.connect`; no view points at a lake
path, so the file neither reaches into the lake nor changes with it: export
again with ``--force`` for newer days), each ``queries/*.sql`` is a
``MACRO … AS TABLE`` whose parameters are the query's prefixed with ``p_``
(so a parameter never shadows a column of the same name), and
``pitwatch_queries`` lists the macros and how to call them.

The copy is of the tables as the last successful run left them (their pinned Delta versions,
:mod:`pitwatch.lake.versions`), or as ``as_of`` names (:mod:`pitwatch.queries.as_of`: an earlier run, or
the lake at a time); the table ``pitwatch_export`` (one row: ``run_id``, ``run_ended``, ``as_of``,
``table_versions`` JSON, ``exported_at``) says which, so the file names the night it holds.

The file is written under a hidden temporary name, made read-only (mode
``0444``: a DuckDB client then opens it read-only, except as root) and
moved into place; an existing file is not replaced without ``force``.
"""
from __future__ import annotations

import os
import uuid

import duckdb
import pyarrow as pa

from pitwatch.lake import Lake
from pitwatch.queries.catalog import DUCKDB_TYPES, MACRO_PARAM_PREFIX, Query, load_queries, sql_literal
from pitwatch.queries.errors import LakeQueryError
from pitwatch.queries.lake_views import LOCKDOWN, VIEW_TABLES, connect, first_line, require_lake, seed_files

EXPORT_MODE = 0o444


def macro_call(q: Query) -> str:
    """How to call the macro of ``q``, e.g. ``FROM pack_custody(p_table_id, p_pack_id)``."""
    args = [f"{MACRO_PARAM_PREFIX}{p.name} {DUCKDB_TYPES[p.type]}" for p in q.params if not p.has_default]
    args += [f"{MACRO_PARAM_PREFIX}{p.name} := {sql_literal(p.default)}" for p in q.params if p.has_default]
    return f"FROM {q.name}({', '.join(args)})"


def _copy_tables(lake_con: duckdb.DuckDBPyConnection, out: duckdb.DuckDBPyConnection) -> None:
    """Every lake table and seed of the analysts' connection, rows and all, into ``out``."""
    for name in [*VIEW_TABLES, *seed_files()]:
        reader = lake_con.sql(f'SELECT * FROM "{name}"').to_arrow_reader()
        out.register("pitwatch_export_source", reader)
        try:
            out.execute(f'CREATE TABLE "{name}" AS SELECT * FROM pitwatch_export_source')
        finally:
            out.unregister("pitwatch_export_source")


def pinned_run(lake: Lake, as_of: str | None) -> tuple[dict | None, dict | None]:
    """``(table versions, run record)`` the export copies: ``as_of``'s, or the last successful
    run's; ``(None, None)`` for a lake with no successful run (an empty copy)."""
    from pitwatch.lake import parquet as lake_mod
    from pitwatch.lake import runs
    from pitwatch.lake import versions as lake_versions
    from pitwatch.queries.as_of import resolve

    if as_of is not None:
        return resolve(lake, as_of)
    try:
        versions = lake_versions.pinned_versions(lake)
    except ValueError as exc:
        raise LakeQueryError(str(exc)) from None
    if versions is None:
        return None, None
    done = [r for r in runs.latest_records(lake_mod.read_table(lake, "runs"))
            if r["status"] == "succeeded" and r.get("table_versions")]
    if not done:      # a lake no run wrote (tables committed by hand): its current versions
        return versions, None
    last = max(done, key=lambda r: (r["ended"], r["run_id"]))
    return versions, last


def _write_provenance(con: duckdb.DuckDBPyConnection, versions: dict | None, run: dict | None,
                      as_of: str | None) -> None:
    import datetime as _dt
    import json

    con.execute("CREATE TABLE pitwatch_export (run_id VARCHAR, run_ended TIMESTAMPTZ, as_of VARCHAR, "
                "table_versions VARCHAR, exported_at TIMESTAMPTZ)")
    con.execute("INSERT INTO pitwatch_export VALUES (?, ?, ?, ?, ?)",
                [run["run_id"] if run else None, run["ended"] if run else None, as_of,
                 json.dumps(versions or {}, sort_keys=True), _dt.datetime.now(_dt.timezone.utc)])


def export_database(lake: Lake, out: str, *, force: bool = False, as_of: str | None = None) -> tuple[str, dict | None]:
    """Write the database file ``out`` (mode 0444); refuse to replace an existing one unless ``force``.
    Returns its path and the run record whose table versions it copied (None: no successful run, or
    a lake no run wrote, copied as it is now)."""
    out = os.path.abspath(out)
    if os.path.isdir(out):
        raise LakeQueryError(f"{out} is a folder")
    if os.path.lexists(out) and not force:
        raise LakeQueryError(f"{out} exists; add --force to replace it")
    require_lake(lake)
    versions, run = pinned_run(lake, as_of)
    lake_con = connect(lake, as_of=run["run_id"] if run is not None else None)   # exactly the versions named
    os.makedirs(os.path.dirname(out), exist_ok=True)
    tmp = os.path.join(os.path.dirname(out), f".{os.path.basename(out)}.tmp-{uuid.uuid4().hex}")
    try:
        con = duckdb.connect(tmp)
        try:
            for setting in LOCKDOWN:   # as a user's statement: it runs only the statements below
                con.execute(setting)
            _copy_tables(lake_con, con)
            _write_provenance(con, versions, run, as_of)
            queries = load_queries()
            for q in queries.values():
                con.execute(q.macro_sql())
            con.execute("CREATE TABLE pitwatch_queries (name VARCHAR, description VARCHAR, "
                        "parameters VARCHAR[], call VARCHAR)")
            con.executemany("INSERT INTO pitwatch_queries VALUES (?, ?, ?, ?)",
                            [[q.name, q.description, [p.signature() for p in q.params], macro_call(q)]
                             for q in queries.values()])
            con.execute("CHECKPOINT")
        finally:
            con.close()
        os.chmod(tmp, EXPORT_MODE)
        if os.path.exists(out + ".wal"):  # the old file's journal must not be replayed on the new one
            os.remove(out + ".wal")
        os.replace(tmp, out)
    except (duckdb.Error, pa.ArrowException) as exc:
        raise LakeQueryError(f"cannot write {out}: {first_line(exc)}") from None
    finally:
        lake_con.close()
        for leftover in (tmp, tmp + ".wal"):
            if os.path.exists(leftover):
                os.remove(leftover)
    return out, run
