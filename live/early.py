"""``UNSHUFFLED_PACK`` live at the pack's first card, not at the end of input.

The engine (``rules/packs.py``, ``settle``) decides "no shuffle recorded" only
at ``close()``: a shuffler's report may lag any amount.  Live, the room must
know while the pack is being dealt, so this module raises the engine's own
finding (same rule, evidence, texts and so the same ``finding_id`` as the
batch's row) once the shuffle streams are past the pack's first card:

* the pack has been played (the shoe drew or the terminal recorded a card
  of it) and no shuffle record of it (shuffler ``shuffle_completed``,
  dealer ``shuffle`` or ``reshuffle``) has arrived;
* its evidence is complete: the first card of each card stream of the table
  (the shoe's first draw and the terminal's first card; the terminal's alone
  on a table without a shoe) — the batch's evidence, so the batch's id;
* **the bounded wait**: either every shuffler that has written for the table
  has written an event at least ``wait`` seconds (event time) later than
  the pack's first card — its report of this pack, written before the cards
  were dealt, would have come before that in its own ``seq`` order — or
  ``wait`` seconds of the watcher's clock have passed since the first card
  arrived (``--gap-wait``, default 5 s, the same bound the per-device order
  holds a line for: a shuffler's line delayed longer than that is a feed
  problem, not a reason to keep the alert).  A table with no shuffler known
  (manual shuffles, recorded by the dealer terminal) always waits on the
  clock, so that a shuffler whose file is read later in the same turn is
  read first.

The engine's own finding at ``close()`` has the same ``finding_id`` and is not
sent again.  Where live may differ from the batch (listed in docs/watch.md):
a shuffle record arriving more than the wait after the pack's first card
(a shuffler's line held back that long, a ``reshuffle`` later in a pack
dealt unshuffled) no longer withdraws the alert; a pack whose shoe never
drew (``SHOE_SILENT``) on a table with a shoe waits for the shoe's first
draw, so it is decided at ``close()`` as before.

State (``state()``/``restore()``): the packs waiting and the ids raised.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING

from pitwatch.rules.finding import make_finding
from pitwatch.rules.packs import unshuffled_pack

if TYPE_CHECKING:
    from pitwatch.rules.state import Pack

MAX_RAISED = 4096
MAX_PENDING = 64        # per table: a feed inventing packs keeps only the newest waiting
MAX_SHUFFLERS = 16      # per table: the shufflers that last wrote for it
MAX_DEVICES = 10_000    # shuffler positions kept (the oldest forgotten first)


class EarlyUnshuffled:
    def __init__(self, gaming_day, wait: float = 5.0) -> None:
        self.gaming_day = gaming_day
        self.wait = wait
        self.wait_us = int(wait * 1_000_000)
        self.pending: dict[str, dict[str, list]] = {}   # table -> pack -> [first card ts, arrived (clock)]
        self.shufflers: dict[str, list[str]] = {}       # table -> shuffler devices that wrote for it
        self.latest: dict[str, int] = {}                # shuffler device -> its latest ts
        self.raised: dict[str, None] = {}               # finding ids raised early (insertion order)
        self.done: dict[str, None] = {}                 # "table/pack" raised early (never waited for again)

    def observe(self, ev) -> None:
        """Every accepted event: the shuffle streams' positions."""
        if ev.source == "shuffler" and ev.device_id is not None and ev.ts is not None:
            if ev.ts > self.latest.get(ev.device_id, -1):
                self.latest.pop(ev.device_id, None)
                self.latest[ev.device_id] = ev.ts          # the newest last
                if len(self.latest) > MAX_DEVICES:
                    del self.latest[next(iter(self.latest))]
            if ev.table_id is not None:
                devs = self.shufflers.setdefault(ev.table_id, [])
                if ev.device_id not in devs:
                    devs.append(ev.device_id)
                    if len(devs) > MAX_SHUFFLERS:
                        del devs[0]

    def after(self, driver, ev, now: float | None = None) -> list:
        """After the engine was fed an event of ``driver``'s table: its packs now waiting, and
        the findings due."""
        now = time.monotonic() if now is None else now
        waiting = self.pending.get(driver.table_id)
        if ev.type in ("card_drawn", "card_dealt"):       # only a card makes a pack played
            for pack in driver.replay.open_packs():
                pid = pack.pack_id
                if pack.unshuffled != "open" or pack.shuffles or (waiting is not None and pid in waiting):
                    continue
                refs = [r for r in (pack.first_shoe, pack.first_term) if r is not None]
                if refs and f"{driver.table_id}/{pid}" not in self.done:
                    waiting = self.pending.setdefault(driver.table_id, {})
                    waiting[pid] = [min(r.ts for r in refs), now]
                    if len(waiting) > MAX_PENDING:
                        del waiting[next(iter(waiting))]
        return self.due(driver, now) if waiting else []

    def due(self, driver, now: float | None = None) -> list:
        """The findings of ``driver``'s waiting packs whose wait is over (also called when idle)."""
        waiting = self.pending.get(driver.table_id)
        if not waiting:
            return []
        now = time.monotonic() if now is None else now
        replay = driver.replay
        shoeless = getattr(replay, "shoeless", False)
        devs = self.shufflers.get(driver.table_id, ())
        out = []
        for pid, (first_ts, arrived) in list(waiting.items()):
            pack = replay.pack(pid)
            if pack is None or pack.unshuffled != "open" or pack.shuffles:
                del waiting[pid]                 # shuffled, or decided by the engine
                continue
            if pack.first_term is None or (pack.first_shoe is None and not shoeless):
                continue                         # the batch's evidence is not complete yet
            past = bool(devs) and all(self.latest.get(d, -1) >= first_ts + self.wait_us for d in devs)
            if not (past or now - arrived >= self.wait):
                continue
            del waiting[pid]
            f = self._finding(driver, pack)
            self.raised[f.finding_id] = None
            self.done[f"{driver.table_id}/{pid}"] = None
            if len(self.raised) > MAX_RAISED:
                del self.raised[next(iter(self.raised))]
                del self.done[next(iter(self.done))]
            out.append(f)
        if not waiting:
            self.pending.pop(driver.table_id, None)
        return out

    def _finding(self, driver, pack: Pack):
        """The finding ``pitwatch.rules.packs.settle`` raises at ``close()`` (``TableReplay.emit``: key
        (pack, no round), no dealer but the evidence's), built by the same builder."""
        raw, use = driver.replay.id_use(pack.pack_id)     # the key is the use key, as the engine's
        return make_finding("UNSHUFFLED_PACK", table_id=driver.table_id, game=driver.game,
                            key=[pack.pack_id, None], **unshuffled_pack(pack), gaming_day=self.gaming_day, pack_id=raw, pack_use=use)

    def state(self) -> dict:
        return {"pending": {t: {p: [v[0]] for p, v in w.items()} for t, w in self.pending.items()},
                "shufflers": self.shufflers, "latest": self.latest, "raised": list(self.raised),
                "done": list(self.done)}

    def restore(self, state: dict) -> None:
        now = time.monotonic()           # a restart starts every wait afresh
        self.pending = {t: {p: [v[0], now] for p, v in w.items()} for t, w in state.get("pending", {}).items()}
        self.shufflers = {t: list(v) for t, v in state.get("shufflers", {}).items()}
        self.latest = dict(state.get("latest", {}))
        self.raised = dict.fromkeys(state.get("raised", []))
        self.done = dict.fromkeys(state.get("done", []))
