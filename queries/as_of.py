"""``--as-of RUN_ID|TIMESTAMP``: which run's table versions a reader reads, with a clear refusal.

A reader of record (``pitwatch sql``, ``query``, ``export-duckdb``) reads every table at the
versions the last successful run committed (:func:`pipelines.lake_versions.pinned_versions`).
``--as-of`` names an earlier night instead, resolved through the ``runs`` table (never file
times):

* a **run id** (``20261128T070001Z-1a2b3c4d``, the ``run_id`` column of ``runs``): the tables as
  that run left them.  It must be a run of this lake that *succeeded*: a failed, interrupted or
  still running run committed nothing a reader may see (exit 2, saying its status).
* a **timestamp** in ISO 8601 (``2026-11-29T07:00:00Z``, ``2026-11-29T03:00:00-04:00``, or a date
  ``2026-11-29``, read as midnight UTC; a time without an offset is UTC): the tables as the last
  successful run that had *ended* by then left them, i.e. what the lake reported at that moment.
  A moment before the lake's first successful run ended is refused (there was nothing to read).

Decisions (the spec is silent): the ``runs`` table itself is always read whole at its latest
version, with or without ``--as-of``: it is the log of every writer of the lake, and the analyst
needs it to see which run a night was and what came after it.  The resolution is done before the
connection opens, so a refused ``--as-of`` opens no data file.
"""
from __future__ import annotations

import datetime as _dt
import re

from queries.errors import LakeQueryError

RUN_ID = re.compile(r"\d{8}T\d{6}Z-[0-9a-f]{8}\Z", re.A)
EXAMPLE = "a run id such as 20261128T070001Z-1a2b3c4d, or a time such as 2026-11-29T07:00:00Z"


def _records(lake: str) -> list[dict]:
    from pipelines import lake as lake_mod
    from pipelines import runs

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


def resolve(lake: str, as_of: str) -> tuple[dict[str, int], dict]:
    """``(table versions, the run record they come from)`` for ``--as-of``; :class:`LakeQueryError`
    (exit 2) for an unknown run id, a run that did not succeed, a malformed time or a time before
    the lake's first successful run."""
    from pipelines import lake_versions

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
    return versions, chosen


def _short(status: str) -> str:
    line = (status or "").splitlines()[0] if status else "unknown"
    return line if len(line) <= 120 else line[:117] + "..."
