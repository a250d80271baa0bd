"""The named investigations: ``queries/*.sql``, their headers, typed parameters, macros.

Every file starts with a header block of ``--`` comment lines (see
``queries/README.md``)::

    -- name: findings_by_rule
    -- description: Findings counted by rule and severity over a range of gaming days.
    -- param from_day: date  first gaming day (inclusive)
    -- param bucket: int = 20  width of a histogram bucket, in cards
    -- example: pitwatch query findings_by_rule --param from_day=2026-11-22 --param to_day=2026-11-28

Parameter types: ``date`` (YYYY-MM-DD, a real calendar day), ``int`` (ASCII
digits, an optional ``-``; within ``[LOW..HIGH]`` when the type says so, e.g.
``int[1..416]`` or ``int[1..]``, and always within DuckDB's INTEGER), and
``string``.  A value of the wrong type or out of range is refused before the
lake is opened (:class:`LakeQueryError`: exit 2), and so is a range of days
that runs backwards (``from_day`` after ``to_day``, both dates: :data:`RANGE`).  A parameter with a default
(``= value``, no spaces) may be left out.  In the SQL a
parameter is a DuckDB named parameter ``$name``; values are always bound by
the driver, never formatted into the text.

Files are read with :mod:`importlib.resources`, so an installed wheel finds them.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import difflib
import importlib.resources
import re

import duckdb

from pitwatch.queries.errors import LakeQueryError
from pitwatch.queries.lake_views import Answer, run_sql

TYPES = ("date", "int", "string")
DUCKDB_TYPES = {"date": "DATE", "int": "INTEGER", "string": "VARCHAR"}
MACRO_PARAM_PREFIX = "p_"

_HEADER = re.compile(r"^--\s?(name|description|param|example)\b\s*(.*)$")
_PARAM = re.compile(r"^(?P<name>[a-z_][a-z0-9_]*)\s*:\s*(?P<type>\w+)"
                    r"(?:\[(?P<low>-?[0-9]+)?\.\.(?P<high>-?[0-9]+)?\])?"
                    r"(?:\s*=\s*(?P<default>\S+))?(?:\s+(?P<doc>.*))?$")
# a range of gaming days: a query with both date parameters answers from the first to the last, inclusive
RANGE = ("from_day", "to_day")
INT_RANGE = (-(2 ** 31), 2 ** 31 - 1)      # DuckDB's INTEGER, the type the value is bound as
_ASCII_INT = re.compile(r"-?[0-9]{1,10}\Z", re.A)
_ASCII_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}\Z", re.A)


def date_value(text: str) -> _dt.date:
    """A date written ``YYYY-MM-DD`` in ASCII digits (what a ``date`` parameter and ``pitwatch
    incidents --day`` take), or :class:`ValueError`; ``date.fromisoformat`` alone also takes
    ``20261128`` and other digits than ASCII."""
    if not _ASCII_DATE.match(text):
        raise ValueError(text)
    return _dt.date.fromisoformat(text)


@dataclasses.dataclass(frozen=True)
class Param:
    name: str
    type: str
    default: object = None
    has_default: bool = False
    description: str = ""
    low: int | None = None      # int only: the least value allowed
    high: int | None = None     # int only: the greatest value allowed

    def convert(self, text: str):
        """The typed value of ``text``, or :class:`LakeQueryError` saying what was expected."""
        if self.type == "date":
            try:
                return date_value(text)
            except ValueError:
                raise LakeQueryError(f"parameter {self.name}: {text!r} is not a date YYYY-MM-DD") from None
        if self.type == "int":
            low = INT_RANGE[0] if self.low is None else self.low
            high = INT_RANGE[1] if self.high is None else self.high
            want = (f"an integer from {low} to {high}" if self.high is not None
                    else f"an integer of at least {low}" if self.low is not None else "an integer")
            if not _ASCII_INT.match(text) or not low <= int(text, 10) <= high:
                raise LakeQueryError(f"parameter {self.name}: {text!r} is not {want} (ASCII digits)")
            return int(text, 10)
        return text

    def type_text(self) -> str:
        if self.low is None and self.high is None:
            return self.type
        return f"{self.type}[{'' if self.low is None else self.low}..{'' if self.high is None else self.high}]"

    def signature(self) -> str:
        return f"{self.name} {self.type_text()}" + (f" = {self.default}" if self.has_default else "")


@dataclasses.dataclass(frozen=True)
class Query:
    name: str
    description: str
    params: tuple[Param, ...]
    examples: tuple[str, ...]
    sql: str  # the whole file, header included (comments are SQL too)

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)

    def bind(self, given: dict[str, str]) -> dict:
        """Typed values for every parameter from ``given`` (texts); unknown/missing ones are errors."""
        names = [p.name for p in self.params]
        extra = sorted(set(given) - set(names))
        if extra:
            known = ", ".join(names) or "none"
            raise LakeQueryError(f"query {self.name} has no parameter {extra[0]!r} (its parameters: {known})")
        values = {}
        for p in self.params:
            if p.name in given:
                values[p.name] = p.convert(given[p.name])
            elif p.has_default:
                values[p.name] = p.default
            else:
                raise LakeQueryError(
                    f"query {self.name} needs --param {p.name}=<{p.type}> ({p.description or 'no description'})")
        self._check_range(values)
        return values

    def _check_range(self, values: dict) -> None:
        """A range of days (the date parameters :data:`RANGE`) that runs backwards is refused: it
        would answer nothing, and an empty answer reads as a clean floor."""
        first, last = RANGE
        if all(isinstance(values.get(n), _dt.date) for n in RANGE) and values[first] > values[last]:
            raise LakeQueryError(f"parameter {first}: {values[first]} is after {last} {values[last]} "
                                 f"(the range runs from {first} to {last})")

    def macro_sql(self) -> str:
        """``CREATE MACRO <name>(p_…) AS TABLE …``: the query as a DuckDB table macro.

        Macro parameters are the query's parameters prefixed with ``p_`` so that
        they never shadow a column of the same name (``table_id`` …).
        """
        args = []
        for p in self.params:
            arg = f"{MACRO_PARAM_PREFIX}{p.name} {DUCKDB_TYPES[p.type]}"
            if p.has_default:
                arg += " := " + sql_literal(p.default)
            args.append(arg)
        body = substitute_parameters(strip_trailing_semicolon(self.sql),
                                     {p.name: MACRO_PARAM_PREFIX + p.name for p in self.params})
        return f"CREATE OR REPLACE MACRO {self.name}({', '.join(args)}) AS TABLE\n{body}"


def sql_literal(value) -> str:
    if isinstance(value, int):
        return str(value)
    if isinstance(value, _dt.date):
        return f"DATE '{value.isoformat()}'"
    return "'" + str(value).replace("'", "''") + "'"


def strip_trailing_semicolon(sql: str) -> str:
    return re.sub(r";\s*\Z", "", sql.rstrip())


def parameter_positions(sql: str) -> list[tuple[int, int, str]]:
    """``(start, end, name)`` of every ``$name`` in ``sql``, found by DuckDB's tokenizer
    (so a ``$`` inside a string literal or a comment is not a parameter)."""
    tokens = duckdb.tokenize(sql)
    out = []
    for (pos, kind), nxt in zip(tokens, tokens[1:] + [(len(sql), None)]):
        if kind == duckdb.token_type.operator and sql[pos] == "$":
            m = re.match(r"[A-Za-z_]\w*", sql[pos + 1:])
            if m and nxt[0] == pos + 1:
                out.append((pos, pos + 1 + m.end(), m.group(0)))
    return out


def substitute_parameters(sql: str, names: dict[str, str]) -> str:
    out, last = [], 0
    for start, end, name in parameter_positions(sql):
        out.append(sql[last:start])
        out.append(names[name])
        last = end
    out.append(sql[last:])
    return "".join(out)


def parse(text: str, file_name: str) -> Query:
    """Parse one ``.sql`` file's header; a malformed header is a ValueError naming the file."""
    fields: dict[str, str] = {}
    params: list[Param] = []
    examples: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if not line.startswith("--"):
            break
        m = _HEADER.match(line)
        if not m:
            continue
        key, value = m.group(1), m.group(2).lstrip(":").strip()
        if key == "param":
            pm = _PARAM.match(value)
            if not pm or pm.group("type") not in TYPES:
                raise ValueError(f"{file_name}: bad parameter line {raw!r} "
                                 "(want 'name: date|int[LOW..HIGH]|string [= default] text')")
            low, high = (None if pm.group(k) is None else int(pm.group(k)) for k in ("low", "high"))
            if (low is not None or high is not None) and pm.group("type") != "int":
                raise ValueError(f"{file_name}: a range [LOW..HIGH] is for int parameters only ({raw!r})")
            if low is not None and high is not None and low > high:
                raise ValueError(f"{file_name}: empty range in {raw!r}")
            p = Param(pm.group("name"), pm.group("type"), description=(pm.group("doc") or "").strip(),
                      low=low, high=high)
            if pm.group("default") is not None:
                p = dataclasses.replace(p, default=p.convert(pm.group("default")), has_default=True)
            params.append(p)
        elif key == "example":
            examples.append(value)
        else:
            fields[key] = value
    stem = file_name.rsplit("/", 1)[-1].removesuffix(".sql")
    if fields.get("name") != stem:
        raise ValueError(f"{file_name}: header '-- name: {fields.get('name')}' must be the file name {stem!r}")
    if not fields.get("description"):
        raise ValueError(f"{file_name}: header has no '-- description:' line")
    return Query(stem, fields["description"], tuple(params), tuple(examples), text)


def load_queries() -> dict[str, Query]:
    """Every investigation shipped in the ``queries`` package, by name."""
    root = importlib.resources.files("pitwatch.queries")
    out = {}
    for entry in sorted(root.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".sql"):
            q = parse(entry.read_text(encoding="utf-8"), entry.name)
            out[q.name] = q
    return out


def get_query(name: str) -> Query:
    queries = load_queries()
    if name not in queries:
        close = difflib.get_close_matches(name, list(queries), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise LakeQueryError(f"no query named {name!r}{hint} (pitwatch query --list shows them)")
    return queries[name]


def run_query(con: duckdb.DuckDBPyConnection, name: str, given: dict[str, str], *,
              timeout: float | None = None, max_rows: int | None = None, max_bytes: int | None = None,
              max_memory: int | None = None) -> Answer:
    """Run investigation ``name`` with parameters ``given`` (name → text), bound by DuckDB
    (limits as :func:`pitwatch.queries.lake_views.run_sql`)."""
    query = get_query(name)
    values = query.bind(given)
    return run_sql(con, query.sql, values, timeout=timeout, max_rows=max_rows, max_bytes=max_bytes,
                   max_memory=max_memory)
