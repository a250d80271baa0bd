"""Which version of every table a reader reads: the one the last successful run committed.

A run commits each table, then appends its ``runs`` record naming every table's version
(:mod:`pipelines.lake_run`); a reader that takes the versions of the last ``succeeded`` record
sees one consistent lake, never half of a run, never a killed run's files.  ``--as-of`` names
an earlier run (its id) or a moment (the last successful run ended by then): what the lake was
that night, resolved through ``runs``, not through file times.  No Beam here: readers import it.
"""
from __future__ import annotations

import datetime as _dt
import json

from pipelines import lake, runs


def pinned_versions(lake_path: str, as_of: str | None = None) -> dict[str, int] | None:
    """Every table's version as the last successful run (or the run ``as_of`` names: a run id, or
    the last successful run ended at or before a timestamp) committed it; None: no such run.

    Without ``as_of`` only the chain's head is read: every record carries the versions readers read
    as of it (``reader_versions``, :func:`pipelines.runs.write_run_record`), so the cost is the
    same on a lake of any age.  A head written before that column existed, and ``as_of``, read
    every record (:func:`last_successful_versions`).

    A lake with no ``runs`` table at all was not written by ``pitwatch run`` (tables committed
    one by one, :func:`pipelines.lake.write_partition`): its tables are read as they are now; so is
    one whose only records are the live service's (command ``watch``: its alerts commits, which
    commit none of these tables, :mod:`live.alerts_table`)."""
    from pipelines import delta

    if as_of is None:
        head = runs.runs_head(lake_path) if delta.is_table(lake_path, "runs") else None
        if head is not None and head["reader_versions"] is not None:
            carried = json.loads(head["reader_versions"])
            if carried == "latest":        # only watchers wrote the lake (runs.READ_LATEST)
                return {name: v for name in lake.LAKE_TABLES
                        if (v := delta.current_version(lake_path, name)) is not None}
            return carried                 # a run's versions, or None: no run has succeeded yet
    return last_successful_versions(lake_path, as_of, current_when_none=True)


def last_successful_versions(lake_path: str, as_of: str | None = None,
                             current_when_none: bool = False) -> dict[str, int] | None:
    """:func:`pinned_versions` by reading every record of ``runs`` (the ``as_of`` search, and a
    lake whose head predates ``reader_versions``).  ``current_when_none``: a lake with no
    successful run's record is read as its tables are now."""
    from pipelines import delta

    table = lake.read_table(lake_path, "runs") if delta.is_table(lake_path, "runs") else None
    if table is None or set(table.column("command").to_pylist()) <= {"watch"}:
        if as_of is not None or not current_when_none:
            return None
        return {name: v for name in lake.LAKE_TABLES if (v := delta.current_version(lake_path, name)) is not None}
    done = [r for r in runs.latest_records(table) if r["status"] == "succeeded" and r.get("table_versions")]
    if as_of is not None:
        by_id = [r for r in done if r["run_id"] == as_of]
        if by_id:
            done = by_id
        else:
            when = _parse_time(as_of)
            done = [r for r in done if r["ended"] is not None and r["ended"] <= when]
    if not done:
        return None
    last = max(done, key=lambda r: (r["ended"], r["run_id"]))
    return json.loads(last["table_versions"])


def _parse_time(text: str) -> _dt.datetime:
    try:
        when = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"--as-of {text!r} is neither a run id of a successful run nor a timestamp "
                         "(2026-11-29T07:00:00+00:00)") from None
    return when if when.tzinfo else when.replace(tzinfo=_dt.timezone.utc)
