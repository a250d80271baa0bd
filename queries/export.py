"""A DuckDB database file holding the lake's views and the investigations as table macros.

The file is self-describing for an analyst with any DuckDB client (CLI, DBeaver,
a notebook): views point at the lake's Parquet files by absolute path (new
gaming days show up without re-exporting), seeds are copied in as tables (the
CSV files live inside pitwatch's installation, which may move), and each
``queries/*.sql`` is a ``MACRO … AS TABLE`` whose parameters are the query's
prefixed with ``p_`` (so a parameter never shadows a column of the same name).
``pitwatch_queries`` lists the macros and how to call them.
"""
from __future__ import annotations

import os
import uuid

import duckdb

from queries.catalog import DUCKDB_TYPES, MACRO_PARAM_PREFIX, Query, sql_literal, load_queries
from queries.lake_views import LakeQueryError, first_line, view_statements


def macro_call(q: Query) -> str:
    """How to call the macro of ``q``, e.g. ``FROM pack_custody(p_table_id, p_pack_id)``."""
    args = [f"{MACRO_PARAM_PREFIX}{p.name} {DUCKDB_TYPES[p.type]}" for p in q.params if not p.has_default]
    args += [f"{MACRO_PARAM_PREFIX}{p.name} := {sql_literal(p.default)}" for p in q.params if p.has_default]
    return f"FROM {q.name}({', '.join(args)})"


def export_database(lake: str, out: str, *, force: bool = False) -> str:
    """Write the database file ``out``; refuse to replace an existing one unless ``force``."""
    if not os.path.isdir(lake) and "://" not in lake:
        raise LakeQueryError(f"no lake at {lake} (not a folder)")
    out = os.path.abspath(out)
    if os.path.exists(out) and not force:
        raise LakeQueryError(f"{out} exists; add --force to replace it")
    if os.path.isdir(out):
        raise LakeQueryError(f"{out} is a folder")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    tmp = os.path.join(os.path.dirname(out), f".{os.path.basename(out)}.tmp-{uuid.uuid4().hex}")
    try:
        con = duckdb.connect(tmp)
        try:
            if "://" in lake:
                con.execute("LOAD httpfs")
            for statement in view_statements(lake, seeds_as_tables=True):
                con.execute(statement)
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
        if os.path.exists(out + ".wal"):  # the old file's journal must not be replayed on the new one
            os.remove(out + ".wal")
        os.replace(tmp, out)
    except duckdb.Error as exc:
        raise LakeQueryError(f"cannot write {out}: {first_line(exc)}") from None
    finally:
        for leftover in (tmp, tmp + ".wal"):
            if os.path.exists(leftover):
                os.remove(leftover)
    return out
