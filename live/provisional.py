"""The provisional card alert: ``CARD_DISAGREEMENT`` the moment the shoe and the terminal disagree.

The alignment (:mod:`pitwatch.rules.alignment`) decides ``SHOE_CARD_MISMATCH`` and
``UNACCOUNTED_CARD`` only once both streams hold seven more cards after a
disagreement (or are done with the pack): right for the finding, far too
late for the surveillance room, who can act only while the round is on the
felt.  This module watches each table's alignments after every event the
engine is fed and raises, at once, a **provisional alert** (critical, live
only, never a finding, never in the lake's ``findings``) when:

* **a different card at the same place**: the aligner stands at a place where
  the shoe's draw and the terminal's card are both read and differ
  (:func:`pitwatch.rules.alignment.disagreement`);
* **a shoe draw the terminal lacks**: every terminal card so far is placed
  and the shoe has drawn a card the terminal has not recorded, and the
  terminal ends the round (``round_ended``) later than the draw — a card is
  recorded as it is dealt, before the round is settled; for a draw made
  between rounds (stamped after the terminal's ``round_ended`` and before
  its next event), the terminal writes something other than a card at least
  ``--skew`` later than the draw, or ends the round it was drawn into;
* **a terminal card the shoe lacks**: every shoe draw so far is placed and
  the terminal recorded a card the shoe did not draw when the terminal ends
  the round (``round_ended``).  Before that, a shoe that goes on drawing
  shows it as a different card at the place (the first case).  Not "the shoe
  wrote anything later than that card": a shoe may report each card a moment
  after the terminal recorded it (the simulator's combate shoe does, up to
  two cards behind), and its draw of the card before would read as having
  passed this one — found by ``bench/watch.py``: ~1,000 false alerts an hour
  on six clean combate tables, each cleared a line later.  A shoe stream
  running more than a round behind the terminal's can still raise this one
  at the round's end: the alignment then clears it.

**Only where a switch is possible** (issue 41): no alert while the stream that
lacks the card may still deliver it, never past the round's end.

* An open ``seq`` hole needs nothing here: the per-device order
  (:mod:`pitwatch.live.order`) holds a device's lines after a hole until it is
  filled or ``--gap-wait`` runs out, so the lacking stream stands still in the
  engine and cannot show a disagreement; what becomes due meanwhile is due
  at the round's end (a terminal card the shoe lacks at ``round_ended``), and
  is raised there, the hole still open, as the issue asks.
* Clock skew (``--skew``, :data:`SKEW`): a shoe clock behind the terminal's
  stamps the next round's first draw before the terminal's ``round_started``
  (taken first, in the floor's time order), and the terminal records the
  card a moment later; under the old "the terminal's next event" rule, a
  critical alert and its clearing every round.  So a draw made between
  rounds waits until the terminal is ``--skew`` past it (the ``ts`` of the
  terminal's event, the devices' own clocks) or ends the round.
* A different card at the same place has both cards in hand: raised at once.
* Not covered, by the rule "at the round's end the alert is raised": a shoe
  whose line of the round's last card comes after the terminal's
  ``round_ended`` (its clock ahead by more than the settling took, or its
  line delivered late) still raises a terminal-card-lacks alert there,
  cleared when the line comes.

Only the first undecided place of a pack is looked at (the aligner's own
frontier): a second disagreement within the seven cards after a first one is
raised once the first is decided.  Only packs both streams cover (a pack
without any shoe draw is ``SHOE_SILENT``'s, decided at its end).

**What follows.** When the alignment decides the place (every card of the
provisional alert placed): if any of them is a mismatch or an unaccounted
card, the final ``SHOE_CARD_MISMATCH`` / ``UNACCOUNTED_CARD`` that names its
events carries the provisional alert's id in ``provisional_id`` (the
finding's other columns are the batch's); if every one of its cards was
matched (an offset realigned, a late stream caught up), a
``CARD_DISAGREEMENT_CLEARED`` alert (info, live only) names it with the
reason.  A final finding whose disagreement was never seen before it was
decided (both streams passed the pack at once) gets its provisional alert
raised just before it, in the same turn.  The engine's decisions are never
touched: this module only reads the alignment state.

State (``state()``/``restore()``, plain data in the checkpoint): the open
provisional alerts, per table, and per table the ``ts`` of the terminal's last
``round_ended`` and of its first event after it (a checkpoint of an older
version has no ``resumed``: read as "no event since").
"""
from __future__ import annotations

