"""The ``runs`` table: one record per run, written when it starts and when it ends."""
from __future__ import annotations

import datetime as _dt
import json
import platform
import uuid
from collections import Counter

from pipelines import __version__, lake
from rules.catalog import SEVERITIES
from schemas.arrow import RUNS, rows_to_table
from schemas.contract import CONTRACT_VERSION



def versions() -> str:
    import apache_beam as beam
    import pyarrow as pa

    return json.dumps({
        "pitwatch": __version__, "contract": CONTRACT_VERSION, "apache_beam": beam.__version__,
        "pyarrow": pa.__version__, "python": platform.python_version(),
    }, sort_keys=True)


def new_run_id(now: _dt.datetime) -> str:
    return now.strftime("%Y%m%dT%H%M%SZ") + "-" + uuid.uuid4().hex[:8]


def run_record(meta: dict, status: str, totals: dict | None = None, ended=None) -> dict:
    """A row of the ``runs`` table from the run's metadata and its bookkeeping totals."""
    totals = totals or {}
    written = totals.get("written", [])
    by_severity = {s: totals.get(f"findings_{s}", 0) for s in SEVERITIES}
    return {
        "run_id": meta["run_id"], "command": meta["command"],
        "inputs": sorted(totals.get("inputs", []), key=lambda i: i["path"]),
        "lines_read": totals.get("read", 0), "accepted": totals.get("accepted", 0),
        "rejected": totals.get("rejected", 0), "duplicates": totals.get("duplicates", 0),
        "gaming_days": sorted({_dt.date.fromisoformat(d) for n, d, _ in written if n == "events"}),
        "findings": sum(by_severity.values()),
        "findings_by_severity": json.dumps(by_severity),
        "versions": meta["versions"], "options": meta["options"], "status": status,
        "started": _dt.datetime.fromisoformat(meta["started"]), "ended": ended,
        "damaged_files": totals.get("damaged_files", 0), "bytes_not_read": totals.get("bytes_not_read", 0),
        "damage": sorted(totals.get("damage", []), key=lambda d: d["path"]),
    }


def finished_run_record(meta: dict, totals: dict) -> dict:
    """The record of a finished run: ``failed: …`` when its lines or its rows do not reconcile."""
    rec = run_record(meta, "succeeded", totals, ended=_dt.datetime.now(_dt.timezone.utc))
    problem = unreconciled(rec, totals.get("written", []))
    if problem:
        rec["status"] = f"failed: {problem}"
    return rec


def unreconciled(rec: dict, written: list) -> str | None:
    """Why a run's counts do not add up, or None.

    Every line read is accepted, rejected or a duplicate; every accepted
    event is a row of an ``events`` partition and every rejected line a row
    of the ``rejects`` partition written by this run, as is every damaged
    file (one row each, counted apart from lines); and no partition is
    written twice (a second write replaces the first: rows would be lost).
    A run that fails these checks must not pass for a good one.
    """
    if rec["lines_read"] != rec["accepted"] + rec["rejected"] + rec["duplicates"]:
        return (f"counts do not reconcile: read {rec['lines_read']} != accepted {rec['accepted']}"
                f" + rejected {rec['rejected']} + duplicates {rec['duplicates']}")
    seen = Counter((name, day) for name, day, _ in written)
    twice = sorted(f"{name}/gaming_day={day}" for (name, day), n in seen.items() if n > 1)
    if twice:
        return f"partition written twice in one run, rows may be lost: {', '.join(twice)}"
    for name, expected in (("events", rec["accepted"]), ("rejects", rec["rejected"] + rec.get("damaged_files", 0))):
        rows = sum(n for table, _, n in written if table == name)
        if rows != expected:
            return f"rows do not reconcile: the {name} partitions hold {rows} rows, the run counted {expected}"
    return None


def write_run_record(lake_path: str, record: dict) -> None:
    lake.write_atomically(lake_path, "runs", f"{record['run_id']}.parquet", rows_to_table([record], RUNS))


def read_run_record(lake_path: str, run_id: str) -> dict:
    import pyarrow.parquet as pq

    fs, root = lake.filesystem(lake_path)
    with fs.open_input_file(f"{root}/runs/{run_id}.parquet") as f:
        return pq.read_table(f).to_pylist()[0]
