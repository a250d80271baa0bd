"""The analysts' connection: DuckDB over the lake's tables, with no file system at all.

One function opens it, :func:`connect`, and every command that reads the lake
for people uses it (``pitwatch sql``, ``pitwatch query``, ``pitwatch
export-duckdb``, notebooks, tests).  It knows :mod:`pitwatch.schemas.arrow` for the
columns and nothing of Beam or the replay.

Tables (``docs/spec/outputs.md``), each a name in the connection:

* ``events``, ``rejects``, ``rounds``, ``packs``, ``findings``: a
  ``pyarrow.dataset`` over the data files of the table's pinned Delta version
  (the last successful run's, or ``--as-of``'s: :mod:`pitwatch.queries.as_of`;
  every table of one connection is of one run) with Hive partitioning on
  ``gaming_day`` (a DATE from the folder name), registered in DuckDB.  DuckDB
  hands a filter on ``gaming_day`` (a literal or a bound parameter) to the
  dataset, which then opens only those days' files.
* ``rules``: the rule catalogue at its pinned version; ``runs``: the latest
  record of every run, at the table's latest version (the log of every
  writer, shown whole even ``--as-of`` an earlier night).
* ``alerts``: the live service's alerts, at the table's latest version, never
  pinned (:mod:`pitwatch.queries.alerts_view`).
* ``reviews``: every review ever recorded (``pitwatch review``, :mod:`pitwatch.lake.reviews`), at
  the table's latest version, never pinned (``--as-of`` does not move it: a review is about a
  finding, not part of a night).  ``findings`` is the pinned findings with three columns more,
  after ``gaming_day``: ``status`` (``open`` when the finding has no review, else its latest
  review's disposition), ``reviewed_by`` and ``reviewed_at`` of that review (:data:`STATUS_COLUMNS`).
* ``seeds_<stem>`` for every ``seeds/*.csv`` shipped with pitwatch, e.g.
  ``seeds_combate_paytable``: read into memory (header row, types detected)
  when the connection opens.  ``seeds_dealers`` (id, name, shift) is read by
  :mod:`pitwatch.queries.dealers`, from ``seeds/dealers.csv`` or the file given as
  ``connect(lake, dealers=FILE)`` (``--dealers FILE``), before the lockdown.

A table with no file yet (a young lake: no findings written) is still there,
empty, with the columns of :mod:`pitwatch.schemas.arrow`.  Column order is the files'
order (``gaming_day``, the partition key, comes last).  Which files make a
table is one function, :func:`table_files`.

**No file system.**  The datasets are read by pyarrow in this process, not by
DuckDB, so the connection needs no file access, and has none: before the
first statement of the user runs, ``enable_external_access = false`` (no
table function, ``COPY``, ``ATTACH``, ``EXPORT``, ``INSTALL``/``LOAD`` can
open any path), no Python replacement scans (a name in the query cannot
reach a Python object), no extension auto-loading, no spill folder
(``temp_directory`` empty: a query too big for memory fails with DuckDB's
out-of-memory error rather than writing anything), ``TimeZone`` UTC (or
the display zone, below), and
then ``lock_configuration = true``, so no statement can undo any of it.  The
live checkpoint (``LAKE/_watch/…``), the nightly state (``LAKE/state/…``)
and every other file are out of its reach.  The statement check
(:mod:`pitwatch.queries.statement_check`) is a second wall in front of it.

**Display time** (issue 29).  ``TimeZone`` is UTC, or the IANA zone given
as ``connect(lake, show_tz=ZONE)`` (``--show-tz``): set before the lockdown,
so the user's ``SET`` stays refused; it only changes how DuckDB shows
``TIMESTAMP WITH TIME ZONE`` values (never the gaming day, which ingest
decided).  :func:`in_table_time` (``--local``) instead shows each row's
timestamps as text in its table's display zone (issue 43: the lake's zone, or
the table's ``[display.tables]`` override; one zone per table, whichever device
wrote the row), to the second and with the zone named.

**Old files.**  A dataset is read with the columns of :mod:`pitwatch.schemas.arrow`:
a file written before a column existed (``ts_offset``, ``evidence_from``)
reads it as null.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import importlib.resources
import operator
import os
import re
import resource
import threading
from collections.abc import Mapping
from typing import cast

import duckdb
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs

from pitwatch.config import display_time
from pitwatch.lake import Lake
from pitwatch.lake import parquet as lake_parquet
from pitwatch.lake import reviews as lake_reviews
from pitwatch.lake.reviews import LATEST_SQL
from pitwatch.queries import alerts_view
from pitwatch.queries.dealers import read_dealers, shipped_dealers
from pitwatch.queries.errors import LakeQueryError, QueryInterrupted, QueryTooLarge
from pitwatch.queries.statement_check import check_read_only
from pitwatch.schemas.arrow import LAKE_TABLES, PARTITIONED

REVIEWS_TABLE = lake_reviews.TABLE
VIEW_TABLES = (*LAKE_TABLES, alerts_view.TABLE, REVIEWS_TABLE)   # every lake table a connection has
STATUS_COLUMNS = ("status", "reviewed_by", "reviewed_at")        # the findings view's, from reviews
_FINDINGS_ROWS = "pitwatch_findings_rows"     # the pinned findings' relation, named only inside FINDINGS_VIEW
# The findings with their status: the latest review of each (lake/reviews.py LATEST_SQL, the one
# definition), or open.  A LEFT JOIN on the findings' rows: a filter on gaming_day still reaches
# the findings' dataset (DuckDB pushes it into the scan).
FINDINGS_VIEW = f"""SELECT f.*, coalesce(r.disposition, 'open') AS status, r.reviewer AS reviewed_by, r.reviewed_at AS reviewed_at
FROM {_FINDINGS_ROWS} AS f LEFT JOIN ({LATEST_SQL}) AS r ON r.finding_id = f.finding_id"""

SEED_PREFIX = "seeds_"
DEALERS_TABLE = SEED_PREFIX + "dealers"
_DAY_FOLDER = re.compile(r"gaming_day=\d{4}-\d{2}-\d{2}\Z", re.A)
# set, in this order, before the user's statement; the last one locks them all
LOCKDOWN = (
    "SET python_enable_replacements = false",
    "SET autoinstall_known_extensions = false",
    "SET autoload_known_extensions = false",
    "SET enable_external_access = false",
    "SET lock_configuration = true",
)

__all__ = ["LakeQueryError", "QueryInterrupted", "Answer", "connect", "run_sql", "table_files",
           "check_read_only", "seed_files", "view_columns", "first_line", "display_zone", "in_table_time"]


class Answer(tuple):
    """``(columns, rows)`` of a statement, and ``cut``: there were more rows than ``max_rows``
    (``rows`` holds the first ``max_rows``) or than ``max_bytes`` held (then ``cut_bytes``)."""

    cut: bool
    cut_bytes: bool

    def __new__(cls, columns: list[str], rows: list[tuple], cut: bool = False, cut_bytes: bool = False) -> "Answer":
        self = super().__new__(cls, (columns, rows))
        self.cut = cut
        self.cut_bytes = cut_bytes
        return self

    columns = property(operator.itemgetter(0))
    rows = property(operator.itemgetter(1))


# ---------------------------------------------------------------- the lake's files


def _visible_parquet(info: pafs.FileInfo) -> bool:
    return (info.type == pafs.FileType.File and info.base_name.endswith(".parquet")
            and not info.base_name.startswith("."))


def table_files(lake: Lake, name: str, versions: dict | None = None) -> list[str]:
    """The data files of lake table ``name``, sorted: what the table is.

    Every table is a Delta table (``docs/lake.md``): its files are those of the version the
    last successful run committed (``versions``: :func:`pitwatch.pipelines.lake_run.pinned_versions`,
    read here when not given), never a folder's listing: a listing also sees files later
    commits removed and files a killed run left.  ``runs`` is read at its latest version.
    """
    from pitwatch.lake import delta
    from pitwatch.lake import versions as lake_versions

    if name == "runs":
        return delta.files_at(lake, name, delta.current_version(lake, name))
    if versions is None:
        versions = lake_versions.pinned_versions(lake) or {}
    return delta.files_at(lake, name, versions.get(name))


def view_columns(name: str) -> pa.Schema:
    """The columns of table ``name`` in order: the file's columns, then ``gaming_day`` if partitioned."""
    schema = LAKE_TABLES[name]
    if name in PARTITIONED:
        i = schema.get_field_index("gaming_day")
        schema = schema.remove(i).append(schema.field(i))
    return schema


