"""Which plug-in serves which game (``table_opened.game``).

Add a game by adding one line: ``"name": "module:Class"``.  Modules are
imported on first use, so a plug-in may import anything in ``rules``.  A game
without a plug-in gets :class:`pitwatch.rules.game.GameProcedure` (the shared rules only).
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Protocol

from pitwatch.rules.game import GameProcedure
from pitwatch.rules.reference import DEFAULT_REFERENCE, TableReference

if TYPE_CHECKING:
    from pitwatch.rules.state import Pack
    from pitwatch.rules.table import TableReplay
    from pitwatch.schemas.events import Event

PROCEDURES: dict[str, str] = {
    "baccarat": "pitwatch.rules.baccarat:Baccarat",
    "three_bet_poker": "pitwatch.rules.three_bet_poker:ThreeBetPoker",
    "combate": "pitwatch.rules.combate:Combate",
    "stud": "pitwatch.rules.stud:Stud", "stud8": "pitwatch.rules.stud:Stud8", "razz": "pitwatch.rules.stud:Razz",
}


#: Table checks: run on every table beside its game's plug-in (see "Table checks" in pitwatch.rules.game).
#: Add one by adding ``"module:Class"``; the class is built with the table's reference.
CHECKS: tuple[str, ...] = ("pitwatch.rules.feed_health:FeedHealth",)


class TableCheck(Protocol):
    """What the engine calls on a table check (see "Table checks" in :mod:`pitwatch.rules.game`)."""

    def on_event(self, ctx: TableReplay, ev: Event) -> None: ...
    def on_pack_done(self, ctx: TableReplay, pack: Pack) -> None: ...
    def pack_open(self, ctx: TableReplay, pack: Pack) -> bool: ...
    def on_close(self, ctx: TableReplay) -> None: ...


def checks_for(ref: TableReference = DEFAULT_REFERENCE) -> tuple[TableCheck, ...]:
    """The table checks of one table (:data:`CHECKS`), built with its reference."""
    out: list[TableCheck] = []
    for target in CHECKS:
        module, name = target.split(":")
        out.append(getattr(importlib.import_module(module), name)(ref))
    return tuple(out)


def procedure_for(game: str | None, ref: TableReference = DEFAULT_REFERENCE) -> GameProcedure:
    target = PROCEDURES.get(game or "")
    if target is None:
        proc = GameProcedure(ref)
        proc.game = game
        return proc
    module, name = target.split(":")
    plugin: GameProcedure = getattr(importlib.import_module(module), name)(ref)
    return plugin
