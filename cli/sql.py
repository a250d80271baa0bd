"""``pitwatch sql``: ad-hoc read-only SQL in DuckDB over the lake's tables.

Also the limits ``pitwatch query`` shares (:data:`limit_options`) and how both
print an answer and map the library's errors to exit codes (:func:`print_answer`,
:func:`lake_answers`): a refused statement, a bad parameter or a DuckDB error
is exit 2 (``UserError``); a query stopped by ``--timeout`` or ``--max-memory``, or an output
cut by ``--max-rows`` or ``--max-bytes``, is exit 3 (``Incomplete``: the output is not the whole
answer).
"""
from __future__ import annotations

import contextlib
import re
import sys

import click

from pitwatch.cli.common import Incomplete, StrictCommand, UserError, lake_option, user_errors
from pitwatch.cli.render import format_option, render
from pitwatch.lake import Lake
from pitwatch.wording import plural

DEFAULT_TIMEOUT = 60.0
DEFAULT_MAX_ROWS = 100_000
DEFAULT_MAX_BYTES = "256MB"
DEFAULT_MAX_MEMORY = "4GB"
_UNITS = {"": 1, "B": 1, "KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40}


class ByteSize(click.ParamType):
    """A size in bytes written as people do: ``4GB``, ``512MB``, ``1.5GB``, ``300kB``, ``1000000``
    (binary units: 1kB = 1,024 bytes)."""

    name = "size"

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            return value
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmMgGtT]?[bB]?)\s*", str(value))
        unit = m and m.group(2).upper()
        if unit == "K" or unit == "M" or unit == "G" or unit == "T":
            unit += "B"
        if not m or unit not in _UNITS or float(m.group(1)) * _UNITS[unit] < 1:
            self.fail(f"{value!r} is not a size (e.g. 4GB, 512MB, 1000000)", param, ctx)
        return int(float(m.group(1)) * _UNITS[unit])


dealers_option = click.option(
    "--dealers", metavar="FILE", type=click.Path(dir_okay=False),
    help="The casino's dealers (CSV: id,name,shift) shown as seeds_dealers and beside dealer ids; "
         "default the lake's roster (pitwatch dealers import), else seeds/dealers.csv.")


def limit_options(fn):
    fn = click.option("--max-memory", type=ByteSize(), default=DEFAULT_MAX_MEMORY, show_default=True,
                      metavar="SIZE", help="Stop a query that needs more memory than this (DuckDB's limit and "
                                           "the process's growth while it runs; exit 3).")(fn)
    fn = click.option("--max-bytes", type=ByteSize(), default=DEFAULT_MAX_BYTES, show_default=True,
                      metavar="SIZE", help="Print at most this much of the answer's values; more is said on "
                                           "stderr and exits 3.")(fn)
    fn = click.option("--max-rows", type=click.IntRange(min=1), default=DEFAULT_MAX_ROWS, show_default=True,
                      metavar="N", help="Print at most N rows; more is said on stderr and exits 3.")(fn)
    fn = click.option("--limit", type=click.IntRange(min=1), metavar="N",
                      help="A preview: print the first N rows and exit 0 (stderr says when there are more); "
                           "--max-rows stays the safety cut.")(fn)
    fn = click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=DEFAULT_TIMEOUT,
                      show_default=True, metavar="SECONDS",
                      help="Stop the query after this long (exit 3).")(fn)
    return fn


def time_options(fn):
    """``--local`` / ``--show-tz ZONE``: how ``sql`` and ``query`` show timestamps (default UTC)."""
    fn = click.option("--show-tz", metavar="ZONE",
                      help="Show timestamps in this IANA time zone (e.g. America/Puerto_Rico); "
                           "not the gaming day's --timezone.")(fn)
    fn = click.option("--local", is_flag=True,
                      help="Show every timestamp in its table's local time, to the second with the zone "
                           "named (2026-11-28 17:47:21 AST): the lake's time zone, or the table's "
                           "[display.tables] zone of pitwatch.toml; a row with no table_id in the "
                           "lake's zone.")(fn)
    return fn


