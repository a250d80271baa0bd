"""Hints instead of empty answers: a named query's parameter that matches nothing in the lake.

When an investigation returns no row, every parameter that names a thing
(``table_id``, ``round_id``, ``pack_id``, ``rule_id``, ``severity``) is looked
up among the lake's own distinct values, through the same (locked, read-only)
connection, or among the rule catalogue's ids and the severities.  A value
that is there gets no hint: the answer is really empty.  One that is not
gets one line for stderr (the answer itself is unchanged, exit 0)::

    no table bac-01; did you mean BAC-01?          (case)
    no rule BURN_SKIPED; did you mean BURN_SKIPPED?  (a close spelling, difflib)
    no round R-0014; round ids look like BAC-01-0014  (another form: the closest real id)

Rounds and packs are looked up at the query's table when that table is in
the lake, or the table it names but for case (round ids need not be unique
across tables); a round of another table says so.  ``*`` (every rule, every severity) is never hinted.
"""
from __future__ import annotations

import dataclasses
import difflib

import duckdb

from pitwatch.queries.lake_views import run_sql

WILDCARD = "*"


@dataclasses.dataclass(frozen=True)
class Lookup:
    kind: str             # the word in the hint: "no <kind> X"
    sql: str | None       # distinct values in the lake (``$table_id`` scopes it), or None: a fixed list
    per_table: bool = False


LOOKUPS = {
    "table_id": Lookup("table", "select table_id from rounds union select table_id from packs "
                                "union select table_id from findings"),
    "round_id": Lookup("round", "select distinct round_id from rounds where cast($table_id as varchar) is null or table_id = $table_id",
                       per_table=True),
    "pack_id": Lookup("pack", "select distinct pack_id from packs where cast($table_id as varchar) is null or table_id = $table_id",
                      per_table=True),
    "rule_id": Lookup("rule", None),
    "severity": Lookup("severity", None),
}
# the lake tables the look-ups read: a named query's connection opens them too (pitwatch.queries.lake_views.connect)
LOOKUP_TABLES = ("rounds", "packs", "findings")


def _fixed(name: str) -> list[str]:
    from pitwatch.config import SEVERITIES
    from pitwatch.rules.catalog import RULES

    return [r.rule_id for r in RULES] if name == "rule_id" else list(SEVERITIES)


def _values(con, lookup: Lookup, table_id: str | None, timeout: float | None) -> set[str]:
    sql = lookup.sql
    assert sql is not None      # a fixed list (no sql) is not looked up in the lake
    answer = run_sql(con, sql, {"table_id": table_id} if "$table_id" in sql else None, timeout=timeout)
    return {row[0] for row in answer.rows if row[0] is not None}


def suggestion(kind: str, value: str, known: set[str] | list[str]) -> str | None:
    """The hint for ``value`` among ``known``, or None when it is one of them."""
    if value in known:
        return None
    known = sorted(known)
    if not known:
        return f"no {kind} {value}: the lake has no {kind} yet"
    same = [k for k in known if k.casefold() == value.casefold()]
    if same:
        return f"no {kind} {value}; did you mean {same[0]}?"
    folded = {k.casefold(): k for k in known}
    close = difflib.get_close_matches(value.casefold(), list(folded), n=1, cutoff=0.75)
    if close:
        return f"no {kind} {value}; did you mean {folded[close[0]]}?"
    if kind == "rule":
        return f"no rule {value}; `pitwatch rules` lists the rule ids"
    if kind == "severity":
        return f"no severity {value}; severities are {', '.join(_fixed('severity'))}"
    like = difflib.get_close_matches(value.casefold(), list(folded), n=1, cutoff=0.0)
    return f"no {kind} {value}; {kind} ids look like {folded[like[0]] if like else known[0]}"


def _table_in_lake(con, table_id, timeout) -> str | None:
    """The lake's table ``table_id`` names: itself, or the one it names but for case; else None."""
    if not isinstance(table_id, str):
        return None
    tables = _values(con, LOOKUPS["table_id"], None, timeout)
    if table_id in tables:
        return table_id
    return next((t for t in sorted(tables) if t.casefold() == table_id.casefold()), None)


def empty_answer_hints(con: duckdb.DuckDBPyConnection, params: dict, *, timeout: float | None = None) -> list[str]:
    """One line per parameter of ``params`` (bound values) that names nothing in the lake."""
    out = []
    table_id = params.get("table_id")
    for name, value in params.items():
        lookup = LOOKUPS.get(name)
        if lookup is None or not isinstance(value, str) or value == WILDCARD:
            continue
        if lookup.sql is None:
            hint = suggestion(lookup.kind, value, _fixed(name))
        elif not lookup.per_table or table_id is None:
            hint = suggestion(lookup.kind, value, _values(con, lookup, None, timeout))
        else:
            scope = _table_in_lake(con, table_id, timeout)
            if scope is not None:
                hint = suggestion(lookup.kind, value, _values(con, lookup, scope, timeout))
                if hint and scope == table_id and value in _values(con, lookup, None, timeout):
                    hint = f"no {lookup.kind} {value} at table {table_id}: it is a {lookup.kind} of another table"
            else:
                hint = suggestion(lookup.kind, value, _values(con, lookup, None, timeout))
        if hint:
            out.append(hint)
    return out