import dataclasses
import hashlib
from typing import TYPE_CHECKING

import msgspec

from pitwatch.live.sinks import COLUMNS, DisplayZones, rfc3339
from pitwatch.rules import alignment
from pitwatch.rules.packs import SHOE_ONLY_EXPECTED, TERM_ONLY_EXPECTED, same_card_expected
from pitwatch.rules.state import Alignment, Pack, Ref
from pitwatch.rules.uses import split_key, use_key

if TYPE_CHECKING:
    from pitwatch.rules.table import TableReplay

RULE_ID = "CARD_DISAGREEMENT"
CLEARED_ID = "CARD_DISAGREEMENT_CLEARED"
TITLE = "The shoe and the dealer terminal disagree about a card (provisional)"
CLEARED_TITLE = "A provisional card disagreement was explained by the alignment"
FINAL_RULES = ("SHOE_CARD_MISMATCH", "UNACCOUNTED_CARD")
SKEW = 2.0           # seconds: the default --skew, the clock difference allowed between a table's devices
MAX_OPEN = 256       # per table: a feed that disagrees everywhere keeps only the newest open alerts
MASK = "??"


def _ids(p: dict) -> dict:
    """The alert's pack and round columns as a finding's: the ids the devices wrote and their use
    numbers (``p`` holds the engine's use keys, ids used again: events.md 2.1)."""
    pack_id, pack_use = split_key(p["pack_id"])
    round_id, round_use = split_key(p["round_id"])
    return {"pack_id": pack_id, "round_id": round_id, "pack_use": pack_use, "round_use": round_use}


@dataclasses.dataclass(frozen=True)
class _Texts:
    """What :meth:`pitwatch.live.redact.DealtGuard.apply` looks at (it masks like every alert)."""
    table_id: str
    pack_id: str
    event_ids: tuple
    expected: str
    actual: str


def _id(*parts) -> str:
    raw = "\x00".join("" if p is None else str(p) for p in parts)
    return "live-" + hashlib.blake2b(raw.encode(), digest_size=12).hexdigest()


