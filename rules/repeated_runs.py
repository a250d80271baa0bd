"""``UNSHUFFLED_SEQUENCE`` across packs: a 10-card run repeating an earlier pack's run.

rules.md: "a run of 10 consecutive cards that repeats, in the same order, a
run of an earlier pack in the same input, on any table (earlier: whose run
began at the earlier ``ts``; ties by ``pack_id``). An unreadable card breaks
a run."  The finding is for the later pack.

Input: one :class:`PackCards` per pack, as :meth:`pitwatch.rules.table.TableReplay.drain_pack_sequences`
hands them out (table_id, pack_id, game, and the drawn cards by index, each
with its event_id and ts).  The function is pure and its answer does not
depend on the order of its input, so the pipeline can gather every pack of a
run (all tables) and call it once.

Decisions: runs are compared card for card (rank and suit); two windows of
the same pack never count; ties of ``ts`` and ``pack_id`` are broken by
``table_id``; a pack gets at most one finding (its earliest repeating run,
evidence: both runs' events).  A pack that also has a within-pack
UNSHUFFLED_SEQUENCE finding would get two findings with the same key: merge
with :func:`one_per_key`.
"""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Sequence

import msgspec

from pitwatch.rules.finding import Finding, GamingDay, default_gaming_day, make_finding
from pitwatch.rules.state import PackCard, Ref
from pitwatch.schemas.contract import RANKS, SUITS

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

RUN = 10
#: a pack's card sequence as :meth:`pitwatch.rules.table.TableReplay.drain_pack_sequences` hands it out and the
#: lake's ``pack_cards`` state keeps it (JSON): table_id, pack_id, pack_use, game, first_ts, source, cards
PackRecord = dict[str, Any]


@dataclasses.dataclass(frozen=True)
class PackCards:
    table_id: str
    pack_id: str
    game: str | None
    first_ts: int | None
    cards: tuple[PackCard, ...]     # by index
    pack_use: int = 1   # pack_id is the engine's use key (pitwatch.rules.uses): the id for use 1, ``id#n`` after

    @classmethod
    def from_record(cls, rec: PackRecord) -> "PackCards":
        return cls(rec["table_id"], rec["pack_id"], rec.get("game"), rec.get("first_ts"),
                   msgspec.convert(rec["cards"], tuple[PackCard, ...]), rec.get("pack_use") or 1)

    @property
    def raw_id(self) -> str:
        """The pack id the devices wrote (``pack_id`` is the use key)."""
        n = self.pack_use
        return self.pack_id if n == 1 else self.pack_id[:-len(f"#{n}")]


Window = tuple[PackCard, ...]
Order = tuple[int, str, str, str]   # a run's start ts, pack (use key), table, pack id as written


def _windows(pack: PackCards, n: int) -> Iterator[tuple[tuple[str | None, ...], Window]]:
    cards = pack.cards
    for i in range(len(cards) - n + 1):
        w = cards[i:i + n]
        if any(c.card is None for c in w):
            continue
        if any(w[k + 1].index != w[k].index + 1 for k in range(n - 1)):
            continue  # a lost card (index gap) breaks a run
        yield tuple(c.card for c in w), w


def repeated_runs(packs: Iterable[PackCards | PackRecord], gaming_day: GamingDay = default_gaming_day,
                  run: int = RUN) -> list[Finding]:
    """Findings for every pack holding a ``run``-card run that an earlier pack's run repeats."""
    pack_cards = [p if isinstance(p, PackCards) else PackCards.from_record(p) for p in packs]
    first: dict[tuple[str | None, ...], tuple[Order, Window]] = {}   # run cards -> earliest (order, window)
    occurrences = []
    for p in pack_cards:
        for key, w in _windows(p, run):
            order = (w[0].ts, p.pack_id, p.table_id, p.raw_id)
            occurrences.append((key, order, p, w))
            best = first.get(key)
            if best is None or order < best[0]:
                first[key] = (order, w)
    hits: dict[tuple[str, str], tuple[Order, PackCards, Window, Order, Window]] = {}
    for key, order, p, w in occurrences:
        earliest_order, earliest_w = first[key]
        if (earliest_order[1], earliest_order[2]) == (p.pack_id, p.table_id) or earliest_order >= order:
            continue
        pk = (p.table_id, p.pack_id)
        if pk not in hits or order < hits[pk][0]:
            hits[pk] = (order, p, w, earliest_order, earliest_w)
    out = []
    for (_table, _pack), (_order, p, w, eorder, ew) in sorted(hits.items()):
        evidence = [Ref(c.event_id, c.ts, None, c.device_id, c.ts_offset) for c in (*w, *ew)]
        out.append(make_finding(
            "UNSHUFFLED_SEQUENCE", table_id=p.table_id, game=p.game, key=(p.pack_id,), evidence=evidence,
            expected=f"a shuffled pack: no run of {run} cards repeating an earlier pack's",
            actual=(f"cards {w[0].index} to {w[-1].index} ({' '.join(str(c.card) for c in w)}) repeat cards "
                    f"{ew[0].index} to {ew[-1].index} of pack {eorder[3]} on table {eorder[2]}"),
            gaming_day=gaming_day, pack_id=p.raw_id, pack_use=p.pack_use,
        ))
    return out


