"""Baccarat's pack procedure (document 003, rules 4.1-4.9): cut, cutting card, riffle, burn, last coup.

Functions called by :class:`pitwatch.rules.baccarat.Baccarat`; the pack's state is
``pack.game_state``, a :class:`ShoePack` (the plug-in's ``pack_state_type``).  Interpretations (also in docs/engine.md):

* ``CUT_OFFER`` (4.3, 4.4): "the first player to the table" is, among the
  seats occupied when the cut is offered, the one seated earliest; it
  applies to the first pack the terminal names after ``table_opened``.  With
  no seat occupied the designated person is the supervisor.  After a
  refusal the next offer must go to the next occupied seat after the
  refusing one (ascending, wrapping) not yet offered, or to the supervisor
  once every occupied seat was offered.  A cut with no offer at all is "made
  by someone other than the last person offered".
* ``CUT_CARD_MISMATCH`` (4.6) compares with the last insertion recorded
  before the terminal's first card of the pack.
* ``RIFFLE_SKIPPED`` (4.2): the pack is pre-shuffled when the shuffler says
  ``preshuffled``; with no shuffler report by the end of input, when the
  terminal recorded no machine or hand ``shuffle`` of it.  Only the first
  cut of the pack is looked at.
* ``BURN_SKIPPED`` / ``BURN_COUNT`` (4.7, 4.8) read the terminal's burns of
  the pack before its first coup card.  Burns after the first must be face
  down and exactly its value; a face-up one among them breaks the count.  An
  unreadable first burn card leaves ``BURN_COUNT`` undecided (recorded on
  the pack's first coup).
* ``LAST_COUP_NOT_ANNOUNCED`` / ``COUPS_AFTER_CUT_CARD`` (4.9): coup *k* is
  the round of the shoe card ``index`` + 1 through the card matching (never
  by time); "after the cutting card" is read on the terminal as after coup
  *k* started.  Rule 4.10, cited by 4.9, is not in the document: ignored.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from pitwatch.rules.finding import ref
from pitwatch.rules.state import Pack, Ref, Round
from pitwatch.rules.words import cards, place, places
from pitwatch.schemas.events import Event

if TYPE_CHECKING:
    from pitwatch.rules.table import TableReplay


class Offer(msgspec.Struct, array_like=True, gc=False):
    """The cut offered ``to`` a seat (``seat:N``) or the supervisor."""

    to: str
    ref: Ref


class Cut(msgspec.Struct, gc=False):
    """The pack's first cut: who cut it, at which card of the stack."""

    by: str
    position: int
    stack_size: int
    ref: Ref


class CutCardInsert(msgspec.Struct, gc=False):
    """The cutting card inserted ``from_back`` cards from the back of the ``stack_size`` cards."""

    from_back: int
    stack_size: int
    ref: Ref


class RiffleCandidate(msgspec.Struct, array_like=True, gc=False):
    """A riffle requested and the first cut that followed with no riffle shuffle between them."""

    request: Ref
    cut: Ref


class CutCardDrawn(msgspec.Struct, gc=False):
    """The shoe's cutting card, which came out after shoe card ``index``."""

    index: int
    ref: Ref


class Burn(msgspec.Struct, array_like=True, gc=False):
    """A burn card of the pack dealt before its first coup (``card`` None: unreadable)."""

    face: str
    card: str | None
    ref: Ref


class Coup(msgspec.Struct, array_like=True, gc=False):
    """A coup dealt from the pack: its round, where it started in the terminal's stream."""

    round_id: str
    dealer_pos: int
    ref: Ref


class Announce(msgspec.Struct, array_like=True, gc=False):
    """A \"last coup\" announcement and its place in the terminal's stream."""

    dealer_pos: int
    ref: Ref


class ShoeChecks(msgspec.Struct, gc=False):
    """The pack's cross-stream checks, each ``open`` until decided (``done``)."""

    cut_card: str = "open"
    riffle: str = "open"
    last_coup: str = "open"
    after_cut: str = "open"
    burn: str = "open"

    def close_all(self) -> None:
        self.cut_card = self.riffle = self.last_coup = self.after_cut = self.burn = "done"