class CardWatch:
    def __init__(self, guard=None, gaming_day=None, skew: float = SKEW) -> None:
        self.guard = guard
        self.gaming_day = gaming_day
        self.skew_us = int(round(skew * 1_000_000))   # --skew: the devices' clocks may differ by this much
        self.open: dict[str, list[dict]] = {}   # table_id -> open provisional alerts (plain data, refs as Ref)
        self.counts = {"raised": 0, "confirmed": 0, "cleared": 0}
        self.ended: dict[str, int] = {}          # table_id -> ts of the terminal's last round_ended
        self.resumed: dict[str, int] = {}        # table_id -> ts of the terminal's first event after that round_ended

    # --- around one feed -------------------------------------------------------
    def before(self, table_id: str, replay: TableReplay) -> dict:
        """The undecided place of every pack with an open alert, before the engine is fed."""
        snap = {}
        for p in self.open.get(table_id, ()):
            pack = replay.pack(p["pack_id"])
            if pack is not None and p["pack_id"] not in snap:
                al = pack.alignment
                snap[p["pack_id"]] = (al, al.shoe_at, al.term_at)
        return snap

    def after(self, table_id: str, game, replay: TableReplay, ev, findings: list, snap: dict):
        """After the engine was fed ``ev`` (None: closed): ``(raised, cleared, links)`` — the
        provisional alerts raised now, the clearing alerts, and ``finding_id -> provisional id``."""
        raised, cleared, links = [], [], {}
        finals = [f for f in findings if f.rule_id in FINAL_RULES]
        packs = self._packs(replay) if (finals or self.open.get(table_id)) else {}
        self._resolve(table_id, packs, snap, finals, links, cleared)
        for f in finals:                        # decided before it was ever seen: raised now, first
            if f.finding_id not in links:
                p = self._from_finding(table_id, game, packs.get(use_key(f.pack_id, f.pack_use or 1)), f)
                if p is not None:
                    raised.append(self._alert(p))
                    links[f.finding_id] = p["id"]
                    self.counts["confirmed"] += 1
        if ev is not None:
            between = self._between(table_id) if ev.source == "dealer" else None
            if ev.source == "dealer" and ev.ts is not None:
                if ev.type == "round_ended":
                    self.ended[table_id] = ev.ts
                    self.resumed.pop(table_id, None)
                elif table_id in self.ended:
                    self.resumed.setdefault(table_id, ev.ts)
            for pack in self._touched(replay, ev, between):
                p = self._seen(table_id, game, pack, ev, between)
                if p is not None:
                    raised.append(self._alert(p))
                    opened = self.open.setdefault(table_id, [])
                    opened.append(p)
                    if len(opened) > MAX_OPEN:
                        del opened[0]
        self.counts["raised"] += len(raised)
        return raised, cleared, links

    def _between(self, table_id: str) -> tuple[int, int | None] | None:
        """``(ended, resumed)``: the ts of the table's last ``round_ended`` and of the terminal's first
        event after it (None: none yet) — a shoe draw stamped between the two was made between rounds."""
        ended = self.ended.get(table_id)
        return None if ended is None else (ended, self.resumed.get(table_id))

    @staticmethod
    def _touched(replay: TableReplay, ev, between) -> list[Pack]:
        """The packs whose undecided place ``ev`` can show a disagreement at: every open pack for a
        shoe event, a round's end or the terminal's events after one; a terminal card's own pack."""
        if ev.source == "shoe" or ev.type == "round_ended" or (between is not None and ev.type != "card_dealt"):
            return replay.open_packs()
        if ev.type == "card_dealt":
            pack = replay.pack(ev.pack_id) if ev.pack_id is not None else None
            return [pack] if pack is not None else replay.open_packs()
        return []

    @staticmethod
    def _packs(replay: TableReplay) -> dict[str, Pack]:
        """Every pack an alert may name: the finished ones not yet drained, then the open ones."""
        out = {p.pack_id: p for p in replay.finished_packs()}
        out.update((p.pack_id, p) for p in replay.open_packs())
        return out

    # --- deciding the open ones --------------------------------------------------
    def _resolve(self, table_id, packs, snap, finals, links, cleared) -> None:
        opened = self.open.get(table_id)
        if not opened:
            return
        outcomes = {}
        for pid, (al, i0, j0) in snap.items():
            outcomes[pid] = (al, alignment.decided_since(al, i0, j0))
        still = []
        for p in opened:
            pack = packs.get(p["pack_id"])
            got = outcomes.get(p["pack_id"])
            if pack is None or got is None:
                still.append(p)
                continue
            al, outs = got
            for kind, si, tj in outs:
                hit = ((p["si"] is not None and si == p["si"] and kind != "term_only")
                       or (p["tj"] is not None and tj == p["tj"] and kind != "shoe_only"))
                if hit and kind != "match":
                    p["bad"] = True
                elif hit:
                    p["matched"].append([kind, si, tj])
            if not ((p["si"] is None or al.shoe_at > p["si"]) and (p["tj"] is None or al.term_at > p["tj"])):
                still.append(p)
                continue
            ids = {p["shoe_event"], p["term_event"]} - {None}
            final = next((f for f in finals if use_key(f.pack_id, f.pack_use or 1) == p["pack_id"]
                          and f.finding_id not in links and ids & set(f.event_ids)), None)
            if final is not None:
                links[final.finding_id] = p["id"]
            if p["bad"] or final is not None:
                self.counts["confirmed"] += 1
            else:
                self.counts["cleared"] += 1
                cleared.append(self._cleared(p, al))
        if still:
            self.open[table_id] = still
        else:
            self.open.pop(table_id, None)

    # --- seeing one --------------------------------------------------------------
    def _passed(self, ev, draw_ts: int, between) -> bool:
        """The terminal has moved past a shoe draw of ``draw_ts`` it lacks: it ends the round after it
        (the round's end: due, whatever the clocks), or, for a draw made between rounds (``between``:
        see :meth:`_between`), it writes an event at least ``--skew`` later than the draw.  Not at once:
        a shoe whose clock runs behind the terminal's stamps the next round's first draw before the
        terminal's ``round_started`` (its line is taken first, in the floor's time order), and the
        terminal records that card a moment later."""
        if ev.source != "dealer" or ev.type == "card_dealt" or ev.ts is None:
            return False
        if ev.type == "round_ended":
            return draw_ts < ev.ts
        if between is None:
            return False
        ended, resumed = between
        return ended < draw_ts and (resumed is None or draw_ts < resumed) and draw_ts + max(self.skew_us, 1) <= ev.ts

    def _seen(self, table_id, game, pack: Pack, ev, between=None) -> dict | None:
        al = pack.alignment
        s, t = al.shoe, al.term
        if not s or not t:
            return None
        i, j = al.shoe_at, al.term_at
        at = alignment.disagreement(al)
        if at is not None:
            return self._new(table_id, game, pack, "differ", at[0], at[1], ev)
        if j >= len(t) and i < len(s):
            c = s[i]
            if c.card is not None and c.event_id is not None and c.ts is not None and self._passed(ev, c.ts, between):
                return self._new(table_id, game, pack, "shoe_only", i, None, ev)
        elif i >= len(s) and j < len(t):
            c = t[j]
            if c.card is not None and ev.source == "dealer" and ev.type == "round_ended":
                return self._new(table_id, game, pack, "term_only", None, j, ev)
        return None

    def _new(self, table_id, game, pack: Pack, kind, si, tj, ev) -> dict | None:
        pid = pack.pack_id
        for p in self.open.get(table_id, ()):
            if p["pack_id"] == pid and ((si is not None and p["si"] == si) or (tj is not None and p["tj"] == tj)):
                return None                     # that card is already announced
        return self._make(table_id, game, pack, kind, si, tj, getattr(ev, "event_id", None))

    def _make(self, table_id, game, pack: Pack, kind, si, tj, trigger_id) -> dict:
        """The open alert (plain data, but for its refs: :class:`pitwatch.rules.state.Ref`)."""
        s, t = pack.alignment.shoe, pack.alignment.term
        sc = s[si] if si is not None else None
        tc = t[tj] if tj is not None else None
        if tc is not None:
            round_id = tc.round_id
        else:
            j = pack.alignment.term_at
            round_id = t[j - 1].round_id if 0 < j <= len(t) else None
        return {
            "id": _id(RULE_ID, table_id, pack.pack_id, sc and sc.event_id, tc and tc.event_id),
            "kind": kind, "table_id": table_id, "game": game, "pack_id": pack.pack_id, "round_id": round_id,
            "si": si, "tj": tj, "shoe_event": sc.event_id if sc else None, "term_event": tc.event_id if tc else None,
            "shoe_draw": sc.index if sc else None, "shoe_card": sc.card if sc else None,
            "terminal_place": tj + 1 if tc else None, "terminal_card": tc.card if tc else None,
            "shoe_ref": sc.ref() if sc else None, "term_ref": tc.ref() if tc else None,
            "seen_at": trigger_id, "bad": False, "matched": [],
        }

    def _from_finding(self, table_id, game, pack: Pack | None, f) -> dict | None:
        if pack is None:
            return None
        ids = set(f.event_ids)
        s, t = pack.alignment.shoe, pack.alignment.term
        si = next((k for k, c in enumerate(s) if c.event_id in ids), None)
        tj = next((k for k, c in enumerate(t) if c.event_id in ids), None)
        if si is None and tj is None:
            return None
        kind = "differ" if si is not None and tj is not None else "shoe_only" if si is not None else "term_only"
        p = self._make(table_id, game, pack, kind, si, tj, None)
        p["round_id"] = None if f.round_id is None else use_key(f.round_id, f.round_use or 1)   # a use key, as t's
        p["bad"] = True
        return p

    # --- the alert records ---------------------------------------------------------
    def _alert(self, p: dict) -> dict:
        draw, term = p["shoe_draw"], p["terminal_place"]
        a, b = p["shoe_card"], p["terminal_card"]
        if p["kind"] == "differ":
            expected = same_card_expected(draw)
            actual = (f"the shoe read {a} at draw {draw}; the terminal recorded {b} as card {term} of the pack "
                      "(provisional: the alignment decides after 7 more cards)")
        elif p["kind"] == "shoe_only":
            expected = SHOE_ONLY_EXPECTED
            actual = (f"the shoe's draw {draw} ({a}) is not recorded by the dealer terminal, which has "
                      "moved on (provisional)")
        else:
            expected = TERM_ONLY_EXPECTED
            actual = (f"the terminal's card {term} of the pack ({b}) was not drawn by the shoe by the round's "
                      "end (provisional)")
        refs: list[Ref] = [r for r in (p["shoe_ref"], p["term_ref"]) if r is not None]
        ids = tuple(sorted(r.event_id for r in refs))
        shown = _Texts(p["table_id"], p["pack_id"], ids, expected, actual)
        if self.guard is not None:
            shown = self.guard.apply(shown)
        masked = shown.expected != expected or shown.actual != actual
        ts, offset = _when(p)
        return {
            "finding_id": p["id"], "provisional_id": p["id"], "rule_id": RULE_ID, "title": TITLE,
            "severity": "critical", "game": p["game"], "table_id": p["table_id"], **_ids(p),
            "dealer_id": p["term_ref"].dealer_id if p["term_ref"] else None,
            "ts_us": ts, "ts_offset": offset, "expected": shown.expected, "actual": shown.actual,
            "event_ids": list(ids), "evidence": [{"device_id": r.device_id, "event_id": r.event_id} for r in refs],
            "shoe_draw": draw, "shoe_card": MASK if masked and a is not None else a,
            "terminal_place": term, "terminal_card": MASK if masked and b is not None else b,
            "seen_at": p["seen_at"],
        }

    def _cleared(self, p: dict, al: Alignment) -> dict:
        s = al.shoe
        said = []
        for _kind, si, tj in p["matched"]:
            said.append(f"the shoe's draw {s[si].index} matched the terminal's card {tj + 1} of the pack")
        how = {"differ": "the streams realigned (an offset)",
               "shoe_only": "the terminal recorded the draw after all (its line came late)",
               "term_only": "the shoe's draw came after all (its line came late)"}[p["kind"]]
        reason = f"{'; '.join(dict.fromkeys(said)) or 'its cards were matched'}: {how}"
        ts, offset = _when(p)       # the alert's own time and offset: printed in the zone of the alert it clears
        return {
            "finding_id": _id(CLEARED_ID, p["id"]), "provisional_id": p["id"], "rule_id": CLEARED_ID,
            "title": CLEARED_TITLE, "severity": "info", "game": p["game"], "table_id": p["table_id"], **_ids(p),
            "ts_us": ts, "ts_offset": offset,
            "expected": f"the provisional alert {p['id']} is decided by the alignment",
            "actual": f"cleared: {reason}; no card was switched or unaccounted there",
            "event_ids": [], "evidence": [],
        }

    # --- checkpoint ------------------------------------------------------------------
    def state(self) -> dict:
        """Plain data (the refs as the arrays :class:`pitwatch.rules.state.Ref` is written as)."""
        return {"open": msgspec.to_builtins(self.open), "counts": self.counts, "ended": self.ended,
                "resumed": self.resumed}

    def restore(self, state: dict) -> None:
        self.open = {k: [_restored(p) for p in v] for k, v in state.get("open", {}).items()}
        self.counts.update(state.get("counts", {}))
        self.ended = dict(state.get("ended", {}))
        self.resumed = dict(state.get("resumed", {}))


