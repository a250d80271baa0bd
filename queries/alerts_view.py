"""The live service's ``alerts`` table as the analysts see it (``docs/lake.md``, "The alerts table").

Read at its **latest** Delta version, never pinned to a run (``--as-of`` does not move it): its
only writer is ``pitwatch watch`` (:mod:`pitwatch.live.alerts_table`), which no run's version names.  Its
columns: :data:`pitwatch.schemas.arrow.ALERTS` (``gaming_day``, the partition key, last, as every
partitioned table), then any column schema evolution added since (an alert's extra member, as
its JSON text).  A lake whose ``alerts/`` folder is still plain Parquet (written before the
table was Delta, no watcher started since to convert it: :meth:`pitwatch.live.alerts_table.AlertsTable._migrate`)
is read from the folder's files; a lake with no alerts has the table, empty.
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs

from pitwatch.lake import Lake
from pitwatch.schemas.arrow import ALERTS

TABLE = "alerts"


def columns(lake: Lake) -> pa.Schema:
    from pitwatch.lake import delta_log

    i = ALERTS.get_field_index("gaming_day")
    schema = ALERTS.remove(i)
    snap = delta_log.snapshot(lake, TABLE)
    declared = snap.arrow_schema() if snap is not None else None
    if declared is not None:
        have = set(ALERTS.names)
        for f in declared:
            if f.name not in have:
                schema = schema.append(pa.field(f.name, pa.string()))
    return schema.append(ALERTS.field(i))


def files(lake: Lake) -> list[str]:
    """The table's files at its latest version; a plain-Parquet folder's visible files."""
    from pitwatch.lake import delta

    if delta.is_table(lake, TABLE):
        return delta.files_at(lake, TABLE, delta.current_version(lake, TABLE))
    fs, root = lake.fs, lake.root
    base = f"{root}/{TABLE}"
    if fs.get_file_info(base).type != pafs.FileType.Directory:
        return []
    return sorted(i.path for i in fs.get_file_info(pafs.FileSelector(base, recursive=True))
                  if i.type == pafs.FileType.File and i.base_name.endswith(".parquet")
                  and not i.base_name.startswith(("_", ".")) and "/_delta_log/" not in i.path)


def dataset(lake: Lake) -> ds.Dataset:
    from pitwatch.lake import delta

    return delta.dataset(lake, TABLE, files(lake), columns(lake), partitioned=True)