as_of_option = click.option(
    "--as-of", "as_of", metavar="RUN_ID|TIME",
    help="Read the lake as that run left it (a run id of the runs table), or as it was at that "
         "time (ISO 8601, e.g. 2026-11-29T07:00:00Z: the last successful run ended by then); "
         "default: the last successful run.")


def open_lake(lake: Lake, local: bool, show_tz: str | None, dealers: str | None = None, as_of: str | None = None,
              statements: tuple[str, ...] = (), max_memory: int | None = None):
    """The analysts' connection with the display zone of ``--show-tz`` (``--local`` excludes it),
    pinned to the last successful run or to ``--as-of`` (:mod:`pitwatch.queries.as_of`); with
    ``statements``, only the lake tables they name are opened."""
    from pitwatch.queries.lake_views import connect, referenced_tables

    if local and show_tz is not None:
        raise UserError("--local and --show-tz are two ways to show times: give one")
    tables = referenced_tables(*statements) if statements else None
    return connect(lake, dealers, show_tz=show_tz, as_of=as_of, tables=tables, memory_limit=max_memory)


def shown(answer, local: bool, lake: Lake, table_id: str | None = None):
    """The answer with ``--local`` applied: each row's times in its table's display zone
    (:func:`pitwatch.queries.lake_views.in_table_time`; ``table_id``: the query's one table, for
    an answer without a ``table_id`` column), the zones read once from the lake's settings."""
    if not local:
        return answer
    from pitwatch.lake.settings import display_zones
    from pitwatch.queries.lake_views import in_table_time

    lake_zone, tables = display_zones(lake)
    return in_table_time(answer, lake_zone, tables, table_id)


@contextlib.contextmanager
def lake_answers():
    """The queries library's errors as the CLI's: user mistakes exit 2, a stopped query exit 3."""
    from pitwatch.queries.errors import LakeQueryError, QueryInterrupted

    try:
        yield
    except QueryInterrupted as exc:
        raise Incomplete(str(exc)) from None
    except LakeQueryError as exc:
        raise UserError(str(exc)) from None


@contextlib.contextmanager
def memory_bound(max_memory: int):
    """The query and the printing of its answer in ``--max-memory`` of address space beyond what
    the process held once the lake was open (:func:`pitwatch.queries.lake_views.address_space_cap`):
    past it, one ``Error:`` line, exit 3. Opening the lake is left out: its threads reserve
    address space they never use, and what it reads is the lake's, not the statement's."""
    from pitwatch.queries.errors import QueryTooLarge
    from pitwatch.queries.lake_views import address_space_cap, too_large

    try:
        with address_space_cap(max_memory):
            yield
    except MemoryError:
        raise QueryTooLarge(too_large(max_memory)) from None


def rows_to_fetch(max_rows: int, limit: int | None) -> int:
    """The rows to ask the lake for: ``--limit`` (a preview) within ``--max-rows`` (the safety cut)."""
    return max_rows if limit is None else min(limit, max_rows)


def print_answer(answer, fmt: str, max_rows: int, max_bytes: int | None = None, limit: int | None = None) -> None:
    """Print the answer; exit 3 (:class:`Incomplete`) when a safety cut (``--max-rows``, ``--max-bytes``)
    left rows out.  Rows left out by ``limit`` (``--limit``, a preview, fetched as :func:`rows_to_fetch`
    says) are said on stderr, and the command ends 0."""
    # color=True: click would strip ANSI sequences from a pipe, altering a CSV value; table and
    # text show them escaped already (render), JSON escapes them itself
    from pitwatch.queries.lake_views import show_bytes

    click.echo(render(answer.columns, answer.rows, fmt), nl=False, color=True)
    if answer.cut_bytes:
        assert max_bytes is not None    # an answer is cut by its bytes only under a --max-bytes
        size = show_bytes(max_bytes)
        raise Incomplete(f"the output was cut at {plural(len(answer.rows), 'row')}, {size} of values "
                         f"(--max-bytes {size}); there are more: narrow the query or raise --max-bytes")
    if answer.cut and limit is not None and limit <= max_rows:
        click.echo(f"the first {plural(limit, 'row')} shown (--limit {limit}); there are more", err=True)
    elif answer.cut:
        raise Incomplete(f"the output was cut at {plural(max_rows, 'row')} (--max-rows {max_rows}); "
                         "there are more: narrow the query or raise --max-rows")