def table_dataset(lake: Lake, name: str, versions: dict | None = None, files: list[str] | None = None) -> ds.Dataset:
    """Lake table ``name`` as a ``pyarrow.dataset`` (no file is opened until it is scanned).
    ``runs``: the latest record of every run (a run writes one when it starts and one when it ends)."""
    schema = view_columns(name)
    if name == "runs":
        from pitwatch.lake import runs
        from pitwatch.lake.parquet import read_table

        return ds.dataset(pa.Table.from_pylist(runs.latest_records(read_table(lake, "runs")), schema=schema))
    if files is None:
        files = table_files(lake, name, versions)
    from pitwatch.lake import delta

    return delta.dataset(lake, name, files, schema)


def _versions(lake: Lake, as_of: str | None, tables: set[str] | None = None) -> tuple[dict, dict[str, list[str]]]:
    """The table versions a reader reads: the last successful run's, or ``as_of``'s
    (:func:`pitwatch.queries.as_of.resolve`, refused with a clear :class:`LakeQueryError`), and the files of
    every table but ``runs`` at those versions (of ``tables`` only, when given, unless ``as_of``).  ``as_of`` a run whose files retention removed is
    refused here, naming the vacuum (:func:`pitwatch.queries.as_of.refuse_vacuumed`), before any file opens."""
    from pitwatch.lake import versions as lake_versions
    from pitwatch.queries import as_of as as_of_mod

    if as_of is not None:
        versions, chosen, records = as_of_mod.resolve(lake, as_of, with_records=True)
    else:
        from pitwatch.lake.delta_log import LogError

        try:
            versions = lake_versions.pinned_versions(lake) or {}
        except LogError:
            raise
        except ValueError as exc:
            raise LakeQueryError(str(exc)) from None
    files = {name: table_files(lake, name, versions) for name in LAKE_TABLES      # --as-of: every table,
             if name != "runs" and (tables is None or as_of is not None or name in tables)}   # to refuse a vacuumed run
    if as_of is not None:
        as_of_mod.refuse_vacuumed(as_of, chosen, records, files, lake.root)
    return versions, files


