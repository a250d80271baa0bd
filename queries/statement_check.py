"""The statement check: the second wall in front of the analysts' connection.

The guarantee that an analyst's SQL can neither read nor write a file is the
connection itself (:func:`pitwatch.queries.lake_views.connect`: no file system, the
configuration locked).  This check sits in front of it so that a statement
which has no business on a read-only lake is refused with a clear reason,
before DuckDB plans it.  It reads the statement the way DuckDB does:

1. one statement only (``extract_statements``: DuckDB's own splitter, so a
   ``;`` inside a string or a comment is not a separator);
2. the statement's type from DuckDB's parser: ``SELECT`` (which covers
   ``WITH``, ``FROM …``, ``VALUES``, ``DESCRIBE``, ``SHOW``, ``SUMMARIZE``,
   ``PIVOT … IN (…)``, ``UNPIVOT``), ``EXPLAIN [ANALYZE]`` of a query, or a
   ``PIVOT`` without an ``IN`` list (DuckDB parses it as several statements,
   type ``MULTI``) run; every other type (``COPY``, ``ATTACH``, ``DETACH``,
   ``EXPORT``, ``IMPORT``, ``INSTALL``, ``LOAD``, ``SET``, ``RESET``,
   ``PRAGMA``, ``CALL``, ``CREATE``, ``INSERT``, ``UPDATE``, ``DELETE``,
   ``DROP``, ``ALTER``, transactions, ``PREPARE`` …) is refused;
3. a query's parsed tree (``json_serialize_sql``) is walked whole, CTEs and
   subqueries included: a node that is not a plain query (``COPY``,
   ``INSERT``, ``UPDATE``, ``DELETE`` inside a CTE), a table function that
   reads files or runs SQL text (``read_*``, ``glob``, ``parquet_*``,
   ``sniff_csv``, ``query`` …) or a file name used as a table
   (``FROM 'x.csv'``) is refused;
4. where DuckDB gives no tree (the ``MULTI`` of a dynamic ``PIVOT``, the
   inner query of ``EXPLAIN``, which is checked like any statement, or a
   query the serializer cannot write), the statement is allowed by its first
   word (``PIVOT``, ``UNPIVOT``, ``SUMMARIZE``, ``DESCRIBE``, ``SHOW``,
   ``SELECT``, ``WITH``, ``FROM``, ``VALUES``, ``TABLE``) and refused if any
   of its keywords (DuckDB's tokenizer: not strings, comments or quoted
   names) is one of the refused statements' (``COPY``, ``ATTACH`` …).
"""
from __future__ import annotations

import json
import re
import threading

import duckdb

from pitwatch.queries.errors import RefusedStatement

REFUSED_KEYWORDS = frozenset(
    "COPY ATTACH DETACH EXPORT IMPORT INSTALL LOAD SET RESET PRAGMA CALL CREATE INSERT UPDATE DELETE "
    "DROP ALTER CHECKPOINT VACUUM PREPARE EXECUTE DEALLOCATE USE BEGIN COMMIT ROLLBACK".split())
QUERY_NODES = frozenset({"SELECT_NODE", "SET_OPERATION_NODE", "RECURSIVE_CTE_NODE", "CTE_NODE"})
QUERY_WORDS = frozenset("SELECT WITH FROM VALUES TABLE DESCRIBE SHOW SUMMARIZE PIVOT UNPIVOT PIVOT_WIDER "
                        "PIVOT_LONGER".split())
# table functions that read files (the connection refuses them too) or run SQL held in a string
FILE_FUNCTIONS = re.compile(r"(read_\w+|glob|sniff_csv|parquet_\w+|iceberg_\w+|delta_\w+|query|query_table"
                            r"|\w+_scan)\Z", re.I)


def _statement_type(stmt) -> str:
    try:
        return stmt.type.name
    except ValueError:   # a type the Python enum does not know: refuse it
        return "UNKNOWN"


def _tokens(sql: str) -> list[tuple[str, object]]:
    """``(text, kind)`` of every token of ``sql`` but comments."""
    tokens = duckdb.tokenize(sql)
    ends = [pos for pos, _ in tokens[1:]] + [len(sql)]
    return [(sql[pos:end].strip(), kind) for (pos, kind), end in zip(tokens, ends)
            if kind != duckdb.token_type.comment]


def _keywords(sql: str) -> list[str]:
    return [text.upper() for text, kind in _tokens(sql) if kind == duckdb.token_type.keyword]


def _refuse_keywords(sql: str) -> None:
    found = sorted(set(_keywords(sql)) & REFUSED_KEYWORDS)
    if found:
        raise RefusedStatement(f"refused: the lake is read-only and this statement contains {found[0]}")


def _first_word(sql: str) -> str:
    for text, _kind in _tokens(sql):
        if text != "(":
            return text.upper()
    return ""


_parser: duckdb.DuckDBPyConnection | None = None
_parser_lock = threading.Lock()


