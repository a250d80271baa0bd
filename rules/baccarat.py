"""Baccarat (punto banco), document 003 plus the tableau: the game plug-in.

The pack procedure (cut, cutting card, riffle, burn, last coup) is in
:mod:`pitwatch.rules.baccarat_shoe`; this module is the coup: dealing order, the
drawing rule, payouts, and the plug-in glue.

* ``DEAL_ORDER``: ``player``, ``banker``, ``player``, ``banker``, then the
  player's third card if drawn, then the banker's; nothing else (a burn or a
  seat inside a coup is out of order).  Whether a third card *should* have
  been drawn is ``DRAWING_RULE``'s business, not ``DEAL_ORDER``'s.
* ``DRAWING_RULE`` is decided at ``round_ended`` (a voided coup is not
  judged): first the player's draw, then the banker's given the player's
  actual cards.  Unreadable cards are enumerated over the ten baccarat
  values; the coup is judged only when every value gives the same verdict.
* ``PAYOUT``: settled on the cards actually dealt (whatever the drawing
  rule said): Player win pays ``player`` 1:1, Banker win pays ``banker``
  0.95:1, a tie pays ``tie`` 8:1 and pushes ``player`` and ``banker``;
  every other bet loses (reference values per table).  A payout for a seat
  and spot with no ``bet_placed`` is wrong ("no bet").
* No ``CARD_FACE`` and no ``MISDEAL`` in baccarat (see :mod:`pitwatch.rules.catalog`).
* Round row: ``seats_dealt`` lists the seats that bet (baccarat deals to the
  Player and Banker hands, not to seats); ``outcome`` e.g. ``banker 7-5``
  (winner, then player total - banker total).
"""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from pitwatch.rules import baccarat_shoe as shoe
from pitwatch.rules.cards import baccarat_total, banker_draws, player_draws, verdicts
from pitwatch.rules.finding import ref
from pitwatch.rules.game import GameProcedure
from pitwatch.rules.rounds import bet_total
from pitwatch.rules.state import Pack, Round, RoundCard
from pitwatch.schemas.events import Event

if TYPE_CHECKING:
    from pitwatch.rules.table import TableReplay

_ORDER = ("player", "banker", "player", "banker")


def _hands(rnd: Round) -> tuple[list[str | None], list[str | None]]:
    player = [c.card for c in rnd.cards if c.target == "player"]
    banker = [c.card for c in rnd.cards if c.target == "banker"]
    return player, banker


def _winner(cards: list[str], n_player: int) -> tuple[str, int, int]:
    pt, bt = baccarat_total(cards[:n_player]), baccarat_total(cards[n_player:])
    return ("player" if pt > bt else "banker" if bt > pt else "tie"), pt, bt


@functools.lru_cache(maxsize=64)  # every payout of a coup asks again: a coup's worth of entries
def _winners(cards: tuple[str | None, ...], n_player: int) -> frozenset[str] | None:
    """The winners the coup ``cards`` (player's ``n_player`` first) could have; None: too many unknown."""
    results = verdicts(cards, lambda cs: _winner(cs, n_player)[0])
    return None if results is None else frozenset(results)


def drawing_verdict(player: list[str], banker: list[str]) -> str | None:
    """None when the draws follow the tableau, else what went wrong (all cards known)."""
    pt, bt = baccarat_total(player[:2]), baccarat_total(banker[:2])
    p_drew, b_drew = len(player) >= 3, len(banker) >= 3
    should_p = player_draws(pt, bt)
    if p_drew != should_p:
        return f"the player hand {'drew a third card' if p_drew else 'stood'} on {pt}, against the banker's {bt}"
    should_b = banker_draws(bt, pt, player[2] if p_drew else None, p_drew)
    if b_drew != should_b:
        third = f"the player's third card being {player[2]}" if p_drew else "the player hand having stood"
        return f"the banker hand {'drew a third card' if b_drew else 'stood'} on {bt}, {third}"
    return None


