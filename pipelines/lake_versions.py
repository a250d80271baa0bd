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

    A lake with no ``runs`` table at all was not written by ``pitwatch run`` (tables committed
    one by one, :func:`pipelines.lake.write_partition`): its tables are read as they are now; so is
    one whose only records are the live service's (command ``watch``: its alerts commits, which
    commit none of these tables, :mod:`live.alerts_table`)."""
    from pipelines import delta

    table = lake.read_table(lake_path, "runs") if delta.is_table(lake_path, "runs") else None
    if table is None or set(table.column("command").to_pylist()) <= {"watch"}:
        if as_of is not None:
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
