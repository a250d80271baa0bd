"""The injectable faults: one registry, the per-table fault plan, the ground truth.

Every ``rule_id`` of ``docs/spec/rules.md`` is a fault name.  ``SPECS`` says which
games a fault applies to; each game module registers, with :func:`injects`,
the function that performs it (``REGISTRY[name][game]``).  The CLI validates
``--fault NAME=RATE`` against ``SPECS``.

A rate is a probability per *opportunity* (a round, a pack, …; ``1`` = every
opportunity).  To keep the ground truth exact, at most one fault is injected
per round, at most one pack-level fault per pack, and faults that alter the
card stream (``CARD_STREAM``) are not combined with a pack-level fault in the
same pack.  ``SEQ_GAP`` (a device's ``seq`` jumps) and
``STUB_COUNT_OVERDUE`` (a dealer stops counting stubs) combine with anything.

Every injected fault writes one truth line per finding it must raise, keyed
as ``rules.md`` keys the rule (pack-level rules by ``pack_id``, round-level by
``round_id``, ``SEQ_GAP`` and ``UNKNOWN_DEVICE`` by ``device_id``, ``PAYOUT`` by round + seat + spot),
with the use of the pack / round id (``pack_use``, ``round_use``: 1 unless the
floor reuses ids, :mod:`pitwatch.simulator.reuse`), labelled ``NAME/variant`` and
grouped by ``fault_id``.
"""
from __future__ import annotations

import dataclasses
import random
from typing import Callable

import orjson

from pitwatch.schemas.contract import GAMES as ALL
from pitwatch.schemas.contract import SHOE_GAMES
from pitwatch.schemas.contract import STUD_GAMES as STUD


@dataclasses.dataclass(frozen=True)
class FaultSpec:
    name: str
    games: tuple[str, ...]
    summary: str


_SPECS = [
    FaultSpec("SEQ_GAP", ALL, "a device's seq jumps by 1-3 (events lost upstream)"),
    FaultSpec("UNSHUFFLED_PACK", ALL, "a pack is dealt with no shuffle recorded"),
    FaultSpec("PACK_COMPOSITION", ALL, "the deck checker finds a card missing or extra, and so it is"),
    FaultSpec("SHOE_CARD_MISMATCH", SHOE_GAMES, "the terminal records another card than the shoe read"),
    FaultSpec("UNACCOUNTED_CARD", SHOE_GAMES, "a card drawn and hidden, or dealt without the shoe seeing it"),
    FaultSpec("UNSHUFFLED_SEQUENCE", ALL, "a new-deck-order run, or a pack repeating an earlier one"),
    FaultSpec("CARDS_BEFORE_BETS_CLOSED", SHOE_GAMES, "no more bets called late, or never"),
    FaultSpec("DEAL_ORDER", ALL, "a card goes to a position out of the dealing order"),
    FaultSpec("CARD_FACE", ("three_bet_poker", "combate") + STUD, "a card dealt face up instead of down, or the reverse"),
    FaultSpec("MISDEAL", ("three_bet_poker", "combate"), "the deal stops one card short"),
    FaultSpec("PAYOUT", ("baccarat", "combate"), "a bet settled with the wrong result or amount"),
    FaultSpec("STUB_COUNT_OVERDUE", ("three_bet_poker",), "the dealer stops counting the stub for five rounds"),
    FaultSpec("STUB_MISCOUNT", ("three_bet_poker",), "the stub count is recorded one off (round voided)"),
    FaultSpec("VOID_NOT_DECLARED", ("three_bet_poker",), "a layout miscount or a misdeal not voided"),
    FaultSpec("STUB_EXPOSED", ("three_bet_poker",), "the stub is shown, or a card drawn after the deal"),
    FaultSpec("SETTLEMENT_ORDER", ("combate",), "two payouts of a phase out of right-to-left order"),
    FaultSpec("ILLEGAL_DOUBLE", ("combate",), "a double on a three-card hand"),
    FaultSpec("ILLEGAL_SPLIT", ("combate",), "a split of a non-ace pair, or a split ace hit twice"),
    FaultSpec("SIX_CARD_RULE", ("combate",), "a six-card hand not paid, or collected"),
    FaultSpec("DEALER_DRAWING", ("combate",), "the dealer stands below 17 or hits 17 or more"),
    FaultSpec("CUT_OFFER", ("baccarat",), "the cut offered to, or made by, the wrong person"),
    FaultSpec("CUT_PLACEMENT", ("baccarat",), "the cut less than one deck from an end"),
    FaultSpec("CUT_CARD_PLACEMENT", ("baccarat",), "the cutting card fewer than 20 cards from the back"),
    FaultSpec("CUT_CARD_MISMATCH", ("baccarat",), "the cutting card is not where the terminal says"),
    FaultSpec("RIFFLE_SKIPPED", ("baccarat",), "a requested riffle of a pre-shuffled pack not done"),
    FaultSpec("BURN_SKIPPED", ("baccarat",) + STUD, "no burn before the first coup / before a street"),
    FaultSpec("BURN_COUNT", ("baccarat",), "the burn not face up, or not its value in cards"),
    FaultSpec("LAST_COUP_NOT_ANNOUNCED", ("baccarat",), "the last coup not announced"),
    FaultSpec("COUPS_AFTER_CUT_CARD", ("baccarat",), "two coups dealt after the cutting-card coup"),
    FaultSpec("DRAWING_RULE", ("baccarat",), "a third card drawn or not against the tableau"),
    FaultSpec("EXPOSED_CARD", STUD, "an exposed card not handled by 004 A/B"),
    FaultSpec("CARD_TO_DEAD_HAND", STUD, "a 4th-street card to a folded or absent hand"),
    FaultSpec("BRING_IN", STUD, "the bring-in by the wrong seat"),
    FaultSpec("FIRST_TO_ACT", STUD, "the first action on 4th/5th street by the wrong seat"),
    FaultSpec("FOURTH_STREET_DOUBLE", STUD, "a big bet on 4th street with an up pair showing"),
    FaultSpec("SHORT_DECK_PROCEDURE", STUD, "the wrong 7th-street short-stack procedure"),
    FaultSpec("SHOE_SILENT", SHOE_GAMES, "the shoe writes nothing of a pack the terminal deals (unplugged)"),
    FaultSpec("UNKNOWN_DEVICE", ALL, "a rogue shuffler not in devices.csv reports a pack (once per table)"),
]
SPECS: dict[str, FaultSpec] = {s.name: s for s in _SPECS}
FAULT_NAMES: tuple[str, ...] = tuple(SPECS)

