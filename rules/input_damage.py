"""``INPUT_DAMAGED`` (rules.md "Feed health", version 2.1): an input file could not be read to its end.

major; every game; key: the file (its name without folders + the SHA-256 of the bytes read).

A truncated or corrupt compressed file, an unreadable Parquet file or row group: the lines
before the damage are kept (``pitwatch.inputs.stored``, ``pitwatch.inputs.parquet``), and this
finding says the day's audit is incomplete, so ``--fail-on major`` pages for it.  It is no table
check: it is about a file, not a table's events, so it is built here from the file's
*damage facts* (:func:`pitwatch.inputs.damage.damage_facts`, plain JSON data) by the one
function :func:`input_damaged`, in the batch (from the day's damaged-file ``rejects`` row,
which carries the facts) and in the watcher (``pitwatch.live.service``), so both give the same row with
the same ``finding_id``.

* **The bytes read** (the key's SHA-256): the file's *stored* bytes (compressed, for a
  ``.gz``) from its start up to the damage's byte offset, the bytes a reader took in before it
  stopped.  The same file bytes give the same digest in batch and live, wherever the file lies.
* ``finding_id``: :func:`pitwatch.rules.finding.finding_id` of the rule, no table, the key
  ``[name, sha256]`` and no evidence: the file alone decides it (not where it lies, not which
  day's replay wrote it).
* ``table_id`` / ``device_id``: the first table and the first device whose accepted lines the
  file held before the damage (file order), null when it held none; ``actual`` names all of
  them, the byte offset, what is wrong and how many bytes after it were not read.
* ``ts`` / ``gaming_day``: those of the last accepted line read before the damage (by line
  number, not the greatest ``ts``); with none, the run's day (the batch: the gaming day its
  damaged-file ``rejects`` row is filed under; the watcher: the gaming day of the moment it
  found the damage) and ``ts`` the start of that day (its cutoff).  ``evidence``: the first and
  the last accepted line's event (``evidence_from``: the first one's ``ts``), none when none.

No I/O: the facts come from the reader (:mod:`pitwatch.inputs.damage`).
"""
from __future__ import annotations

import datetime as _dt
from typing import Any

from pitwatch.rules.catalog import rule
from pitwatch.rules.finding import Finding, finding_id
from pitwatch.wording import plural

RULE_ID = "INPUT_DAMAGED"
FACTS_KEY = "input_damaged"     # the damaged-file rejects row's ``raw``: {FACTS_KEY: facts} as JSON


def damage_key(facts: dict[str, Any]) -> list[str]:
    """The finding's key: the file's name without folders and the SHA-256 of the bytes read."""
    return [facts["name"], facts["sha256"]]


def _names(items: list[str], word: str) -> str:
    if not items:
        return f"no {word}"
    shown = ", ".join(items[:10]) + (f" and {len(items) - 10} more" if len(items) > 10 else "")
    return f"{plural(len(items), word)} {shown}"


def input_damaged(facts: dict[str, Any], day: _dt.date, day_start_micros: int) -> Finding:
    """The ``INPUT_DAMAGED`` finding of a damaged file's facts (see the module doc); ``day`` and
    ``day_start_micros``: the run's gaming day and its start, used only when no line was read."""
    r = rule(RULE_ID)
    first, last = facts.get("first"), facts.get("last")
    tables, devices = list(facts.get("tables") or ()), list(facts.get("devices") or ())
    read = [e for e in (first, last) if e]
    pairs = tuple(sorted({(e["device_id"], e["event_id"]) for e in read}, key=lambda p: (p[0] or "", p[1])))
    gaming_day = _dt.date.fromisoformat(last["gaming_day"]) if last else day
    events = facts.get("events", 0)
    actual = (f"{facts['name']} cannot be read past byte {facts['offset']:,} ({facts['what']}); "
              f"{plural(events, 'event')} read before it, from {_names(devices, 'device')} "
              f"at {_names(tables, 'table')}; {plural(facts['bytes_not_read'], 'byte')} after it not read; "
              f"SHA-256 of the bytes read {facts['sha256']}")
    return Finding(
        finding_id=finding_id(RULE_ID, None, damage_key(facts), ()), rule_id=RULE_ID, title=r.title,
        severity=r.severity, game=None, table_id=tables[0] if tables else None, pack_id=None, round_id=None,
        seat=None, spot=None, device_id=devices[0] if devices else None, dealer_id=None,
        ts=last["ts"] if last else day_start_micros, gaming_day=gaming_day,
        expected="every input file read to its end: the day's audit complete",
        actual=actual, event_ids=tuple(sorted(e for _d, e in pairs)), source=r.source_for(None), evidence=pairs,
        ts_offset=last.get("ts_offset") if last else None, evidence_from=first["ts"] if first else None,
    )
