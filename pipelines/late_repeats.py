"""A day whose tables and devices a run left as the lake holds them, but not the carried pack index.

A late file that changes a pack (its cards, or a pack added) changes the pack index the state
carries for the cross-pack repeat of ``UNSHUFFLED_SEQUENCE`` (``pack_cards``: every pack of the
last ``retention_days`` days) for as long as the pack stays in it, a week by default, while the
tables' and devices' state is often back to the lake's the day after.  Such a later day is not
replayed: only the repeat check runs again (:func:`repeat_check_day`), with the step the replay
runs (:class:`pitwatch.pipelines.replay.FindRepeatedRuns`), from the day's own packs (the ones the lake's
index of the day holds beyond what it carried in from the day before), the index the run carried
into the day, and the table-level repeats the day's replay raised (read back from its findings).
It rewrites only the day's ``findings`` files (the cross-pack repeats replaced) and its state
(the new index; the tables', devices' state and the manifest as the lake holds them): the day's
events, rounds, packs and rejects stand, and no table is replayed.
"""
from __future__ import annotations

import json
from collections import Counter
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pitwatch.lake import Lake, delta, finding_changes, state
from pitwatch.lake import parquet as lake
from pitwatch.lake.files import replay_day_of
from pitwatch.rules.uses import use_key

RULE = "UNSHUFFLED_SEQUENCE"
TABLES = ("findings", state.TABLE)      # the tables a repeat-check day rewrites


def _row_key(row: dict) -> str:
    return json.dumps(row, sort_keys=True)


def _run_step(gaming_day_config, plan, prior_rows: list[dict], new_records: list[dict], fired) -> tuple[list, list]:
    """:class:`FindRepeatedRuns` as the day's replay runs it: ``(findings tables by partition, index rows)``."""
    from pitwatch.pipelines.coders import pack_bytes, unpack
    from pitwatch.pipelines.replay import NO_PACK_CARDS, TAG_STATE, FindRepeatedRuns
    from pitwatch.rules.repeated_runs import RunKeys

    blobs = [NO_PACK_CARDS]
    if new_records:
        blobs.append((RunKeys.of(new_records).to_bytes(), pack_bytes(orjson.dumps(new_records))))
    step = FindRepeatedRuns(gaming_day_config, plan)
    findings, index = [], []
    for out in step.process((None, blobs), list(fired), prior_rows):
        if getattr(out, "tag", None) == TAG_STATE:
            index += state.rows_of(unpack(out.value[1]))
        else:
            findings.append(out)
    return findings, index


def _ids(findings) -> set[str]:
    return {i for (_key, table) in findings for i in table.column("finding_id").to_pylist()}


def day_findings_files(lake_path: Lake, day: str, version: int | None) -> list[str]:
    """The ``findings`` files the replay of ``day`` wrote (in whatever partition), at ``version``."""
    return [p for p in delta.files_at(lake_path, "findings", version) if replay_day_of(p) == day]


def _partition_of(path: str) -> str:
    return path.split("/gaming_day=", 1)[1].split("/", 1)[0]


def _read(lake_path: Lake, path: str) -> pa.Table:
    fs = lake_path.fs
    with fs.open_input_file(path) as f:
        return pq.read_table(f)


