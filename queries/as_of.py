"""``--as-of RUN_ID|TIMESTAMP``: which run's table versions a reader reads, with a clear refusal.

A reader of record (``pitwatch sql``, ``query``, ``export-duckdb``) reads every table at the
versions the last successful run committed (:func:`pitwatch.lake.versions.pinned_versions`).
``--as-of`` names an earlier night instead, resolved through the ``runs`` table (never file
times):

* a **run id** (``20261128T070001Z-1a2b3c4d``, the ``run_id`` column of ``runs``): the tables as
  that run left them.  It must be a run of this lake that *succeeded*: a failed, interrupted or
  still running run committed nothing a reader may see (exit 2, saying its status).
* a **timestamp** in ISO 8601 (``2026-11-29T07:00:00Z``, ``2026-11-29T03:00:00-04:00``, or a date
  ``2026-11-29``, read as midnight UTC; a time without an offset is UTC): the tables as the last
  successful run that had *ended* by then left them, i.e. what the lake reported at that moment.
  A moment before the lake's first successful run ended is refused (there was nothing to read).

**Retention.**  ``pitwatch vacuum`` removes files that left the tables longer ago than the
retention (:mod:`pitwatch.lake.vacuum`); its chained ``runs`` record lists every file it removed.  A run
whose tables read such a file is refused (exit 2) naming the vacuum and its retention day (the
vacuum's start less its retention: files that left the tables before then were removed), checked
against those records (:func:`refuse_vacuumed`) before any data file is opened.

Decisions (the spec is silent): the ``runs`` table itself is always read whole at its latest
version, with or without ``--as-of``: it is the log of every writer of the lake, and the analyst
needs it to see which run a night was and what came after it.  The resolution is done before the
connection opens, so a refused ``--as-of`` opens no data file.
"""
from __future__ import annotations

import datetime as _dt
import json
import re

from pitwatch.lake import Lake
from pitwatch.queries.errors import LakeQueryError

RUN_ID = re.compile(r"\d{8}T\d{6}Z-[0-9a-f]{8}\Z", re.A)
EXAMPLE = "a run id such as 20261128T070001Z-1a2b3c4d, or a time such as 2026-11-29T07:00:00Z"


def _records(lake: Lake) -> list[dict]:
    from pitwatch.lake import parquet as lake_mod
    from pitwatch.lake import runs

    return runs.latest_records(lake_mod.read_table(lake, "runs"))


def parse_moment(text: str) -> _dt.datetime:
    """An ISO 8601 time (or date) as an aware datetime (UTC when it names no offset)."""
    try:
        if not text or text != text.strip() or not text[:4].isdigit():
            raise ValueError(text)
        when = _dt.datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise LakeQueryError(f"--as-of {text!r}: not a run id of this lake nor a time ({EXAMPLE})") from None
    return when if when.tzinfo else when.replace(tzinfo=_dt.timezone.utc)


def resolve(lake: Lake, as_of: str, with_records: bool = False) -> tuple:
    """``(table versions, the run record they come from)`` for ``--as-of`` (and, ``with_records``,
    the latest record of every run, as read); :class:`LakeQueryError` (exit 2) for an unknown run
    id, a run that did not succeed, a malformed time or a time before the lake's first successful
    run."""
    from pitwatch.lake import versions as lake_versions

    records = _records(lake)
    done = [r for r in records if r["status"] == "succeeded" and r.get("table_versions")]
    by_id = {r["run_id"]: r for r in records}
    if as_of in by_id:
        run = by_id[as_of]
        if run["status"] != "succeeded":
            raise LakeQueryError(f"--as-of {as_of}: that run did not succeed (status: {_short(run['status'])}); "
                                 "it committed nothing a reader sees: give a succeeded run (pitwatch sql "
                                 "\"SELECT run_id, status, ended FROM runs\" lists them)")
        if not run.get("table_versions"):
            writer = _writer_command(run)
            if writer is not None:        # pitwatch review, pitwatch vacuum: no night's tables to read
                raise LakeQueryError(f"--as-of {as_of}: that is a pitwatch {writer}, which commits no night's "
                                     "tables: give a batch run's id or a time (pitwatch sql \"SELECT run_id, "
                                     "command, ended FROM runs\" lists them)")
            raise LakeQueryError(f"--as-of {as_of}: that run names no table versions (a lake of the earlier "
                                 "layout: pitwatch migrate converts it)")
        chosen = run
    elif RUN_ID.match(as_of):
        raise LakeQueryError(f"--as-of {as_of}: no run of this lake has that id (pitwatch sql "
                             "\"SELECT run_id, status, ended FROM runs\" lists them)")
    else:
        when = parse_moment(as_of)
        ended = [r for r in done if r["ended"] is not None and r["ended"] <= when]
        if not ended:
            first = min(done, key=lambda r: (r["ended"], r["run_id"]), default=None)
            if first is None:
                raise LakeQueryError(f"--as-of {as_of}: this lake has no successful run yet")
            raise LakeQueryError(f"--as-of {as_of}: that is before the lake's first successful run ended "
                                 f"({first['run_id']}, {first['ended'].isoformat()}): there was nothing to read")
        chosen = max(ended, key=lambda r: (r["ended"], r["run_id"]))
    try:
        versions = lake_versions.pinned_versions(lake, chosen["run_id"])
    except ValueError as exc:
        raise LakeQueryError(str(exc)) from None
    if versions is None:     # cannot happen for a succeeded run with table versions; said rather than assumed
        raise LakeQueryError(f"--as-of {as_of}: no table versions for run {chosen['run_id']}")
    return (versions, chosen, records) if with_records else (versions, chosen)


