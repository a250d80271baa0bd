"""Per-table reference data: the numbers a jurisdiction may change.

A plain frozen dataclass holding the defaults of ``docs/spec/rules.md``.  ``rules/``
does no I/O: the pipeline loads a table's values from ``seeds/*.csv``
(:func:`pitwatch.seeds.load_reference`) and hands the result to
:class:`pitwatch.rules.table.TableReplay`.  Settings the baccarat engine does not use
(other games' paytables) travel untouched in ``settings`` as the CSV's
strings, for the game plug-ins to parse.

``devices`` is the device registry as far as the table is concerned
(``inputs/devices.py`` loads ``devices.csv`` and hands each table its
rows, :mod:`pitwatch.rules.feed_health` reads them); ``None`` when the run has none.

``shoe`` says whether the table deals from a card-reading shoe (a shoe
stream exists).  ``None`` (the seeds' ``auto``) means the game's default,
:attr:`pitwatch.rules.game.GameProcedure.dealt_from_shoe`: baccarat, three_bet_poker,
combate yes; stud, stud8, razz no (dealt by hand).  See :mod:`pitwatch.rules.table`
("Tables without a shoe") for what the engine does without one.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt

# 003 4.8: "a ten, jack, queen and king shall have a face value of ten and an ace a face value of one"
DEFAULT_BURN_VALUES: tuple[tuple[str, int], ...] = (
    ("A", 1), ("2", 2), ("3", 3), ("4", 4), ("5", 5), ("6", 6), ("7", 7), ("8", 8), ("9", 9),
    ("T", 10), ("J", 10), ("Q", 10), ("K", 10),
)


@dataclasses.dataclass(frozen=True)
class TableReference:
    """Reference values of one table (defaults: rules.md)."""

    # baccarat payouts (rules.md "PAYOUT in baccarat")
    player_pays: float = 1.0
    banker_pays: float = 0.95      # 1:1 less 5 % commission
    tie_pays: float = 8.0
    # baccarat shoe procedure (document 003)
    burn_values: tuple[tuple[str, int], ...] = DEFAULT_BURN_VALUES
    cut_min_from_end: int = 52     # 4.5 "at least one deck in from either end"
    cut_card_min_from_back: int = 20  # 4.6 "at least twenty cards in from the back"
    # every game
    payout_tolerance: float = 0.005  # rules.md PAYOUT: "off by more than 0.005"
    cards_per_deck: int = 52
    shoe: bool | None = None       # a card-reading shoe at the table; None: the game's default
    # other games' settings as (name, raw string) pairs, for their plug-ins
    settings: tuple[tuple[str, str], ...] = ()
    # the device registry's rows for this table and for "*" (pitwatch.rules.feed_health.DeviceRow:
    # device_id, source, table_id, from_day, to_day); None: the run has no registry
    devices: tuple[tuple[str, str, str, _dt.date | None, _dt.date | None], ...] | None = None

    def burn_value(self, rank: str) -> int:
        return dict(self.burn_values)[rank]

    def has_shoe(self, game_default: bool) -> bool:
        """Whether the table deals from a card-reading shoe (``game_default`` unless set)."""
        return game_default if self.shoe is None else self.shoe

    def setting(self, name: str, default: str | None = None) -> str | None:
        return dict(self.settings).get(name, default)


DEFAULT_REFERENCE = TableReference()
