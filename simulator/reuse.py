"""``--reuse-ids``: pack and round ids used again, as real floors do (contract 2.1; issue 36).

Shufflers number packs per gaming day and wrap their counter; terminals number
coups per shoe.  With ``simulate(..., reuse_ids=True)`` every table:

* numbers its packs from 1 each gaming day (of the table's clock when the pack
  is taken), wrapping at :data:`PACK_WRAP`: ``P-BAC01-01``, ``P-BAC01-02``,
  ``P-BAC01-01``, …  A table's first pack of a day is number 1 unless the
  table's previous pack (the day before) was number 1: then it is 2.  So two
  consecutive packs of a table never share an id, and a pack id comes back
  only after at least one other pack has been dealt at the table (a stud
  pack has no shoe to be taken out of: it leaves play only when the table
  deals from another);
* numbers its rounds from 1 with each new pack ("per shoe"):
  ``BAC-01-0001`` … for every shoe of baccarat and combate; three_bet_poker
  and stud deal a pack per round, so every round of theirs is round 1 of
  its pack (``TBP-01-R0001``, ``STU-01-H001``): a round id comes back as soon
  as the round before ended.  A stud short-stack pack is its pack's id plus
  ``-R``, as without the option.

Why a wrap of 2 is safe: a table holds one pack at a time.  Every game takes
a new pack only after the last one left play (baccarat and combate empty the
shoe before the next pack is shuffled or fetched from the back room; one
three_bet_poker or stud pack per round, shuffled after the previous round
ended), shared shufflers (the back room of a pit, a pair's shuffler or deck
machine) name packs with the table's code, and consecutive packs of a table
differ.  So the earlier pack of an id has been out of play for at least a
whole pack (a round, for the single-pack games) when the id comes back:
minutes, against device clocks at most 2 s apart.

It is a pure renaming: the counters the options change draw no random
number, so the same seed with and without the option writes the same events
but for ``pack_id`` and ``round_id`` (ids are JSON strings of fixed field
order, so the lines differ only there).  Each reused id's **use** (1 for an
id's first use at its table since the floor opened, counted across gaming
days) goes into the ground truth (``pack_use``, ``round_use``) and, with the
id the event would have had without the option, into ``OUT/reused_ids.csv``
(:func:`read_id_map`), so tests can map one run onto the other.
"""
from __future__ import annotations

import csv
from pathlib import Path

from pitwatch.simulator.clock import GamingDays

PACK_WRAP = 2       # pack numbers of a gaming day: 1, 2, 1, 2, …
ID_MAP_FILE = "reused_ids.csv"
ID_MAP_COLUMNS = ("table_id", "kind", "unique_id", "id", "use")


def pack_number(day_index: int, first: int, wrap: int = PACK_WRAP) -> int:
    """The number of a table's ``day_index``-th pack of a gaming day (0 for the first), when
    the day's first pack is number ``first``."""
    return 1 + (first - 1 + day_index) % wrap


def first_of_day(previous: int | None) -> int:
    """The number of a table's first pack of a gaming day: 1, unless its previous pack was 1."""
    return 2 if previous == 1 else 1


class TableIds:
    """The pack and round ids one table writes, and the use of each.

    ``reuse`` False: the unique ids (the table's running counters) and every use 1.
    """

    def __init__(self, table_id: str, code: str, reuse: bool, days: GamingDays | None = None,
                 wrap: int = PACK_WRAP):
        if wrap < 2:
            raise ValueError("a pack wrap below 2 would give consecutive packs of a table one id")
        self.wrap = wrap
        self.table_id = table_id
        self.code = code
        self.reuse = reuse
        self.days = days or GamingDays()
        self.pack_no = 0         # packs since the table opened (the unique numbering)
        self.round_no = 0
        self.day: str | None = None
        self.day_packs = 0       # packs taken this gaming day
        self.first = 1
        self.last_number: int | None = None
        self.pack_rounds = 0     # rounds of the current pack
        self.current: tuple[str, str] = ("", "")   # the current pack: (unique id, id written)
        self.uses: dict[tuple[str, str], int] = {}
        self.rows: list[tuple] = []   # (table_id, kind, unique_id, id, use) in the order taken

    def _take(self, kind: str, unique: str, shown: str) -> str:
        if self.reuse:
            use = self.uses[(kind, shown)] = self.uses.get((kind, shown), 0) + 1
            self.rows.append((self.table_id, kind, unique, shown, use))
        return shown

    def pack(self, width: int, now_ms: int) -> str:
        self.pack_no += 1
        self.pack_rounds = 0
        unique = f"P-{self.code}-{self.pack_no:0{width}d}"
        if not self.reuse:
            self.current = (unique, unique)
            return unique
        day = self.days.day(now_ms)[0]
        if day != self.day:
            self.day, self.day_packs, self.first = day, 0, first_of_day(self.last_number)
        n = pack_number(self.day_packs, self.first, self.wrap)
        self.day_packs += 1
        self.last_number = n
        self.current = (unique, f"P-{self.code}-{n:0{width}d}")
        return self._take("pack", *self.current)

    def sub_pack(self, suffix: str) -> str:
        """A pack named after the current one (stud's short-stack ``-R``): its own id, its own uses."""
        unique, shown = self.current
        return self._take("pack", unique + suffix, shown + suffix)

    def round(self, width: int, prefix: str = "") -> str:
        self.round_no += 1
        self.pack_rounds += 1
        unique = f"{self.table_id}-{prefix}{self.round_no:0{width}d}"
        if not self.reuse:
            return unique
        return self._take("round", unique, f"{self.table_id}-{prefix}{self.pack_rounds:0{width}d}")

    def use(self, kind: str, shown: str | None) -> int | None:
        """The current use of an id (None for no id; 1 when ids are not reused)."""
        if shown is None:
            return None
        return self.uses.get((kind, shown), 1) if self.reuse else 1


def write_id_map(path: Path, rows) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(ID_MAP_COLUMNS)
        w.writerows(rows)


def read_id_map(out_dir) -> dict[tuple[str, str], tuple[str, int]]:
    """``OUT/reused_ids.csv`` of a ``--reuse-ids`` floor: (table_id, id without the option) ->
    (id written, its use)."""
    with open(Path(out_dir) / ID_MAP_FILE, newline="", encoding="utf-8") as fh:
        return {(r["table_id"], r["unique_id"]): (r["id"], int(r["use"])) for r in csv.DictReader(fh)}