# Faults that break no procedure rule and so raise no finding: never in SPECS (whose names are the
# rules'), never in ``--faults RATE``'s mix, only asked for by name; their ground truth is a file of
# their own (HOLD_SKEW: OUT/hold_skew.json, pitwatch.simulator.hold_skew).
QUIET: dict[str, FaultSpec] = {
    "HOLD_SKEW": FaultSpec("HOLD_SKEW", ("baccarat",),
                           "one dealer arranges the cards so a confederate's player bet wins more often (RATE: "
                           "the share of his coups); every payout right, no finding, only the hold shows it"),
}

# faults that change which cards the two streams see: never in a pack that has a pack-level fault
CARD_STREAM = frozenset({"SHOE_CARD_MISMATCH", "UNACCOUNTED_CARD", "STUB_EXPOSED", "SHOE_SILENT"})
# faults that never occupy a round or pack
FREE = frozenset({"SEQ_GAP", "STUB_COUNT_OVERDUE"})

REGISTRY: dict[str, dict[str, Callable]] = {name: {} for name in SPECS}


def injects(name: str, *games: str):
    """Register ``fn`` as the implementation of fault ``name`` for ``games``."""
    if name not in SPECS:
        raise KeyError(f"unknown fault {name}")

    def deco(fn):
        for g in games:
            if g not in SPECS[name].games:
                raise ValueError(f"{name} is not declared for {g}")
            REGISTRY[name][g] = fn
        return fn

    return deco


def parse_rate(text: str) -> float:
    """A rate per opportunity, 0..1 (``1`` = every opportunity); ValueError otherwise."""
    try:
        rate = float(text)
    except (TypeError, ValueError):
        raise ValueError(f"rate must be a number between 0 and 1, got {text!r}") from None
    if not (0.0 <= rate <= 1.0):
        raise ValueError(f"rate must be between 0 and 1, got {text!r}")
    return rate


