"""Which version of every table a reader reads: the one the last successful run committed.

A run commits each table, then appends its ``runs`` record naming every table's version
(:mod:`pitwatch.pipelines.lake_run`); a reader that takes the versions of the last ``succeeded`` record
sees one consistent lake, never half of a run, never a killed run's files.  ``--as-of`` names
an earlier run (its id) or a moment (the last successful run ended by then): what the lake was
that night, resolved through ``runs``, not through file times.  No Beam here: readers import it.
"""
from __future__ import annotations

import json

from pitwatch.lake import Lake, runs
from pitwatch.lake import parquet as lake


def pinned_versions(lake_path: Lake, as_of: str | None = None) -> dict[str, int] | None:
    """Every table's version as the last successful run (or the run ``as_of`` names: a run id, or
    the last successful run ended at or before a timestamp) committed it; None: no such run.

    Without ``as_of`` only the chain's head is read: every record carries the versions readers read
    as of it (``reader_versions``, :func:`pitwatch.lake.runs.write_run_record`), so the cost is the
    same on a lake of any age.  A head written before that column existed, and ``as_of``, read
    every record (:func:`pitwatch.lake.runs.last_successful_versions`).

    A lake with no ``runs`` table at all was not written by ``pitwatch run`` (tables committed
    one by one, :func:`pitwatch.lake.parquet.write_partition`): its tables are read as they are now; so is
    one whose only records are the live service's (command ``watch``: its alerts commits, which
    commit none of these tables, :mod:`pitwatch.live.alerts_table`)."""
    from pitwatch.lake import delta

    if as_of is None:
        head = runs.runs_head(lake_path) if delta.is_table(lake_path, "runs") else None
        if head is not None and head["reader_versions"] is not None:
            carried = json.loads(head["reader_versions"])
            if carried == "latest":        # only watchers wrote the lake (runs.READ_LATEST)
                return {name: v for name in lake.LAKE_TABLES
                        if (v := delta.current_version(lake_path, name)) is not None}
            return carried                 # a run's versions, or None: no run has succeeded yet
    return runs.last_successful_versions(lake_path, as_of, current_when_none=True)
