"""Preparing a pack, and the pack-level faults every game shares.

A game builds a :class:`PackPrep` (the pack's final drawing order, what the
deck checker will report, where a run could be drawn), offers it to the
pack-level faults, then emits the shuffle events from it.

Pack-level faults of every game:

* ``UNSHUFFLED_PACK``: no ``shuffle_completed`` and no dealer ``shuffle``.
* ``PACK_COMPOSITION``: the pack really lacks a card (``missing``, card_count
  one short) or holds an extra duplicate (``extra``); the checker reports it
  and every later count (shoe, stack size, stub) is the true one.
* ``UNSHUFFLED_SEQUENCE``: ``new_deck_run`` puts 8 cards of one suit in
  A-2-…-K order (or reversed) where they are drawn consecutively and read by
  both streams; ``repeat`` deals the pack in the order of the table's
  previous pack, so its first drawn cards repeat a run of at least 10 drawn
  from that earlier pack.
"""
from __future__ import annotations

import dataclasses

from pitwatch.simulator.cards import DECK, Pack, new_deck_run
from pitwatch.simulator.faults import ALL, injects


@dataclasses.dataclass
class PackPrep:
    pid: str
    pack: Pack
    decks: int
    record_shuffle: bool = True
    has_checker: bool = True
    missing: list = dataclasses.field(default_factory=list)
    extra: list = dataclasses.field(default_factory=list)
    run_at: int | None = None
    copy_from: list | None = None
    spare: int = 99  # > 0: one card more or less cannot change how the round is dealt (stud: 7th street)
    flags: dict = dataclasses.field(default_factory=dict)

    @property
    def card_count(self) -> int:
        return len(self.pack.cards)

    def key(self) -> dict:
        return {"pack_id": self.pid}


def _cards_json(cards: list[str]) -> str:
    return "[" + ",".join(f'"{c}"' for c in cards) + "]"


def emit_shuffle(table, prep: PackPrep, checker, method: str | None, preshuffled: bool = False,
                 lead: tuple[int, int] = (20_000, 90_000)) -> None:
    """``shuffle_completed`` from ``checker`` (if any) and the dealer's ``shuffle`` (if ``method``)."""
    if not prep.record_shuffle:
        return
    if prep.flags.get("rogue"):
        checker = table.cfg.rogue        # UNKNOWN_DEVICE: a shuffler not in the registry reports the pack
    if checker is not None:
        table.device(checker, "shuffle_completed",
                     f'"pack_id":"{prep.pid}","decks":{prep.decks},"card_count":{prep.card_count},'
                     f'"missing":{_cards_json(prep.missing)},"extra":{_cards_json(prep.extra)},'
                     f'"preshuffled":{"true" if preshuffled else "false"}',
                     *lead)
    if method:
        table.dealer("shuffle", f',"pack_id":"{prep.pid}","method":"{method}"', 800, 4000)


def offer_pack_faults(table, prep: PackPrep, extra_names=()) -> None:
    if table.faults:
        table.faults.inject(["UNSHUFFLED_PACK", "PACK_COMPOSITION", "UNSHUFFLED_SEQUENCE", "SHOE_SILENT",
                             "UNKNOWN_DEVICE", *extra_names],
                            prep, pack_level=True)


@injects("UNSHUFFLED_PACK", *ALL)
def _unshuffled_pack(table, prep: PackPrep) -> bool:
    prep.record_shuffle = False
    table.faults.fire("UNSHUFFLED_PACK", "no_shuffle", [("UNSHUFFLED_PACK", prep.key())])
    return True


@injects("PACK_COMPOSITION", *ALL)
def _pack_composition(table, prep: PackPrep) -> bool:
    if not prep.has_checker or not prep.record_shuffle or prep.spare < 1:
        return False
    rng = table.faults.rng
    cards = prep.pack.cards
    if rng.random() < 0.7:
        i = int(rng.random() * len(cards))
        prep.missing = [cards.pop(i)]
        variant = "missing"
    else:
        card = DECK[int(rng.random() * 52)]
        cards.insert(int(rng.random() * (len(cards) + 1)), card)
        prep.extra = [card]
        variant = "extra"
    table.faults.fire("PACK_COMPOSITION", variant, [("PACK_COMPOSITION", prep.key())])
    return True


@injects("UNSHUFFLED_SEQUENCE", *ALL)
def _unshuffled_sequence(table, prep: PackPrep) -> bool:
    rng = table.faults.rng
    options = []
    if prep.run_at is not None:
        options.append("new_deck_run")
    if prep.copy_from is not None:
        options.append("repeat")
    if not options:
        return False
    variant = options[int(rng.random() * len(options))]
    if variant == "repeat":
        assert prep.copy_from is not None       # offered only with a pack to copy
        prep.pack.cards = list(prep.copy_from)
        prep.pack.pos = 0
    else:
        assert prep.run_at is not None          # offered only with a place for the run
        if not prep.pack.place_run(new_deck_run(rng, 8), prep.run_at):
            return False
    table.faults.fire("UNSHUFFLED_SEQUENCE", variant, [("UNSHUFFLED_SEQUENCE", prep.key())])
    return True