def repeat_check_day(lake_path: Lake, plan, carried_in: tuple, lake_in: tuple, findings_version: int | None,
                     gaming_day_config) -> tuple[dict, tuple] | None:
    """The repeat check of day ``plan.replay_day`` from the index the run carries into it.

    ``carried_in``: the state files the run carries into the day; ``lake_in``: the lake's state
    files of the day before (what the lake's replay of the day started from).  None when the index
    the day leaves is the lake's (then its repeats are too: same index in, same packs): nothing to
    write.  Otherwise ``(result, state files)``: the day's rewritten ``findings`` and ``state``
    files are written (not committed) and its result (as :class:`pitwatch.pipelines.graph.RecordDay`
    writes it) is at ``plan.result_path``.
    """
    day = plan.replay_day
    committed = list(plan.committed_state)
    lake_index = state.read_rows(lake_path, list(lake_in), "pack_cards")
    lake_rows = [{k: r[k] for k in ("table_id", "pack_id", "first_ts", "record")}
                 for r in state.read_rows(lake_path, committed, "pack_cards")]
    # the day's own packs: its index less what it carried in from the day before
    _none, carried_by_lake = _run_step(gaming_day_config, plan, lake_index, [], [])
    own = Counter(map(_row_key, lake_rows)) - Counter(map(_row_key, carried_by_lake))
    new_records = [json.loads(json.loads(k)["record"]) for k in sorted(own.elements())]
    run_index = state.read_rows(lake_path, list(carried_in), "pack_cards")
    # the day's table-level repeats: its UNSHUFFLED_SEQUENCE findings that are not the cross-pack step's
    cross_then, _index = _run_step(gaming_day_config, plan, lake_index, new_records, [])
    cross_ids = _ids(cross_then)
    files = day_findings_files(lake_path, day, findings_version)
    old = {path: _read(lake_path, path) for path in files}
    fired, old_cross = set(), set()
    for table in old.values():
        columns = ["finding_id", "table_id", "pack_id"] + (["pack_use"] if "pack_use" in table.column_names else [])
        for r in table.filter(pc.equal(table.column("rule_id"), RULE)).select(columns).to_pylist():
            if r["finding_id"] in cross_ids:
                old_cross.add(r["finding_id"])
            else:   # the pack's use key (the pack cards records are keyed by it: pitwatch.rules.packs.sequence)
                fired.add((r["table_id"], use_key(r["pack_id"], r.get("pack_use") or 1)))
    findings, index = _run_step(gaming_day_config, plan, run_index, new_records, sorted(fired))
    if Counter(map(_row_key, index)) == Counter(map(_row_key, lake_rows)):
        return None
    return _write(lake_path, plan, old, old_cross, findings, index, committed)


def _write(lake_path: Lake, plan, old: dict, old_cross: set, findings, index: list[dict], committed: list[str]):
    from pitwatch.inputs.damage import incomplete_days
    from pitwatch.lake.files import replay_file_name
    from pitwatch.schemas.arrow import FINDINGS

    day = plan.replay_day
    name = replay_file_name(day, plan.run_id)
    by_partition: dict[str, list[pa.Table]] = {}
    for path, table in old.items():
        kept = table.filter(pc.invert(pc.is_in(table.column("finding_id"), pa.array(sorted(old_cross), pa.string()))))
        by_partition.setdefault(_partition_of(path), []).append(kept)
    for (_name, part), table in findings:
        by_partition.setdefault(part, []).append(table.drop_columns(["gaming_day"]))
    out: dict[str, Any] = {"written": [], "files": []}    # and counts, per severity and of damaged days
    for part, tables in sorted(by_partition.items()):
        rows = sum(t.num_rows for t in tables)
        if rows == 0 and part != day:
            continue                     # as the replay: the day's own partition always gets its file
        stamped = finding_changes.stamp_partition(lake_path, part, tables, plan.run_id, plan.findings_version)
        written = lake.write_partition_file(lake_path, "findings", part, [stamped], file_name=name)
        out["written"].append(("findings", part, written.rows))
        out["files"].append(written.to_dict())
        for t in tables:
            for sev in t.column("severity").to_pylist():
                out[f"findings_{sev}"] = out.get(f"findings_{sev}", 0) + 1
            out["input_damaged"] = out.get("input_damaged", []) + incomplete_days(t, part)
    assert set(FINDINGS.names) >= {"finding_id", "severity"}
    state_files = {}
    for kind in state.KINDS:
        rows = index if kind == "pack_cards" else state.read_rows(lake_path, committed, kind)
        written = state.write_state_file(lake_path, day, plan.run_id, kind, rows)
        state_files[kind] = written.rows
        out["files"].append(written.to_dict())
    manifest = _manifest(lake_path, committed)
    manifest.update({"run_id": plan.run_id, "state_files": state_files, "repeats_only": True})
    for key in ("format", "engine_state"):
        manifest.pop(key, None)
    from pitwatch import __version__

    manifest["pitwatch"] = __version__
    written = state.write_manifest(lake_path, day, plan.run_id, manifest)
    out["files"].append(written.to_dict())
    fs = lake_path.fs
    fs.create_dir(plan.result_path.rsplit("/", 1)[0], recursive=True)
    with fs.open_output_stream(plan.result_path) as f:
        f.write(json.dumps(out, sort_keys=True, default=str).encode())
    root = lake_path.root
    files = tuple(f"{root}/{state.TABLE}/{f['path']}" for f in out["files"] if f["table"] == state.TABLE)
    return out, files


def _manifest(lake_path: Lake, committed: list[str]) -> dict:
    for path in committed:
        if path.endswith("-manifest.parquet"):
            return json.loads(_read(lake_path, path).column("payload")[0].as_py())
    raise state.StateError("a replayed day's state has no manifest: replay from an earlier day "
                           "(pitwatch run --rebuild-from DAY …)")
