"""The watcher's status line on stderr: at most one every ``--status-every`` seconds (10 by default).

One line says where the watcher is::

    status: caught up: 12,345 lines, 7 alerts, lag 0 s; files: 12 (1 new, 0 damaged, 0 gone); webhook:https://…: ok
    status: reading: 2,000 lines, 1 alert, lag 35 s (3,145,728 B unread), 14 held for a gap; files: 3 (…); …

* ``caught up`` when the last look at every source found nothing new and no
  line is held for a device's gap (``--gap-wait``), ``reading`` otherwise,
  ``input lost`` while an input cannot be read (``SOURCE_LOST``,
  :class:`pitwatch.live.silence.SourceWatch`), which is then named at the end
  (``lost: redis://pit-bus:6379/0 for 12 s (ConnectionError: …)``);
* lines read and alerts raised since the state folder was made (the
  checkpoint's counters);
* **lag behind the newest input**: ``0 s`` when nothing is waiting to be read;
  else how long the oldest input not yet read has waited — for files, since
  the last write of the longest-unchanged file with bytes not read (a lower
  bound), for Redis since the first unread entry's id (its time) — and how
  much waits;
* per source: files (how many, new since the start, damaged gzip, gone) or
  Redis (streams, new, and the error of its last look if it failed);
* per remote sink (webhook, syslog): ``ok``, what is queued, or how long it
  has been failing and why.

Quiet: a line is written only when the interval is over **and** something it
shows changed (a count, the state, a source's or sink's health) — so an idle
watcher is silent — except one line every :data:`HEARTBEAT` intervals,
to show it is alive.  New files are announced once each by the sources
(:mod:`pitwatch.live.sources`), not here.
"""
from __future__ import annotations

import time

from pitwatch.wording import plural

HEARTBEAT = 60   # intervals: an unchanged status is written again after this many (10 min by default)


class StatusLine:
    def __init__(self, every: float) -> None:
        self.every = every
        self._next = 0.0
        self._last_key = None
        self._last_at = float("-inf")

    def due(self, now: float) -> bool:
        return now >= self._next

    def line(self, now: float, counts: dict, caught_up: bool, held: int, sources: list[dict],
             sinks: list[tuple[str, str, tuple]], lost: list[tuple[str, float, str]] = ()) -> str | None:
        """The line to write now, or None (unchanged and no heartbeat due); call only when :meth:`due`.

        ``sources``: each source's ``status()``; ``sinks``: ``(name, health text, what counts as a
        change)`` of each remote sink (:meth:`pitwatch.live.outbox.Outbox.health`); ``lost``: ``(name,
        seconds, why)`` of each input lost (:meth:`pitwatch.live.silence.SourceWatch.status`)."""
        self._next = now + self.every
        lag, waiting = 0, []
        wall = time.time()
        for s in sources:
            if s.get("unread"):
                waiting.append(f"{s['unread']:,}{'+' if s['unread_unit'] == 'entries' and s['unread'] >= 1000 else ''}"
                               f" {s['unread_unit']} unread")
                if s.get("since") is not None:
                    lag = max(lag, wall - s["since"])
        key = (counts["lines"], counts["findings"], counts.get("notices", 0), caught_up, held,
               tuple(_health(s) for s in sources), tuple(k for _n, _h, k in sinks), bool(waiting),
               tuple(name for name, _s, _w in lost))
        if key == self._last_key and now - self._last_at < HEARTBEAT * self.every:
            return None
        self._last_key, self._last_at = key, now
        state = "input lost" if lost else "caught up" if caught_up else "reading"
        parts = [f"status: {state}: {plural(counts['lines'], 'line')}, {plural(counts['findings'] + counts.get('notices', 0), 'alert')}",
                 f"lag {lag:.0f} s" + (f" ({', '.join(waiting)})" if waiting else "")]
        if held:
            parts.append(f"{held:,} held for a gap")
        text = ", ".join(parts)
        for s in sources:
            text += f"; {s['what']}: {_health(s)}"
        for name, health, _key in sinks:
            text += f"; {name}: {health}"
        for name, seconds, why in lost:
            text += f"; lost: {name} for {seconds:.0f} s ({why})"
        return text


def _health(s: dict) -> str:
    if "files" in s:
        return f"{s['files']:,} ({s['new']:,} new, {s['damaged']:,} damaged, {s['gone']:,} gone)"
    text = f"{plural(s['streams'], 'stream')} ({s['new']:,} new)"
    return text + (f", failing: {s['error']}" if s.get("error") else "")