class ShoePack(msgspec.Struct, gc=False):
    """What the pack procedure keeps of one pack: the cut offers and refusals, the cut, the cutting
    card (inserted by the dealer, drawn by the shoe), a riffle request, the burn before the first
    coup, the coups dealt from the pack and the \"last coup\" announcements."""

    offers: list[Offer] = msgspec.field(default_factory=list)
    refused: list[str] = msgspec.field(default_factory=list)
    cut: Cut | None = None
    insert: CutCardInsert | None = None
    riffle_req: Ref | None = None
    riffle_candidate: RiffleCandidate | None = None
    cut_card: CutCardDrawn | None = None
    burns: list[Burn] = msgspec.field(default_factory=list)
    first_coup: str | None = None
    coups: list[Coup] = msgspec.field(default_factory=list)
    announces: list[Announce] = msgspec.field(default_factory=list)
    checks: ShoeChecks = msgspec.field(default_factory=ShoeChecks)


def on_pack_event(ctx: TableReplay, pack: Pack, ev: Event) -> None:
    g: ShoePack = pack.game_state
    t = ev.type
    if t == "cut_offered":
        _offer(ctx, pack, g, ev)
    elif t == "cut_refused":
        g.refused.append(ev.by)
    elif t == "cut":
        _cut(ctx, pack, g, ev)
    elif t == "cut_card_inserted":
        if ev.from_back < ctx.ref.cut_card_min_from_back:
            ctx.emit("CUT_CARD_PLACEMENT", pack=pack, key=(), evidence=[ref(ev)],
                     expected=f"the cutting card inserted at least {cards(ctx.ref.cut_card_min_from_back)} "
                              "from the back of the stack",
                     actual=f"it was inserted {cards(ev.from_back)} from the back")
        if not pack.dealt:
            g.insert = CutCardInsert(ev.from_back, ev.stack_size, ref(ev))
    elif t == "riffle_requested":
        if g.riffle_req is None and g.cut is None:
            g.riffle_req = ref(ev)
    elif t == "shuffle":
        if ev.method == "riffle" and g.cut is None:
            g.riffle_req = None  # the request was honoured
    elif t == "cut_card_drawn":
        if g.cut_card is None:
            g.cut_card = CutCardDrawn(ev.index, ref(ev))
    elif t == "last_coup_announced":
        g.announces.append(Announce(ctx.table.dealer_pos, ref(ev)))
    elif t == "card_dealt" and ev.target == "burn" and g.first_coup is None:
        g.burns.append(Burn(ev.face, ev.card, ref(ev)))


def _designated(ctx: TableReplay, pack: Pack) -> str:
    seated = ctx.table.seated
    if not seated:
        return "supervisor"
    if pack.open_ordinal == 1:
        return f"seat:{min(seated, key=lambda s: s.arrival).seat}"
    return f"seat:{min(s.seat for s in seated)}"


def _next_after(occupied: list[int], offered: list[str], refused_by: str) -> str:
    if refused_by.startswith("seat:"):
        n = int(refused_by[5:])
        ring = [s for s in occupied if s > n] + [s for s in occupied if s <= n]
    else:
        ring = occupied
    for s in ring:
        if f"seat:{s}" not in offered:
            return f"seat:{s}"
    return "supervisor"


def _offer(ctx: TableReplay, pack: Pack, g: ShoePack, ev: Event) -> None:
    offered = [o.to for o in g.offers]
    if not offered:
        want = _designated(ctx, pack)
        why = "the designated player" if want != "supervisor" else "as no player is seated"
    else:
        want = _next_after(ctx.occupied(), offered, g.refused[-1] if g.refused else offered[-1])
        why = ("the next occupied seat clockwise after the refusal" if want != "supervisor"
               else "as every occupied seat was offered the cut")
    g.offers.append(Offer(ev.to, ref(ev)))
    if ev.to != want:
        ctx.emit("CUT_OFFER", pack=pack, key=(), evidence=[ref(ev)],
                 expected=f"the cut offered to {place(want)}, {why}", actual=f"it was offered to {place(ev.to)}")


