"""The device registry (``devices.csv``): which device may write for which table, and when.

rules.md "Feed health (version 2)".  One row per device and table (a device
moved between tables has one row per table, with its days)::

    device_id,source,table_id,from_day,to_day
    DT-BAC01,dealer,BAC-01,2026-11-01,
    SHOE-4411,shoe,BAC-01,2026-11-01,2026-11-30
    SHF-100,shuffler,*,,

* ``source``: ``dealer``, ``shoe`` or ``shuffler``;
* ``table_id``: the table, or ``*`` for a back-room shuffler serving any
  table (only a ``shuffler`` may have ``*``: a terminal or a shoe stands at
  one table, and a ``*`` there would let it write for every table unseen);
* ``from_day``, ``to_day``: gaming days ``YYYY-MM-DD``, inclusive; empty =
  open (since ever / until further notice).

A header line naming exactly those five columns (any order) comes first;
blank lines are skipped; a UTF-8 byte-order mark is accepted.  Anything else
— another column, a missing value, an unknown source, a bad or reversed
date, bytes that are not UTF-8 — is a :class:`RegistryError` naming the file
and line (the command exits 2: the casino fixes its registry, pitwatch does
not guess at it).

Where the registry comes from is decided in one place,
:func:`registry_path`: ``pitwatch run --devices FILE``; else, in the nightly
form, ``INBOX/devices.csv`` when it exists; else the one the lake keeps
(:mod:`pitwatch.lake.registry`, which also keeps a given one); else none
(then ``UNKNOWN_DEVICE`` is never raised, and ``SHOE_SILENT`` looks at the
shoes that wrote).  A configuration key, when there is one, goes there too.

The engine (``rules/``, no I/O) gets each table's rows as
:attr:`pitwatch.rules.reference.TableReference.devices` (:meth:`DeviceRegistry.for_table`).
"""
from __future__ import annotations

import csv
import dataclasses
import datetime as _dt
import hashlib
import io
import os

from pitwatch.inputs.files import InputError, read_operator_csv
from pitwatch.inputs.stored import remote_object_exists as exists
from pitwatch.schemas import contract as C

COLUMNS = ("device_id", "source", "table_id", "from_day", "to_day")
SOURCES = tuple(sorted(C.SOURCES))       # the contract's, in the order the messages name them
ANY_TABLE = "*"
INBOX_FILE = "devices.csv"
MAX_BYTES = 16 << 20        # a registry of a floor is kilobytes; a bigger file is not one


class RegistryError(InputError):
    """A malformed registry: the message names the file and line."""


@dataclasses.dataclass(frozen=True)
class DeviceRegistry:
    path: str
    sha256: str
    rows: tuple[tuple, ...]      # (device_id, source, table_id, from_day, to_day): pitwatch.rules.feed_health.DeviceRow
    data: bytes = dataclasses.field(default=b"", repr=False, compare=False)   # the file's bytes (kept in the lake)

    def for_table(self, table_id: str) -> tuple[tuple, ...]:
        """The rows that concern ``table_id``: its own and the ``*`` rows (what the engine is given)."""
        return tuple(r for r in self.rows if r[2] in (table_id, ANY_TABLE))

    def describe(self) -> dict:
        """What the run record keeps of it (so a rerun can tell it used the same registry)."""
        return {"path": self.path, "sha256": self.sha256, "rows": len(self.rows)}


def registry_path(devices: str | None = None, inbox: str | None = None) -> str | None:
    """The registry a run uses: ``--devices FILE``, else the nightly ``INBOX/devices.csv`` if present, else None."""
    if devices:
        return devices
    if inbox:
        candidate = os.path.join(inbox, INBOX_FILE)
        if exists(candidate) if "://" in inbox else os.path.isfile(candidate):
            return candidate
    return None


def load_registry(path: str | None) -> DeviceRegistry | None:
    """Read and check ``devices.csv`` (None for no path); RegistryError names what is wrong and where."""
    if path is None:
        return None
    data = read_operator_csv(path, MAX_BYTES, "device registry", RegistryError)   # never blocks (issue 37)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise RegistryError(f"device registry {path}, line {line}: not UTF-8 text") from None
    return DeviceRegistry(path, hashlib.sha256(data).hexdigest(), parse_rows(text, path), data)


def parse_rows(text: str, path: str = "devices.csv") -> tuple[tuple, ...]:
    if "\x00" in text:
        raise RegistryError(f"device registry {path}: holds NUL bytes, not a CSV file")
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    header = None
    rows = []
    try:
        for fields in reader:
            line = reader.line_num
            if not any(f.strip() for f in fields):
                continue
            if header is None:
                header = [f.strip() for f in fields]
                if sorted(header) != sorted(COLUMNS) or len(header) != len(COLUMNS):
                    raise RegistryError(f"device registry {path}, line {line}: the header must name the columns "
                                        f"{','.join(COLUMNS)}; got {','.join(header)!r}")
                continue
            if len(fields) != len(COLUMNS):
                raise RegistryError(f"device registry {path}, line {line}: {len(fields)} values, "
                                    f"expected {len(COLUMNS)} ({','.join(header)})")
            rows.append(_row(dict(zip(header, (f.strip() for f in fields))), path, line))
    except csv.Error as exc:
        raise RegistryError(f"device registry {path}, line {reader.line_num}: not valid CSV ({exc})") from None
    if header is None:
        raise RegistryError(f"device registry {path}: empty (expected a header {','.join(COLUMNS)})")
    return tuple(sorted(set(rows), key=lambda r: (r[0], r[1], r[2], r[3] or _dt.date.min, r[4] or _dt.date.max)))


def _row(values: dict, path: str, line: int) -> tuple:
    where = f"device registry {path}, line {line}"
    for name in ("device_id", "source", "table_id"):
        if not values[name]:
            raise RegistryError(f"{where}: {name} is empty")
        if len(values[name]) > 128:
            raise RegistryError(f"{where}: {name} is longer than 128 characters")
    if values["source"] not in SOURCES:
        raise RegistryError(f"{where}: source {values['source']!r} is not one of {', '.join(SOURCES)}")
    if values["table_id"] == ANY_TABLE and values["source"] != "shuffler":
        raise RegistryError(f"{where}: table_id * (any table) is for a back-room shuffler only, "
                            f"not a {values['source']}")
    days: list[_dt.date | None] = []
    for name in ("from_day", "to_day"):
        text = values[name]
        if not text:
            days.append(None)
            continue
        try:
            if len(text) != 10:
                raise ValueError
            days.append(_dt.date.fromisoformat(text))
        except ValueError:
            raise RegistryError(f"{where}: {name} {text!r} is not a gaming day YYYY-MM-DD (or empty)") from None
    if days[0] is not None and days[1] is not None and days[1] < days[0]:
        raise RegistryError(f"{where}: to_day {days[1]} is before from_day {days[0]}")
    return (values["device_id"], values["source"], values["table_id"], days[0], days[1])


def write_registry(path, rows) -> None:
    """Write rows ``(device_id, source, table_id, from_day, to_day)`` (days: date, ISO text or None) as devices.csv."""
    with open(path, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(COLUMNS)
        for device_id, source, table_id, first, last in rows:
            w.writerow([device_id, source, table_id, "" if first is None else str(first),
                        "" if last is None else str(last)])