class Baccarat(GameProcedure):
    game = "baccarat"
    pack_state_type = shoe.ShoePack

    # --- pack procedure ------------------------------------------------------
    def on_pack_event(self, ctx: TableReplay, pack: Pack, ev: Event) -> None:
        shoe.on_pack_event(ctx, pack, ev)

    def settle_pack(self, ctx: TableReplay, pack: Pack) -> None:
        shoe.settle(ctx, pack)

    def on_pack_done(self, ctx: TableReplay, pack: Pack) -> None:
        shoe.check_burn(ctx, pack, None)
        shoe.settle(ctx, pack)

    def on_close(self, ctx: TableReplay) -> None:
        for pack in list(ctx.open_packs()):
            shoe.on_close(ctx, pack)

    def pack_open(self, ctx: TableReplay, pack: Pack) -> bool:
        return shoe.pack_open(pack)

    def pack_columns(self, ctx: TableReplay, pack: Pack) -> dict[str, str | int | None]:
        return shoe.columns(pack)

    # --- the coup --------------------------------------------------------------
    def on_round_start(self, ctx: TableReplay, rnd: Round, ev: Event) -> None:
        pack = ctx.pack(ev.pack_id)
        if pack is not None:
            pack.game_state.coups.append(shoe.Coup(ev.round_id, ctx.table.dealer_pos, ref(ev)))

    def on_card(self, ctx: TableReplay, rnd: Round, ev: Event) -> None:
        pack = ctx.pack(rnd.cards[-1].pack_id)
        if pack is not None and pack.game_state.first_coup is None:
            shoe.on_first_coup_card(ctx, pack, rnd, ev)

    def allowed_targets(self, ctx: TableReplay, rnd: Round, ev: Event) -> tuple[str, ...]:
        dealt = [c.target for c in rnd.cards]
        n = len(dealt)
        if n < 4:
            return (_ORDER[n],)
        if n == 4:
            return ("player", "banker")
        if n == 5 and dealt[4] == "player":
            return ("banker",)
        return ()

    def on_round_end(self, ctx: TableReplay, rnd: Round, ev: Event) -> None:
        if rnd.voided:
            return
        player, banker = _hands(rnd)
        if len(player) < 2 or len(banker) < 2:
            return
        player, banker = player[:3], banker[:3]
        cards = player + banker
        n = len(player)
        answers = verdicts(cards, lambda cs: drawing_verdict(cs[:n], cs[n:]))
        if answers is None or len(answers) > 1:
            ctx.undecided(rnd, "DRAWING_RULE")
            return
        wrong = answers.pop()
        if wrong is not None:
            thirds = [c.ref for c in rnd.cards if c.target in ("player", "banker")]
            ctx.emit("DRAWING_RULE", rnd=rnd, key=(), evidence=thirds,
                     expected="third cards drawn or not as the punto banco tableau says", actual=wrong)

    # the last coup's cards list, how many it held, its hands
    _coup: tuple[list[RoundCard] | None, int, list[str | None], list[str | None]] = (None, 0, [], [])

    def _coup_hands(self, rnd: Round) -> tuple[list[str | None], list[str | None]]:
        """``_hands(rnd)``, kept while the coup gets no card: each payout of a coup asks for it.

        Keyed on the cards list itself and its length, which is enough because a
        round's cards are only ever appended (no entry changes in place)."""
        cards = rnd.cards
        seen, n, player, banker = self._coup
        if seen is not cards or n != len(cards):
            player, banker = _hands(rnd)
            self._coup = (cards, len(cards), player, banker)
        return player, banker

    def payout_candidates(self, ctx: TableReplay, rnd: Round, ev: Event) -> list[tuple[str, float]]:
        player, banker = self._coup_hands(rnd)
        if len(player) < 2 or len(banker) < 2:
            return []
        amount = bet_total(rnd, ev.seat, ev.spot)
        if amount is None:
            return [("no bet", 0.0)]
        results = _winners(tuple(player + banker), len(player))
        if results is None:
            return []
        return sorted({self._settle(w, ev.spot, amount) for w in results})

    def _settle(self, winner: str, spot: str, amount: float) -> tuple[str, float]:
        r = self.ref
        if winner == "tie":
            if spot == "tie":
                return ("win", amount * r.tie_pays)
            if spot in ("player", "banker"):
                return ("push", 0.0)
            return ("lose", -amount)
        if spot == winner:
            return ("win", amount * (r.player_pays if winner == "player" else r.banker_pays))
        return ("lose", -amount)

    def outcome(self, ctx: TableReplay, rnd: Round) -> str | None:
        player, banker = _hands(rnd)
        if rnd.voided or len(player) < 2 or len(banker) < 2 or None in player + banker:
            return None
        winner, pt, bt = _winner([c for c in player + banker if c is not None], len(player))  # all known: list[str]
        return f"{winner} {pt}-{bt}"

    def seats_dealt(self, ctx: TableReplay, rnd: Round) -> list[int]:
        return sorted({b.seat for b in rnd.bets})