def _cut(ctx: TableReplay, pack: Pack, g: ShoePack, ev: Event) -> None:
    first = g.cut is None
    if first:
        g.cut = Cut(ev.by, ev.position, ev.stack_size, ref(ev))
        if g.riffle_req is not None:
            g.riffle_candidate = RiffleCandidate(g.riffle_req, ref(ev))
    offered = [o.to for o in g.offers]
    if ev.by == "supervisor" and any(f"seat:{s}" not in offered for s in ctx.occupied()):
        missed = [f"seat:{s}" for s in ctx.occupied() if f"seat:{s}" not in offered]
        ctx.emit("CUT_OFFER", pack=pack, key=(), evidence=[ref(ev)],
                 expected="the supervisor cuts only after every occupied seat refused the cut",
                 actual=f"the supervisor cut, and {places(missed, 'and')} {'was' if len(missed) == 1 else 'were'} "
                        "never offered it")
    elif not offered or ev.by != offered[-1]:
        ctx.emit("CUT_OFFER", pack=pack, key=(), evidence=[ref(ev)],
                 expected=(f"the cut made by the last person offered it, {place(offered[-1])}" if offered
                           else "the cut made by a person it was offered to"),
                 actual=f"{place(ev.by)} cut" + ("" if offered else ", and nobody was offered the cut"))
    lo, hi = ctx.ref.cut_min_from_end, ev.stack_size - ctx.ref.cut_min_from_end
    if ev.position < lo or ev.position > hi:
        ctx.emit("CUT_PLACEMENT", pack=pack, key=(), evidence=[ref(ev)],
                 expected=f"the cut at least one deck from either end: between card {lo} and card {hi} "
                          f"of the {ev.stack_size}",
                 actual=f"the stack was cut at card {ev.position}")


def on_first_coup_card(ctx: TableReplay, pack: Pack, rnd: Round, ev: Event) -> None:
    """The first coup of the pack is being dealt: the burn is complete (4.7)."""
    g: ShoePack = pack.game_state
    if g.first_coup is not None:
        return
    g.first_coup = rnd.round_id
    if not g.burns:
        g.checks.burn = "done"
        ctx.emit("BURN_SKIPPED", pack=pack, key=(), evidence=[ref(ev)],
                 expected="the dealer burns cards before the first coup of the pack",
                 actual="the first coup was dealt with no burn since the pack was loaded")
        return
    check_burn(ctx, pack, rnd)


def _burns(n: int) -> str:
    return "no face-down burn cards" if n == 0 else ("1 face-down burn card" if n == 1 else f"{n} face-down burn cards")


def check_burn(ctx: TableReplay, pack: Pack, rnd: Round | None) -> None:
    g: ShoePack = pack.game_state
    if g.checks.burn == "done" or not g.burns:
        return
    g.checks.burn = "done"
    first, rest = g.burns[0], g.burns[1:]
    card = first.card
    evidence = [b.ref for b in g.burns]
    if first.face != "up":
        ctx.emit("BURN_COUNT", pack=pack, key=(), evidence=evidence[:1],
                 expected="the first burn card drawn face up", actual="the first burn card was drawn face down")
        return
    if card is None:
        if rnd is not None:
            ctx.undecided(rnd, "BURN_COUNT")
        return
    value = ctx.ref.burn_value(card[0])
    down = sum(1 for b in rest if b.face == "down")
    if down != value or len(rest) != value:
        ctx.emit("BURN_COUNT", pack=pack, key=(), evidence=evidence,
                 expected=f"{_burns(value)} after the first burn card, {card}, as many as its value",
                 actual=f"{_burns(down)} followed it" + (f", and {len(rest) - down} face up" if len(rest) != down else ""))


def settle(ctx: TableReplay, pack: Pack) -> None:
    """Cross-stream checks of the pack, each decided once its facts are final."""
    g: ShoePack = pack.game_state
    checks, cc = g.checks, g.cut_card
    if checks.cut_card == "open" and cc is not None and (pack.dealt or pack.term_passed):
        checks.cut_card = "done"
        ins = g.insert
        if ins is not None and cc.index != ins.stack_size - ins.from_back:
            ctx.emit("CUT_CARD_MISMATCH", pack=pack, key=(), evidence=[cc.ref, ins.ref],
                     expected=f"the cutting card to come out after card {ins.stack_size - ins.from_back}, "
                              f"where the dealer recorded it ({cards(ins.from_back)} from the back of "
                              f"{ins.stack_size})",
                     actual=f"the shoe's cutting card came out after card {cc.index}")
    if checks.riffle == "open" and (g.riffle_candidate is not None or pack.term_passed):
        _riffle(ctx, pack, g, closing=False)
    if cc is not None and "open" in (checks.last_coup, checks.after_cut):
        _last_coup(ctx, pack, g, cc)
    elif cc is None and pack.shoe_passed:
        checks.last_coup = checks.after_cut = checks.cut_card = "done"


