"""Writes what the devices record: one JSONL file per device per gaming day.

``OUT/<gaming day>/<device_id>.jsonl``, lines in ``seq`` order.  Lines are
built by string formatting (no per-event ``dict`` or ``json.dumps``); the
payload fragments come pre-formatted from the tables.  Field order follows
the user's example floor (``tests/data/clean-floor-2h.jsonl.gz``): event_id,
ts, source, type, table_id, device_id, seq, dealer_id, then the payload.

An event is ``(t, port, head, body)``: ``t`` the true time in ms, ``port`` the
device as seen from the table, ``head`` the envelope between ``ts`` and
``seq`` (``Port.typed(type)``), ``body`` the JSON fragment after ``seq``.
A ``head`` of ``None`` is a lost-events marker (the SEQ_GAP fault): the
device's ``seq`` jumps by ``body``.
"""
from __future__ import annotations

import os
from pathlib import Path

from pitwatch.simulator.clock import GamingDays, minute_prefix

FLUSH_LINES = 4096
# "SS.mmm" for every millisecond of a minute
SEC_MS = [f"{i // 1000:02d}.{i % 1000:03d}" for i in range(60_000)]


class StreamWriter:
    def __init__(self, out_dir: Path, days: GamingDays):
        self.out = Path(out_dir)
        self.days = days
        self.files: list[str] = []
        self.events = 0

    def write(self, events) -> None:
        n = 0
        sec_ms = SEC_MS
        for t, port, head, body in events:
            dev = port.dev
            if head is None:
                dev.seq += body
                continue
            seq = dev.seq
            dev.seq = seq + 1
            utc = t + dev.skew
            if utc >= dev.day_end:
                self._roll(dev, utc)
            lm = utc + dev.tzms
            mi = lm // 60000
            if mi != dev.cur_min:
                dev.cur_min = mi
                dev.min_prefix = minute_prefix(mi)
            buf = dev.buf
            buf.append(f'{{"event_id":"{dev.eid}{seq:07d}","ts":"{dev.min_prefix}{sec_ms[lm - mi * 60000]}'
                       f'{head}{seq},{body}}}\n')
            n += 1
            if len(buf) >= FLUSH_LINES:
                dev.fh.write("".join(buf))
                buf.clear()
        self.events += n

    def _roll(self, dev, utc: int) -> None:
        if dev.fh is not None:
            self._flush(dev)
            dev.fh.close()
        day, end = self.days.day(utc)
        folder = self.out / day
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{dev.device_id}.jsonl"
        dev.fh = open(path, "w", encoding="utf-8", newline="\n", buffering=1 << 20)
        dev.day = day
        dev.day_end = end
        self.files.append(os.fspath(path))

    @staticmethod
    def _flush(dev) -> None:
        if dev.buf:
            dev.fh.write("".join(dev.buf))
            dev.buf.clear()

    def close(self, devices) -> None:
        for dev in devices:
            if dev.fh is not None:
                self._flush(dev)
                dev.fh.close()
                dev.fh = None
