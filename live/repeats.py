"""``UNSHUFFLED_SEQUENCE`` across packs, live: at the card that completes a 10-card run an earlier
pack holds (``rules/repeated_runs.py``; the nightly batch compares every pack of the night at once).

As each card of a pack is drawn (the shoe's draws; the terminal's cards on a table without a shoe —
the pack's card sequence as the batch reads it, ``pitwatch.rules.packs.sequence``), the 10-card window it
completes is looked up among the windows of the packs seen before.  When it repeats a window of an
earlier pack (earlier: its run began at the earlier ``ts``; ties by ``pack_id``, then ``table_id``)
of the same gaming day, the finding is raised at once, built by the batch's own
:func:`pitwatch.rules.repeated_runs.repeated_runs` over the two packs — so its rule, key, texts, evidence
and ``finding_id`` are the batch's row.  A pack gets at most one such finding.

Where live may differ from the batch (docs/watch.md):

* only the last ``MAX_PACKS`` packs of the floor are remembered (bounded memory: a window is an
  int, a card a reference); a repeat of an older pack of the night, and any repeat after a restart
  of a pack seen before it (the index is not checkpointed: it would make every checkpoint carry
  every card of the night) is left to the nightly batch;
* a pack that already had a within-pack ``UNSHUFFLED_SEQUENCE`` (8 cards in new-deck order) gets no
  second alert (the batch keeps one of the two, the earlier);
* an earlier pack whose lines arrive after the later pack's (another table's stream far behind)
  is not compared with it; a pack of a shoe table whose shoe drew nothing (``SHOE_SILENT``: the
  batch reads its terminal's cards) is not looked at live.
"""
from __future__ import annotations

from collections import OrderedDict

from pitwatch.rules.repeated_runs import CARD_CODE, RUN, PackCards, repeated_runs
from pitwatch.rules.state import PackCard
from pitwatch.rules.uses import use_key

MAX_PACKS = 512


class LiveRepeats:
    def __init__(self, gaming_day, max_packs: int = MAX_PACKS, run: int = RUN) -> None:
        self.gaming_day = gaming_day
        self.max_packs = max_packs
        self.run = run
        self.top = 52 ** (run - 1)
        self.first: dict[int, tuple] = {}        # window key -> (order, (table_id, pack_id))
        self.packs: OrderedDict[tuple, dict] = OrderedDict()

    def after(self, driver, ev) -> list:
        """After the engine was fed ``ev``: the cross-pack finding the card it added completes, if any."""
        if ev.type == "card_drawn" and ev.source == "shoe":
            if getattr(driver.replay, "shoeless", False):
                return []
            pack = driver.replay.pack(driver.replay.current_key("shoe", ev.pack_id))
            d = pack.last_draw() if pack is not None else None
            if d is None or d.event_id != ev.event_id:
                return []
            card = (d.index, d.card, d.event_id, d.ts, d.device_id, d.ts_offset)
        elif ev.type == "card_dealt" and ev.source == "dealer" and getattr(driver.replay, "shoeless", False):
            pack = next((p for p in driver.replay.open_packs()
                         if (tc := p.last_term_card()) is not None and tc.event_id == ev.event_id), None)
            if pack is None:
                return []
            c = pack.last_term_card()
            card = (len(pack.alignment.term), c.card, c.event_id, c.ts, c.device_id, c.ts_offset)
        else:
            return []
        if pack.run_found and not (pack.shoe_passed and pack.term_passed) and ev.source == "shoe":
            within = True          # the shoe showed 8 cards in new-deck order: that pack is alerted already
        else:
            within = False
        return self._add(driver.table_id, driver.game, pack.pack_id, card, within,
                         driver.replay.id_use(pack.pack_id)[1])

    def _add(self, table_id, game, pack_id, card, within: bool, use: int = 1) -> list:
        """``pack_id``: the engine's use key of the pack (``use``: its use number)."""
        k = (table_id, pack_id)
        rec = self.packs.get(k)
        if rec is None:
            rec = self.packs[k] = {"cards": [], "keys": [], "game": game, "hit": False, "key": 0, "length": 0,
                                   "use": use,
                                   "day": self.gaming_day(card[3]) if card[3] is not None else None}
            while len(self.packs) > self.max_packs:
                self._forget(*self.packs.popitem(last=False))
        cards = rec["cards"]
        if cards and card[0] <= cards[-1][0]:
            return []                                   # not after the last one: the engine ignored it too
        code = CARD_CODE.get(card[1])
        if code is None or not cards or card[0] != cards[-1][0] + 1:
            rec["key"] = rec["length"] = 0              # an unreadable card or a lost index breaks a run
        cards.append(card)
        if code is None:
            return []
        # the window's key, rolled (pitwatch.rules.repeated_runs.run_keys: base-52 digits of its cards)
        key = rec["key"]
        rec["key"] = key = (key % self.top) * 52 + code if rec["length"] >= self.run else key * 52 + code
        rec["length"] += 1
        if rec["length"] < self.run:
            return []
        w = cards[-self.run:]
        order = (w[0][3], pack_id, table_id)
        best = self.first.get(key)
        if best is None or order < best[0]:
            self.first[key] = (order, k)
            rec["keys"].append(key)
        if best is None or best[1] == k or not best[0] < order or rec["hit"] or within:
            return []
        earlier = self.packs.get(best[1])
        if earlier is None or earlier["day"] != rec["day"]:
            return []
        rec["hit"] = True
        found = repeated_runs([PackCards(best[1][0], best[1][1], earlier["game"], None,
                                         tuple(PackCard(*c) for c in earlier["cards"]), earlier.get("use", 1)),
                               PackCards(table_id, pack_id, game, None, tuple(PackCard(*c) for c in cards), use)],
                              self.gaming_day, self.run)
        return [f for f in found if f.table_id == table_id and use_key(f.pack_id, f.pack_use or 1) == pack_id]

    def _forget(self, k, rec) -> None:
        for key in rec["keys"]:
            if self.first.get(key, (None, None))[1] == k:
                del self.first[key]