@click.command(cls=StrictCommand, epilog="""\b
Examples:
  pitwatch sql "SELECT rule_id, count(*) AS n FROM findings GROUP BY ALL ORDER BY n DESC" --lake lake
  pitwatch sql "FROM rounds WHERE gaming_day = DATE '2026-11-28' AND table_id = 'BAC-01'" --lake lake --format csv
  pitwatch sql "FROM findings WHERE round_id = 'BAC-01-0053'" --lake lake --format text
  pitwatch sql "FROM events WHERE gaming_day = DATE '2026-11-28'" --lake lake --limit 20
  pitwatch sql "DESCRIBE events" --lake lake
  pitwatch sql "SELECT table_id, rule_id, ts FROM findings" --lake lake --local
  pitwatch sql - --lake lake --format json --timeout 300 < investigation.sql
  pitwatch sql "FROM events WHERE gaming_day = DATE '2026-11-28'" --lake lake --format csv --max-bytes 2GB --max-memory 8GB
  pitwatch sql "FROM findings" --lake lake --as-of 20261128T070001Z-1a2b3c4d
  pitwatch sql "SELECT count(*) FROM findings" --lake lake --as-of 2026-11-29T07:00:00Z
""")
@click.argument("statement", metavar="SQL")
@lake_option
@format_option
@dealers_option
@limit_options
@time_options
@as_of_option
@user_errors
def sql(statement, lake, fmt, dealers, timeout, limit, max_rows, max_bytes, max_memory, local, show_tz, as_of):
    """Run one read-only SQL statement (DuckDB dialect) over the lake and print the rows.

    \b
    Tables: events, rejects, rounds, packs, findings, finding_changes, runs,
    rules (the lake's tables; filter on gaming_day to read only those days'
    files), alerts (the live service's), reviews (every pitwatch review, at
    its latest version) and seeds_<name> for each seeds/*.csv (e.g.
    seeds_combate_paytable; seeds_dealers: id, name, shift: --dealers FILE,
    else the lake's roster).  findings has, besides the finding: status
    (open, or its latest review's disposition), reviewed_by, reviewed_at,
    and first_seen_run, last_changed_run (the runs that first wrote it and
    last changed it; finding_changes lists each change).
    SQL "-" reads the statement from standard input.  Only queries run
    (SELECT, WITH, FROM, VALUES, DESCRIBE, SHOW, SUMMARIZE, PIVOT, UNPIVOT,
    EXPLAIN): anything that writes, reads files or changes settings is
    refused (exit 2), and the connection has no file system at all.
    Timestamps are shown in UTC, in --show-tz ZONE, or with --local in each
    row's table's local time (select table_id with them; without it, the
    lake's time zone): docs/lake.md, display time.
    Every table is read as the last successful run left it (a run still
    going, or killed, is never seen); --as-of reads an earlier night's.
    """
    from pitwatch.queries.lake_views import run_sql

    if statement == "-":
        data = sys.stdin.buffer.read()
        try:
            statement = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UserError(f"the SQL on standard input is not UTF-8 (byte {exc.start})") from None
    if not statement.strip():
        raise UserError("the SQL statement is empty")
    lake = Lake.at(lake)
    with lake_answers():
        con = open_lake(lake, local, show_tz, dealers, as_of, statements=(statement,), max_memory=max_memory)
        try:
            with memory_bound(max_memory):
                answer = shown(run_sql(con, statement, timeout=timeout, max_rows=rows_to_fetch(max_rows, limit),
                                       max_bytes=max_bytes, max_memory=max_memory), local, lake)
                print_answer(answer, fmt, max_rows, max_bytes, limit)
        finally:
            con.close()