def _riffle(ctx: TableReplay, pack: Pack, g: ShoePack, closing: bool) -> None:
    cand = g.riffle_candidate
    if cand is None:
        if pack.term_passed or closing:
            g.checks.riffle = "done"
        return
    sh = pack.shuffler
    if sh is not None:
        pre, evidence = sh.preshuffled, [cand.request, cand.cut, sh.ref]
    elif closing:
        pre = not any(s.by == "dealer" and s.method in ("machine", "hand") for s in pack.shuffles)
        evidence = [cand.request, cand.cut]
    else:
        return
    g.checks.riffle = "done"
    if pre:
        ctx.emit("RIFFLE_SKIPPED", pack=pack, key=(), evidence=evidence,
                 expected="a riffle shuffle of the pre-shuffled cards before the cut, as requested",
                 actual="the cards were cut with no riffle shuffle after the request")


def _last_coup(ctx: TableReplay, pack: Pack, g: ShoePack, cut_card: CutCardDrawn) -> None:
    idx = cut_card.index
    al = pack.alignment
    s = al.shoe
    checks = g.checks
    if len(s) <= idx or al.shoe_at <= idx:
        if pack.shoe_passed and pack.term_passed and (len(s) <= idx or not al.term):
            checks.last_coup = checks.after_cut = "done"
        return
    coup_k = pack.shoe_rounds[idx]
    rounds = [c.round_id for c in g.coups]
    if coup_k not in rounds:
        checks.last_coup = checks.after_cut = "done"
        return
    k = rounds.index(coup_k)
    cc = cut_card.ref
    if checks.last_coup == "open":
        if len(g.coups) > k + 1:
            checks.last_coup = "done"
            start, nxt = g.coups[k].dealer_pos, g.coups[k + 1]
            if not any(start < a.dealer_pos < nxt.dealer_pos for a in g.announces):
                ctx.emit("LAST_COUP_NOT_ANNOUNCED", pack=pack, key=(), evidence=[cc, nxt.ref],
                         expected=f"\"last coup\" announced after coup {coup_k}, in which the cutting card came out",
                         actual=f"coup {nxt.round_id} started with no \"last coup\" announced")
        elif pack.term_passed:
            checks.last_coup = "done"
    if checks.after_cut == "open":
        if len(g.coups) > k + 2:
            checks.after_cut = "done"
            extra = g.coups[k + 2]
            ctx.emit("COUPS_AFTER_CUT_CARD", pack=pack, key=(), evidence=[cc, extra.ref],
                     expected=f"one more coup after coup {coup_k}, in which the cutting card came out, "
                              "then the cards replaced or reshuffled",
                     actual=f"coup {extra.round_id} was dealt from the pack as well")
        elif pack.term_passed:
            checks.after_cut = "done"


def on_close(ctx: TableReplay, pack: Pack) -> None:
    g: ShoePack = pack.game_state
    if g.checks.riffle == "open":
        _riffle(ctx, pack, g, closing=True)
    check_burn(ctx, pack, None)
    settle(ctx, pack)
    g.checks.close_all()


def pack_open(pack: Pack) -> bool:
    c: ShoeChecks = pack.game_state.checks
    return "open" in (c.cut_card, c.riffle, c.last_coup, c.after_cut)   # the burn never holds the pack back


def columns(pack: Pack) -> dict[str, str | int | None]:
    g: ShoePack = pack.game_state
    cut, ins, cc = g.cut, g.insert, g.cut_card
    return {
        "cut_by": cut.by if cut else None, "cut_position": cut.position if cut else None,
        "cut_stack_size": cut.stack_size if cut else None,
        "cut_card_from_back": ins.from_back if ins else None,
        "cut_card_surfaced_at": cc.index if cc else None,
        "burn_first_card": g.burns[0].card if g.burns else None,
        "burn_count": len(g.burns) if g.burns else None,
    }