def build_rates(mixed: float | None, per_fault: dict[str, float] | None) -> dict[str, float]:
    """Rates by fault name: ``mixed`` for every fault of a rule (not the :data:`QUIET` ones, asked for only by
    name), overridden by ``per_fault``."""
    rates = {name: mixed for name in SPECS} if mixed else {}
    for name, rate in (per_fault or {}).items():
        if name not in SPECS and name not in QUIET:
            raise ValueError(f"unknown fault {name!r}; known: {', '.join(FAULT_NAMES + tuple(QUIET))}")
        rates[name] = parse_rate(rate) if isinstance(rate, str) else float(rate)
    return {k: v for k, v in rates.items() if v > 0}


class TruthLog:
    """``truth.jsonl``: one line per finding the injected faults must raise."""

    # pack_use / round_use: which use of the id the finding is about (1 unless the floor reuses ids,
    # pitwatch.simulator.reuse); null with no id.  Files written before them read as use 1 (pitwatch.simulator.truth).
    COLUMNS = ("rule_id", "game", "table_id", "pack_id", "pack_use", "round_id", "round_use", "device_id",
               "seat", "spot", "fault", "fault_id")

    def __init__(self, path):
        self.path = path
        self.fh = open(path, "wb")
        self.findings = 0
        self.by_fault: dict[str, int] = {}
        self.by_rule: dict[str, int] = {}

    def add(self, row: dict) -> None:
        self.fh.write(orjson.dumps({c: row.get(c) for c in self.COLUMNS}) + b"\n")
        self.findings += 1
        self.by_rule[row["rule_id"]] = self.by_rule.get(row["rule_id"], 0) + 1

    def close(self) -> None:
        self.fh.close()


class TableFaults:
    """The fault plan of one table: rates, its own random stream, exclusivity, truth."""

    def __init__(self, table, rates: dict[str, float], seed: str, truth: TruthLog | None):
        self.table = table
        self.game = table.game
        self.rates = {n: r for n, r in rates.items() if n in SPECS and self.game in SPECS[n].games}
        self.rng = random.Random(seed)
        self.truth = truth
        self.round_busy = False
        self.pack_busy = False
        self.count = 0

    def __bool__(self) -> bool:
        return bool(self.rates)

    def begin_round(self) -> None:
        self.round_busy = False

    def begin_pack(self) -> None:
        self.pack_busy = False
        self.table.shoe_quiet = False    # a shoe unplugged for the last pack (SHOE_SILENT) is back

    def wants(self, name: str, pack_level: bool = False) -> bool:
        rate = self.rates.get(name)
        if not rate:
            return False
        if name not in FREE:
            if self.round_busy or (pack_level and self.pack_busy):
                return False
            if name in CARD_STREAM and self.pack_busy:
                return False
        return rate >= 1.0 or self.rng.random() < rate

    def inject(self, names, *args, pack_level: bool = False):
        """Try ``names`` in a random order; the first whose function arms wins.

        The function gets ``(table, *args)`` and returns a truthy value when the
        fault is armed (it records its findings with :meth:`fire`, now or later).
        """
        if not self.rates:
            return None
        names = [n for n in names if n in self.rates]
        if not names:
            return None
        self.rng.shuffle(names)
        for name in names:
            if not self.wants(name, pack_level):
                continue
            armed = REGISTRY[name][self.game](self.table, *args)
            if armed:
                if name not in FREE:
                    self.round_busy = True
                    if pack_level:
                        self.pack_busy = True
                return armed
        return None

    def fire(self, name: str, variant: str, findings: list[tuple[str, dict]]) -> None:
        """Record an injected fault and the findings it must raise."""
        self.count += 1
        t = self.table
        fault_id = f"{t.table_id}/F{self.count:04d}"
        label = f"{name}/{variant}"
        if self.truth is None:
            return
        self.truth.by_fault[name] = self.truth.by_fault.get(name, 0) + 1
        for rule, key in findings:
            # the use current when the fault fires: every fault fires while its pack / round is the
            # table's current one (a reused id comes back only after another pack / the round ended)
            uses = {"pack_use": t.ids.use("pack", key.get("pack_id")),
                    "round_use": t.ids.use("round", key.get("round_id"))}
            self.truth.add({"rule_id": rule, "game": t.game, "table_id": t.table_id,
                            "fault": label, "fault_id": fault_id, **key, **uses})