def _when(p: dict) -> tuple[int, int | None]:
    """``(ts, ts_offset)`` of an open alert: its latest evidence's time and that device's offset (minutes
    east of UTC) — the provisional alert's and its clearing alert's alike, so ``--local`` and the text
    format print both in the same zone."""
    refs = [r for r in (p["shoe_ref"], p["term_ref"]) if r is not None and r.ts is not None]
    last = max(refs, key=lambda r: (r.ts, r.event_id, r.device_id or ""))   # as a finding's ts (rules/finding.py)
    return last.ts, last.ts_offset


def _restored(p: dict) -> dict:
    """An open alert as :meth:`CardWatch.state` saved it: its refs read back as records."""
    p = dict(p)
    for k in ("shoe_ref", "term_ref"):
        if p.get(k) is not None:
            p[k] = msgspec.convert(p[k], Ref)
    return p


def alert_records(alerts: list[dict], gaming_day, local: DisplayZones | None = None) -> list[dict]:
    """The alerts of :class:`CardWatch` as the sinks' JSON objects: the FINDINGS columns (null where
    they do not apply) plus the place and readings, ``live_only: true``; ``ts`` RFC 3339 (``local``:
    in the table's display zone, :class:`pitwatch.live.sinks.DisplayZones`)."""
    recs = []
    for a in alerts:
        rec = {c: None for c in COLUMNS}
        rec.update({k: v for k, v in a.items() if k != "ts_us"})
        rec["ts"] = rfc3339(a["ts_us"], None if local is None else local.offset(a.get("table_id"), a["ts_us"]))
        rec["gaming_day"] = gaming_day(a["ts_us"]).isoformat()
        rec["live_only"] = True
        recs.append(rec)
    return recs