def vacuumed(records: list[dict]) -> dict[str, tuple[dict, dict]]:
    """``table/path`` -> ``(the vacuum's record, its entry for the file)`` of every file a
    ``pitwatch vacuum`` record (its end, or what it removed before it was interrupted) lists."""
    from urllib.parse import unquote

    out: dict[str, tuple[dict, dict]] = {}
    for r in records:
        try:
            options = json.loads(r.get("options") or "{}")
        except ValueError:
            continue
        if not isinstance(options, dict) or options.get("command") != "vacuum":
            continue
        tables = options.get("tables")
        for entry in (tables.values() if isinstance(tables, dict) else ()):
            for f in (entry.get("files") if isinstance(entry, dict) else None) or []:
                if not (isinstance(f, dict) and isinstance(f.get("path"), str)):
                    continue
                path = unquote(f["path"])
                if path not in out or out[path][1].get("absent"):     # a removal over a later "already gone"
                    out[path] = (r, f)
    return out


def retention_days(record: dict) -> int:
    days = json.loads(record["options"]).get("retention_days")
    return days if isinstance(days, int) else 0


def retention_day(record: dict) -> str:
    """The day a vacuum's retention reached back to: files that left the tables before it were removed."""
    return (record["started"] - _dt.timedelta(days=retention_days(record))).date().isoformat()


def refuse_vacuumed(as_of: str, chosen: dict, records: list[dict], files: dict[str, list[str]], root: str) -> None:
    """:class:`LakeQueryError` (exit 2) when a table of ``chosen``'s versions reads a file a vacuum
    removed (``files``: table -> its files at the pinned version, paths under ``root``, the lake's
    :attr:`pitwatch.lake.Lake.root`)."""
    gone = vacuumed(records)
    if not gone:
        return
    from urllib.parse import unquote

    root = root.rstrip("/") + "/"
    hits = []
    for name, paths in files.items():
        for full in paths:
            rel = unquote(full[len(root):] if full.startswith(root) else f"{name}/{full.rsplit(f'/{name}/', 1)[-1]}")
            if rel in gone:
                hits.append((rel, *gone[rel]))
    if not hits:
        return
    hits.sort(key=lambda h: (bool(h[2].get("absent")), h[0]))      # a removal by retention first
    rel, record, entry = hits[0]
    if entry.get("absent"):
        raise LakeQueryError(f"--as-of {as_of}: run {chosen['run_id']}'s tables read {rel}, which is gone: "
                             f"vacuum run {record['run_id']} found it already gone (not removed by retention; "
                             "pitwatch verify names it)")
    runs_by = sorted({h[1]["run_id"] for h in hits if not h[2].get("absent")})
    days = sorted({h[2]["gaming_day"] for h in hits if h[2].get("gaming_day")})
    raise LakeQueryError(
        f"--as-of {as_of}: the files of run {chosen['run_id']}'s tables were removed by retention: pitwatch vacuum run "
        f"{record['run_id']} (retention {retention_days(record):,} days, retention "
        f"day {retention_day(record)}: files that left the tables before it were removed)"
        + (f" and {len(runs_by) - 1} more vacuum runs" if len(runs_by) > 1 else "")
        + f" removed {len(hits):,} of the files they read, e.g. {rel}"
        + (f" (gaming days {days[0]}..{days[-1]})" if len(days) > 1 else f" (gaming day {days[0]})" if days else "")
        + "; that vacuum's runs record lists each with its SHA-256. A later run, or one of held days only, still reads")


def _short(status: str) -> str:
    line = (status or "").splitlines()[0] if status else "unknown"
    return line if len(line) <= 120 else line[:117] + "..."


def _writer_command(record: dict) -> str | None:
    """``review`` or ``vacuum`` when ``record`` is one of those writers' (its options' ``command``), else None."""
    import json

    try:
        options = json.loads(record.get("options") or "{}")
    except ValueError:
        return None
    command = options.get("command") if isinstance(options, dict) else None
    return command if command in ("review", "vacuum") else None