def seed_files() -> dict[str, str]:
    """``seeds_<stem>`` → absolute path of every CSV shipped in the ``seeds`` package."""
    root = importlib.resources.files("pitwatch.seeds")
    out = {}
    for entry in sorted(root.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".csv"):
            stem = re.sub(r"\W", "_", entry.name[:-4])
            out[SEED_PREFIX + stem] = os.fspath(cast("os.PathLike[str]", entry))    # installed as files: a Path
    return out


# ---------------------------------------------------------------- the connection


def display_zone(name: str) -> str:
    """An IANA time zone name for ``--show-tz``, checked (:class:`LakeQueryError` when unknown)."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        if not name or name != name.strip():
            raise ValueError(name)
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise LakeQueryError(f"--show-tz {name!r}: not a time zone (an IANA name such as "
                             "America/Puerto_Rico, or UTC)") from None
    return name


def referenced_tables(*statements: str) -> set[str] | None:
    """The lake tables ``statements`` may name, for :func:`connect`'s ``tables``; None (every
    table) when one is refused by the read-only check.

    Found by DuckDB's tokenizer, not its binder: every identifier (quoted or not, any case) that is
    a table's name — a column of that name only opens one table more.  Binding can act
    (``get_table_names`` of ``EXPORT DATABASE 'dir'`` creates the folder) and needs the tables."""
    try:
        checked = [check_read_only(sql) for sql in statements]
    except LakeQueryError:
        return None
    wanted = {n.lower(): n for n in VIEW_TABLES}
    names: set[str] = set()
    for sql in checked:
        tokens = duckdb.tokenize(sql)
        for (pos, kind), nxt in zip(tokens, [*tokens[1:], (len(sql), None)]):
            if kind in (duckdb.token_type.identifier, duckdb.token_type.keyword):
                word = sql[pos:nxt[0]].strip().strip('"').replace('""', '"').lower()
                if word in wanted:
                    names.add(wanted[word])
    return names


def dealers_table(lake: Lake, dealers: str | None = None) -> pa.Table:
    """``seeds_dealers``: the file ``dealers`` (``--dealers FILE``) when given; else the roster the
    lake keeps now (:mod:`pitwatch.lake.roster`, found from the chain's head: a cost that does not
    grow with the lake's age), whatever ``--as-of`` pins — a name is shown, it judges nothing —;
    else the shipped ``seeds/dealers.csv``.  A bad file, or a kept roster that was changed, is a
    :class:`LakeQueryError`."""
    from pitwatch.lake import roster as lake_roster

    if dealers:
        return read_dealers(dealers)
    try:
        kept = lake_roster.current(lake)
    except lake_parquet.LakeError as exc:
        raise LakeQueryError(str(exc)) from None
    return kept.table if kept is not None else read_dealers(shipped_dealers())


def require_lake(lake: Lake) -> None:
    """:class:`LakeQueryError` when nothing is at the lake's location: no folder on disk, no key under
    the prefix on an object store (one request there: a mistyped bucket or path is said, not read as
    a lake with no tables), or a store that does not answer that request (one line, not a traceback)."""
    try:
        kind = lake.reach()
    except lake_parquet.LakeError as exc:     # an object store that cannot be asked
        raise LakeQueryError(str(exc)) from None
    if kind != pafs.FileType.Directory:
        raise LakeQueryError(f"no lake at {lake} (not a folder)")


def connect(lake: Lake, dealers: str | None = None, show_tz: str | None = None,
            as_of: str | None = None, tables: set[str] | None = None,
            memory_limit: int | None = None) -> duckdb.DuckDBPyConnection:
    """The analysts' connection: the lake's tables and the seeds, no file system, settings locked.

    ``dealers``: a dealers file (id, name, shift) to show as ``seeds_dealers``
    instead of the lake's roster (:func:`dealers_table`).  ``show_tz``: the IANA zone
    timestamps are shown in (default UTC), set before the lockdown.  ``as_of``: a run id or a
    timestamp: the tables as that run (or the last successful one then) left them
    (:func:`pitwatch.lake.versions.pinned_versions`), not as the last successful run did.
    ``tables``: only these lake tables are opened (:func:`referenced_tables` of the statement),
    so a query of one day's findings reads nothing of ``runs``' years of records or of
    ``alerts``' files; None: every table. ``memory_limit``: DuckDB's ``memory_limit`` in bytes
    (what its operators may hold; the process's own bound is :func:`run_sql`'s ``max_memory``).
    """
    zone = "UTC" if show_tz is None else display_zone(show_tz)
    require_lake(lake)
    roster = dealers_table(lake, dealers)   # a bad file is refused before anything opens
    con = duckdb.connect(":memory:", config={"temp_directory": ""})
    try:
        try:
            con.execute(f"SET TimeZone = {_sql_str(zone)}")
        except duckdb.Error:
            raise LakeQueryError(f"--show-tz {zone!r}: DuckDB does not know this time zone") from None
        if memory_limit is not None:
            con.execute(f"SET memory_limit = '{int(memory_limit)}B'")
        versions, files = _versions(lake, as_of, tables)
        if tables is None or REVIEWS_TABLE in tables or "findings" in tables:
            try:
                lake_reviews.check_intact(lake)     # gone, every finding would read open: refused
            except lake_parquet.LakeError as exc:
                raise LakeQueryError(str(exc)) from None
            con.register(REVIEWS_TABLE, lake_reviews.dataset(lake))     # latest version, never pinned
        for name in LAKE_TABLES:
            if tables is None or name in tables:
                rows = table_dataset(lake, name, versions, files.get(name))
                if name == "findings":      # a relation, not a second name the user would see
                    shown = con.from_arrow(rows).query(_FINDINGS_ROWS, FINDINGS_VIEW)
                    assert shown is not None            # a SELECT: always a relation
                    shown.create_view("findings")
                else:
                    con.register(name, rows)
        if tables is None or alerts_view.TABLE in tables:
            con.register(alerts_view.TABLE, alerts_view.dataset(lake))   # the live service's: latest version
        for name, path in seed_files().items():   # pitwatch's own files, read before the lockdown
            if name == DEALERS_TABLE:
                continue
            con.execute(f"CREATE TABLE {name} AS SELECT * FROM read_csv({_sql_str(path)}, header = true)")
        con.register("pitwatch_dealers_in", roster)   # read by Python: DuckDB opens no path of the user's
        con.execute(f"CREATE TABLE {DEALERS_TABLE} AS SELECT * FROM pitwatch_dealers_in")
        con.unregister("pitwatch_dealers_in")
        for statement in LOCKDOWN:
            con.execute(statement)
    except (duckdb.Error, OSError, pa.ArrowException) as exc:
        con.close()
        raise LakeQueryError(f"cannot open the lake {lake}: {first_line(exc)}") from None
    except LakeQueryError:
        con.close()
        raise
    return con


def in_table_time(answer: Answer, lake_zone: str, tables: Mapping[str, str] | None = None,
                  table_id: str | None = None) -> Answer:
    """``--local``: every timestamp (with a zone) of the answer as the text people read at its table
    (:func:`pitwatch.config.display_time`: ``2026-11-28 16:00:40 AST``, to the second, the zone
    named), in that table's display zone: ``tables[table]`` (the lake's per-table overrides,
    :func:`pitwatch.lake.settings.display_zones`), else ``lake_zone``.

    The table of a row is its first ``table_id`` column, else ``table_id`` (the query's one table:
    ``round_replay``, ``pack_custody``); a row with no table (a ``runs`` row, a null ``table_id``) is
    shown in the lake's zone.  One zone per table, whichever device (shoe or terminal) wrote the
    row: a row's ``ts_offset`` stays a column of the answer, never how it is shown."""
    columns, rows = answer.columns, answer.rows
    stamped = {i for r in rows for i, v in enumerate(r) if isinstance(v, _dt.datetime) and v.tzinfo is not None}
    if not stamped:
        return answer
    tables = tables or {}
    at = columns.index("table_id") if "table_id" in columns else None
    out = []
    for r in rows:
        table = r[at] if at is not None else table_id
        zone = tables.get(table, lake_zone) if isinstance(table, str) else lake_zone
        out.append(tuple(display_time(v, zone) if i in stamped and isinstance(v, _dt.datetime) and v.tzinfo
                         else v for i, v in enumerate(r)))
    return Answer(columns, out, answer.cut, answer.cut_bytes)


