"""The devices of the floor: dealer terminals, card-reading shoes, shufflers.

A :class:`Device` is what writes one stream: its serial, its ``seq`` counter,
its clock skew and time zone, and (for the writer) its open file.  A
:class:`Port` is a device as one table sees it: shared shufflers (a back-room
shuffler serving every baccarat table, a deck machine serving two stud
tables) have one Port per table but a single ``seq`` across all of them.

Naming follows the user's example floor (``tests/data/clean-floor-2h.jsonl.gz``): terminals ``DT-BAC01``
(event ids ``dt-bac01-0037059``), shoes ``SHOE-4000`` (``so-4000-…``),
shufflers ``SHF-100`` (``sh-100-…``), stud deck machines ``DM-5103``
(``dm-5103-…``).
"""
from __future__ import annotations

import random

from pitwatch.simulator.clock import SECOND, tz_suffix


class Device:
    __slots__ = ("device_id", "source", "eid", "skew", "tzms", "tzs", "seq", "shared",
                 "cur_min", "min_prefix", "day_end", "day", "fh", "buf", "events", "tables")

    def __init__(self, device_id: str, source: str, eid_prefix: str, skew_ms: int,
                 tz_minutes: int, first_seq: int, shared: bool = False):
        self.device_id = device_id
        self.source = source
        self.eid = eid_prefix + "-"
        self.skew = skew_ms
        self.tzms = tz_minutes * 60 * SECOND
        self.tzs = tz_suffix(tz_minutes)
        self.seq = first_seq
        self.shared = shared
        self.cur_min = -1
        self.min_prefix = ""
        self.day_end = -1
        self.day = None
        self.fh = None
        self.buf: list[str] = []
        self.events = 0
        self.tables: set[str] = set()


class Port:
    """A device as seen from one table: the envelope fragments naming both.

    ``heads[type]`` is everything from the end of ``ts`` to ``"seq":``, built
    once per event type, so the writer joins a handful of ready strings.
    """

    __slots__ = ("dev", "head", "table_id", "heads")

    def __init__(self, dev: Device, table_id: str):
        self.dev = dev
        self.table_id = table_id
        self.head = f'"table_id":"{table_id}","device_id":"{dev.device_id}","seq":'
        self.heads: dict[str, str] = {}
        dev.tables.add(table_id)

    def typed(self, typ: str) -> str:
        h = self.heads.get(typ)
        if h is None:
            h = self.heads[typ] = f'{self.dev.tzs}","source":"{self.dev.source}","type":"{typ}",{self.head}'
        return h


class DeviceFactory:
    """Hands out unique serials, skews and starting sequence numbers, deterministically."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.used: set[int] = set()
        self.devices: list[Device] = []

    def _serial(self, lo: int, hi: int) -> int:
        while True:
            n = self.rng.randint(lo, hi)
            if n not in self.used:
                self.used.add(n)
                return n

    def _make(self, device_id, source, eid, tz=0, shared=False) -> Device:
        skew = int((self.rng.random() * 2 - 1) * 1000)  # within ±1 s: any two devices ≤ 2 s apart
        dev = Device(device_id, source, eid, skew, tz, self.rng.randint(1_000, 90_000), shared)
        self.devices.append(dev)
        return dev

    def terminal(self, table_code: str, tz: int) -> Device:
        return self._make(f"DT-{table_code}", "dealer", f"dt-{table_code.lower()}", tz)

    def shoe(self) -> Device:
        n = self._serial(1000, 9999)
        return self._make(f"SHOE-{n}", "shoe", f"so-{n}")

    def shuffler(self, shared: bool = False) -> Device:
        n = self._serial(100, 999)
        return self._make(f"SHF-{n}", "shuffler", f"sh-{n}", shared=shared)

    def deck_machine(self, shared: bool = False) -> Device:
        n = self._serial(5100, 5999)
        return self._make(f"DM-{n}", "shuffler", f"dm-{n}", shared=shared)