def _parse_tree(sql: str) -> dict | None:
    """DuckDB's parsed tree of a SELECT statement as JSON, or None if it cannot be serialised.

    Parsed on a connection of its own (empty, in memory, external access off), never on the
    analysts' connection; it is kept for the next check (opening one costs ~50 ms)."""
    global _parser
    with _parser_lock:
        try:
            if _parser is None:
                _parser = duckdb.connect(":memory:", config={"enable_external_access": False})
            row = _parser.execute("SELECT json_serialize_sql($sql)", {"sql": sql}).fetchone()
            assert row is not None      # a SELECT of one value: one row
            text = row[0]
        except duckdb.Error:
            return None
    try:
        tree = json.loads(text)
    except RecursionError:
        raise RefusedStatement("refused: the query is nested too deeply to be checked") from None
    return None if tree.get("error") else tree


def _walk(tree) -> None:
    """Every node of the tree (iteratively: a deep tree cannot exhaust Python's stack)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            _check_node(node)
            stack.extend(node.values())


def _check_node(node: dict) -> None:
    kind = node.get("type")
    if isinstance(kind, str) and kind.endswith("_NODE") and kind not in QUERY_NODES:
        raise RefusedStatement(f"refused: the lake is read-only and this query holds a "
                               f"{kind.removesuffix('_QUERY_NODE').removesuffix('_NODE')}")
    if "info_type" in node:
        raise RefusedStatement(f"refused: the lake is read-only and this query holds a {node['info_type']}")
    if kind == "TABLE_FUNCTION":
        name = (node.get("function") or {}).get("function_name") or ""
        if FILE_FUNCTIONS.match(name):
            raise RefusedStatement(f"refused: {name}() reads files or runs SQL text; query the lake's "
                                   "tables (events, findings, …) instead")
    if kind == "BASE_TABLE" and re.search(r"[./\\*]", node.get("table_name") or ""):
        raise RefusedStatement(f"refused: {node['table_name']!r} is a file; query the lake's tables instead")


def _check_query_text(sql: str) -> None:
    """``sql``, one SELECT-type statement, has only query nodes in its tree."""
    tree = _parse_tree(sql)
    if tree is None:
        _check_by_name(sql)
    else:
        _walk(tree)


def _check_by_name(sql: str) -> None:
    if _first_word(sql) not in QUERY_WORDS:
        raise RefusedStatement("refused: only queries run here (SELECT, WITH, FROM, VALUES, DESCRIBE, SHOW, "
                               "SUMMARIZE, PIVOT, UNPIVOT, EXPLAIN)")
    _refuse_keywords(sql)


def _explained(sql: str) -> str:
    """The statement an ``EXPLAIN [ANALYZE] [(options)]`` explains."""
    tokens = duckdb.tokenize(sql)
    i = 0
    while i < len(tokens) and tokens[i][1] == duckdb.token_type.comment:
        i += 1

    def word(k):
        pos = tokens[k][0]
        end = tokens[k + 1][0] if k + 1 < len(tokens) else len(sql)
        return sql[pos:end].strip().upper()

    if i >= len(tokens) or word(i) != "EXPLAIN":
        raise RefusedStatement("refused: EXPLAIN of something that is not a query")
    i += 1
    if i < len(tokens) and word(i) in ("ANALYZE", "ANALYSE"):
        i += 1
    rest = sql[tokens[i][0]:] if i < len(tokens) else ""
    if _one_statement_type(rest) is None and rest.lstrip().startswith("("):   # EXPLAIN (FORMAT json) …
        depth = 0
        for pos, _kind in duckdb.tokenize(rest):
            ch = rest[pos]
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0:
                rest = rest[pos + 1:]
                break
    return rest


def _one_statement_type(sql: str) -> str | None:
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error:
        return None
    return _statement_type(statements[0]) if len(statements) == 1 else None


def check_read_only(sql: str) -> str:
    """The one statement of ``sql`` (DuckDB's text of it: what was checked is what runs) if it is a
    plain query; else raise :class:`RefusedStatement` saying why."""
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise RefusedStatement(_first_line(exc)) from None
    if len(statements) != 1:
        raise RefusedStatement(f"give exactly one SQL statement (got {len(statements)})")
    _check_statement(statements[0].query, _statement_type(statements[0]))
    return statements[0].query


def _check_statement(text: str, kind: str) -> None:
    if kind == "SELECT":
        _check_query_text(text)
    elif kind == "EXPLAIN":
        inner = _explained(text)
        inner_kind = _one_statement_type(inner)
        if inner_kind not in ("SELECT", "MULTI"):
            raise RefusedStatement(f"refused: EXPLAIN of a statement that is not a query ({inner_kind or 'none'})")
        _check_statement(inner, inner_kind)
    elif kind == "MULTI":   # a PIVOT without IN (…): DuckDB parses it as CREATE TYPE … ; SELECT …
        if _first_word(text) not in ("PIVOT", "PIVOT_WIDER"):
            raise RefusedStatement("refused: several statements in one")
        _refuse_keywords(text)
    else:
        raise RefusedStatement(
            f"refused: the lake is read-only and this statement is {kind}; only queries run here "
            "(SELECT, WITH, FROM, VALUES, DESCRIBE, SHOW, SUMMARIZE, PIVOT, UNPIVOT, EXPLAIN)")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