CARD_CODE = {r + s: i for i, (r, s) in enumerate((r, s) for r in RANKS for s in SUITS)}   # a card's number 0..51


def run_keys(record: PackRecord, run: int = RUN) -> list[int]:
    """One exact integer per ``run``-card window of a pack record (base-52 digits of its cards).

    Windows that an unreadable card or a lost index breaks have no key, as in
    :func:`_windows`; two windows have equal keys exactly when their cards are equal.
    """
    top = 52 ** (run - 1)
    keys = []
    key = length = 0
    last_index = None
    for index, card, *_rest in record["cards"]:
        code = CARD_CODE.get(card) if card is not None else None
        if code is None or (last_index is not None and index != last_index + 1):
            key = length = 0
        if code is None:
            last_index = None
            continue
        key = (key % top) * 52 + code if length >= run else key * 52 + code
        length += 1
        last_index = index
        if length >= run:
            keys.append(key)
    return keys


class RunKeys:
    """The run keys of some packs, compact: one int64 key and one int64 owner per window,
    and each owner's ``(table_id, pack_id)``.  Built where the packs are (each table's
    replay); :func:`packs_sharing_a_run` takes them from every table at once."""

    __slots__ = ("keys", "owners", "names")

    def __init__(self, keys: npt.NDArray[np.int64], owners: npt.NDArray[np.int64], names: list[tuple[str, str]]):
        self.keys, self.owners, self.names = keys, owners, names

    @classmethod
    def of(cls, records: Iterable[PackRecord], run: int = RUN) -> "RunKeys":
        import array

        import numpy as np

        keys, owners = array.array("q"), array.array("q")
        names: list[tuple[str, str]] = []
        for record in records:
            ks = run_keys(record, run)
            if ks:
                keys.extend(ks)
                owners.extend([len(names)] * len(ks))
                names.append((record["table_id"], record["pack_id"]))
        return cls(np.frombuffer(keys, dtype=np.int64), np.frombuffer(owners, dtype=np.int64), names)

    def to_bytes(self) -> bytes:
        import orjson

        head = orjson.dumps([len(self.keys), self.names])
        body: bytes = self.keys.tobytes() + self.owners.tobytes()
        return len(head).to_bytes(8, "little") + head + body

    @classmethod
    def from_bytes(cls, data: bytes) -> "RunKeys":
        import numpy as np
        import orjson

        size = int.from_bytes(data[:8], "little")
        n, names = orjson.loads(data[8:8 + size])
        body = 8 + size
        keys = np.frombuffer(data, dtype=np.int64, count=n, offset=body)
        owners = np.frombuffer(data, dtype=np.int64, count=n, offset=body + 8 * n)
        return cls(keys, owners, [tuple(x) for x in names])


def packs_sharing_a_run(records: Iterable[PackRecord] = (), run: int = RUN,
                        reduced: Iterable[RunKeys] = ()) -> set[tuple[str, str]]:
    """(table_id, pack_id) of every pack holding a run that another pack also holds.

    Only these packs can take part in a finding, so :func:`repeated_runs` over
    them gives what it gives over every pack.  This pass keeps 16 bytes a
    window (numpy), not the windows themselves: a month of a large casino's
    packs fits.  The packs are ``records`` (streamed) and those already
    reduced to their keys where they were replayed (``reduced``).
    """
    import numpy as np

    parts = [*reduced, RunKeys.of(records, run)]
    names: list[tuple[str, str]] = []
    keys, owners = [], []
    for part in parts:
        keys.append(part.keys)
        owners.append(part.owners + len(names))
        names.extend(part.names)
    if not names:
        return set()
    k, o = np.concatenate(keys), np.concatenate(owners)
    order = np.lexsort((o, k))
    k, o = k[order], o[order]
    shared = (k[1:] == k[:-1]) & (o[1:] != o[:-1])
    if not shared.any():
        return set()
    hit = np.isin(k, np.unique(k[1:][shared]))
    return {names[i] for i in np.unique(o[hit]).tolist()}


def one_per_key(findings: Sequence[Finding]) -> list[Finding]:
    """Keep one UNSHUFFLED_SEQUENCE finding per (table, pack): the earliest ts, then finding_id."""
    best: dict[tuple[str | None, str | None, int], Finding] = {}
    rest = []
    for f in findings:
        if f.rule_id != "UNSHUFFLED_SEQUENCE":
            rest.append(f)
            continue
        k = (f.table_id, f.pack_id, f.pack_use or 1)
        if k not in best or (f.ts, f.finding_id) < (best[k].ts, best[k].finding_id):
            best[k] = f
    return rest + [best[k] for k in sorted(best)]
