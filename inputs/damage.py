"""A damaged input file's facts, for ``INPUT_DAMAGED`` (:mod:`pitwatch.rules.input_damage`): one reading for batch and live.

:func:`damage_facts` reads the file again up to its :class:`pitwatch.inputs.stored.Damage` with the
batch's own readers (the same lines, numbered alike) and decodes them, so the facts of one file's
bytes are the same in ``pitwatch run`` and ``pitwatch watch`` (which calls it when its reader meets
the damage of a ``.jsonl.gz``): its name without folders, the byte offset, what is wrong, the
stored bytes not read, the SHA-256 of the stored bytes before the offset, the tables and devices of
its accepted lines (in file order), the first and last of those lines (device, event, ``ts``,
offset, gaming day) and how many there were.  Only damaged files are read twice.

In the batch the facts travel in the file's one ``rejects`` row (``line`` null, ``raw`` the facts
as JSON under :data:`pitwatch.rules.input_damage.FACTS_KEY`), filed under the gaming day of the last line
read before the damage, else the run's day: each replay of that day builds the finding again from
it (:func:`damage_findings`), so a later replay of the day (a late file) keeps it, and the file
read again undamaged (the casino re-sends it: its rows are replaced) takes it away.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os

from pitwatch.inputs.stored import Damage, _open
from pitwatch.rules.input_damage import FACTS_KEY, input_damaged
from pitwatch.schemas.decode import GamingDayConfig, Reject, decode_fields, decode_line

CHUNK = 10_000


def damage_of(path: str) -> Damage | None:
    """The file's :class:`Damage` as the batch's readers find it, or None (the watcher's check)."""
    from pitwatch.inputs.files import iter_parquet_chunks
    from pitwatch.inputs.stored import TextBlocks

    if path.endswith(".parquet"):
        return next((items for _n, items in iter_parquet_chunks(path, CHUNK) if isinstance(items, Damage)), None)
    blocks = TextBlocks(path)
    for _block in blocks:
        pass
    return blocks.damage


def prefix_sha256(path: str, offset: int) -> str:
    """SHA-256 of the file's stored bytes before ``offset`` (what could be read of them)."""
    h = hashlib.sha256()
    left = offset
    try:
        with _open(path, raw=True) as f:
            while left > 0:
                block = f.read(min(1 << 20, left))
                if not block:
                    break
                h.update(block)
                left -= len(block)
    except OSError:     # the read fails again: the digest of what it gave
        pass
    return h.hexdigest()


def _accepted(path: str, config: GamingDayConfig, last_line: int | None = None, offset: int | None = None):
    """``(table_id, device_id, event_id, ts, ts_offset, gaming_day)`` of each accepted line before the
    damage (up to ``last_line``, when the read stopped at a line; a JSONL file's stored bytes up to
    ``offset``)."""
    from pitwatch.inputs.files import iter_line_chunks, iter_parquet_chunks

    if path.endswith(".parquet"):
        for _n, items in iter_parquet_chunks(path, CHUNK):
            if isinstance(items, Damage):
                return
            for number, item in items:
                if last_line is not None and number > last_line:
                    return
                out = decode_fields(item, None, path, number, config) if type(item) is dict else None
                if out is not None and not isinstance(out, Reject):
                    yield (out.get("table_id"), out.get("device_id"), out.get("event_id"), out["ts"],
                           out.get("ts_offset"), out["gaming_day"])
        return
    from pitwatch.inputs.stored import TextBlocks

    # the lines before the damage only (a file that changed while it was read: not the bytes written since)
    source = TextBlocks(path, upto=offset) if offset is not None else None
    for _n, chunk in iter_line_chunks(path, CHUNK, source=source):
        for number, raw in chunk:
            if last_line is not None and number > last_line:
                return
            out = decode_line(raw, path, number, config)
            if not isinstance(out, Reject):
                ev = out[0]
                yield ev.table_id, ev.device_id, ev.event_id, ev.ts, ev.ts_offset, config.day_of_micros(ev.ts)


def damage_facts(damage: Damage, config: GamingDayConfig) -> dict:
    """The facts of a damaged file (see the module doc), plain JSON data."""
    tables: dict[str, None] = {}
    devices: dict[str, None] = {}
    first = last = None
    events = 0
    for table_id, device_id, event_id, ts, ts_offset, day in _accepted(damage.path, config, damage.last_line, damage.offset):
        events += 1
        tables.setdefault(table_id, None)
        devices.setdefault(device_id, None)
        last = {"device_id": device_id, "event_id": event_id, "ts": ts, "ts_offset": ts_offset,
                "gaming_day": day.isoformat()}
        if first is None:
            first = last
    return {"name": os.path.basename(damage.path.rstrip("/")), "offset": damage.offset, "what": damage.what,
            "bytes_not_read": damage.bytes_not_read, "sha256": damage.sha256 or prefix_sha256(damage.path, damage.offset),
            "events": events, "tables": list(tables), "devices": list(devices), "first": first, "last": last}


def facts_raw(facts: dict) -> str:
    """The damaged-file rejects row's ``raw``: the facts as JSON."""
    return json.dumps({FACTS_KEY: facts}, sort_keys=True, separators=(",", ":"))


def facts_of_reject(row: dict) -> dict | None:
    """The facts a damaged-file rejects row carries (``line`` null, ``raw`` :func:`facts_raw`), or
    None (any other row, or a damaged-file row written before version 2.1: no facts, no finding)."""
    if row.get("line") is not None or not (row.get("raw") or "").startswith("{"):
        return None
    try:
        facts = json.loads(row["raw"]).get(FACTS_KEY)
    except (ValueError, AttributeError):
        return None
    return facts if isinstance(facts, dict) else None


def facts_day(facts: dict) -> str | None:
    """The gaming day a damaged file's rejects row (and finding) is filed under: that of its last
    line read before the damage; None: the run's day."""
    return facts["last"]["gaming_day"] if facts.get("last") else None


def damage_finding(facts: dict, day: _dt.date, config: GamingDayConfig):
    """The ``INPUT_DAMAGED`` finding of ``facts``; ``day``: the run's gaming day (used when no line was read)."""
    return input_damaged(facts, day, config.day_start_micros(day))


def damage_findings(rows: list[dict], day: str, config: GamingDayConfig) -> list:
    """The findings of the damaged-file rows among one gaming day's ``rejects`` rows."""
    found = {}
    for row in rows:
        facts = facts_of_reject(row)
        if facts is not None:
            f = damage_finding(facts, _dt.date.fromisoformat(day), config)
            found[f.finding_id] = f
    return [found[k] for k in sorted(found)]


def incomplete_days(table, day: str) -> list[str]:
    """``day`` once for each ``INPUT_DAMAGED`` row of a ``findings`` table written under it (the
    day's result's ``input_damaged``: the run summary says which days' audit is incomplete)."""
    from pitwatch.rules.input_damage import RULE_ID

    return [day] * table.column("rule_id").to_pylist().count(RULE_ID) if table.num_rows else []