def _sql_str(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# ---------------------------------------------------------------- running a statement


class _Deadline:
    """Interrupts ``con``'s running query once ``seconds`` have passed (from a timer thread)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, seconds: float | None) -> None:
        self.con, self.seconds = con, seconds
        self.expired = threading.Event()
        self._done = threading.Event()
        self._thread = None

    def __enter__(self):
        if self.seconds is not None:
            self._thread = threading.Thread(target=self._watch, name="pitwatch-query-timeout", daemon=True)
            self._thread.start()
        return self

    def _watch(self) -> None:
        if self._done.wait(self.seconds):
            return
        self.expired.set()
        while not self._done.is_set():   # again until it lands: the query may not have started yet
            self.con.interrupt()
            self._done.wait(0.05)

    def __exit__(self, *exc) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join()


def run_sql(con: duckdb.DuckDBPyConnection, sql: str, params: dict | None = None, *,
            timeout: float | None = None, max_rows: int | None = None, max_bytes: int | None = None,
            max_memory: int | None = None) -> Answer:
    """Run one read-only statement with ``params`` bound by DuckDB.

    ``timeout`` (seconds) interrupts it (:class:`QueryInterrupted`); at most ``max_rows`` rows
    and about ``max_bytes`` bytes of values are fetched (``Answer.cut`` says there were more,
    ``Answer.cut_bytes`` that the bytes cut it); ``max_memory`` bytes: the most the process's
    address space may grow while the query runs (:func:`address_space_cap`), beyond which the
    query stops (:class:`QueryTooLarge`).
    """
    statement = check_read_only(sql)
    with _Deadline(con, timeout) as deadline:
        try:
            with address_space_cap(max_memory):
                con.execute(statement, params or None)
                columns = [d[0] for d in con.description] if con.description else []
                return _fetch(con, columns, max_rows, max_bytes)
        except (duckdb.OutOfMemoryException, MemoryError):
            raise QueryTooLarge(too_large(max_memory)) from None
        except duckdb.Error as exc:
            if deadline.expired.is_set():
                raise QueryInterrupted(f"the query was stopped after {timeout:g} s (--timeout {timeout:g}); "
                                       "filter on gaming_day or give it more time") from None
            raise LakeQueryError(first_line(exc)) from None


def too_large(max_memory: int | None) -> str:
    limit = "" if max_memory is None else f" than {show_bytes(max_memory)} (--max-memory {show_bytes(max_memory)})"
    return (f"the query needed more memory{limit}; filter on gaming_day, select fewer or shorter columns, "
            "or raise --max-memory")


def _fetch(con, columns: list[str], max_rows: int | None, max_bytes: int | None) -> Answer:
    """The rows, at most ``max_rows`` and about ``max_bytes`` of values (:func:`value_bytes`),
    fetched a batch at a time sized from the rows seen so far, so a few huge rows are not
    fetched a thousand at once."""
    if max_rows is None and max_bytes is None:
        return Answer(columns, con.fetchall())
    rows: list[tuple] = []
    size, batch = 0, 64
    while True:
        want = batch if max_rows is None else min(batch, max_rows + 1 - len(rows))
        got = con.fetchmany(want)
        for row in got:
            if max_rows is not None and len(rows) == max_rows:
                return Answer(columns, rows, True)
            size += value_bytes(row)
            if max_bytes is not None and size > max_bytes:
                return Answer(columns, rows, True, cut_bytes=True)
            rows.append(row)
        if len(got) < want:
            return Answer(columns, rows)
        if max_bytes is not None and rows:
            per_row = max(1, size // len(rows))
            batch = max(1, min(10_000, (max_bytes - size) // per_row + 1))
        else:
            batch = 10_000


def value_bytes(value) -> int:
    """About how many bytes a fetched value holds: its length for text and bytes, 8 for a number or
    a time, the sum over a row, a list or a map (the bound of ``--max-bytes``, not an exact size)."""
    if isinstance(value, (str, bytes, bytearray)):
        return len(value) + 8
    if isinstance(value, (tuple, list)):
        return 8 + sum(value_bytes(v) for v in value)
    if isinstance(value, dict):
        return 8 + sum(value_bytes(k) + value_bytes(v) for k, v in value.items())
    return 8


def show_bytes(n: int) -> str:
    """``n`` bytes as people write them: 4GB, 512MB, 300kB, 17B."""
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("kB", 1 << 10)):
        if n >= size:
            return f"{n / size:.3g}{unit}"
    return f"{n}B"


@contextlib.contextmanager
def address_space_cap(max_bytes: int | None):
    """While in it, the process's address space may grow by at most ``max_bytes`` (``RLIMIT_AS``
    set to today's size plus ``max_bytes``, restored on the way out; Linux, where the size is in
    ``/proc/self/status``; elsewhere nothing is capped).

    Why, beside DuckDB's ``memory_limit`` (set by :func:`connect`): DuckDB hands its results out
    in chunks of 2,048 rows whose text it does not count against that limit (measured: ``select
    repeat('x', 1000000) from range(100000)``, ``fetchmany(100)`` peaked at 4.2 GB under a 1 GB
    limit). Under the cap an allocation that would pass it fails: DuckDB turns it into an
    ``OutOfMemoryException`` and Python into a ``MemoryError``, both the query's error. The cap
    is the whole process's: a command (one query) sets it; a server must run each query in a
    process of its own."""
    if max_bytes is None:
        yield
        return
    current = _address_space_now()
    if current is None:
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = current + max_bytes
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    if soft != resource.RLIM_INFINITY:
        cap = min(cap, soft)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _address_space_now() -> int | None:
    """The process's address space in bytes (``VmSize``), or None where /proc does not say."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None
