"""Pack-level rules every game shares, and the pack's rows.

``UNSHUFFLED_PACK``, ``PACK_COMPOSITION``, ``SHOE_CARD_MISMATCH``,
``UNACCOUNTED_CARD`` and the within-pack ``UNSHUFFLED_SEQUENCE`` (8 cards in
new-deck order).  Functions here take the replay (``ctx``, a
:class:`pitwatch.rules.table.TableReplay`) and a pack (:class:`pitwatch.rules.state.Pack`).

When each is decided (so that any interleaving of devices gives the same
findings, see :mod:`pitwatch.rules.table`):

* ``UNSHUFFLED_PACK``: a shuffle record (shuffler ``shuffle_completed``,
  dealer ``shuffle`` or ``reshuffle``) of the pack clears it at once; its
  absence is only certain at ``close()`` (a shuffler's report may lag any
  amount), so the finding comes then.  Evidence: the first card the shoe drew
  and the first card the terminal recorded from the pack.
* ``PACK_COMPOSITION``: fires once the pack is played (a card drawn or dealt)
  and a count is known bad.  The shuffler's report is looked at first (its
  own ``decks``); the shoe's ``shoe_loaded`` count only when the shuffler's
  report is in and good, or at ``close()`` (then against the table's
  ``decks``).  Evidence: the bad report (one event), so the finding is the
  same whichever stream came first.
  *Who checks a pack* (decision, issue 30: the spec is silent on how long to
  wait): a pack shuffled only at the table — the dealer's ``shuffle`` by
  ``hand`` or ``riffle``, or a stack rebuilt by ``reshuffle`` (004 H: "mit
  den 3 vorherigen Burn-Karten gemischt", at the table) — is no shuffler's to
  report (events.md: only "a machine shuffle is also seen by the shuffler"),
  so once both card streams have passed it its composition is decided as at
  ``close()`` (the shoe's ``shoe_loaded`` count, if any) instead of waiting
  all night for a report that does not come: a long night's stud table keeps
  only the hand being dealt.  A shuffler report in before that pass counts as
  always; one naming such a pack after it is a straggler for a finished pack
  (the batch merges devices by ``ts``, so a report stamped before the play is
  in before the pass there).  A pack with a machine shuffle, or with no
  shuffle recorded, still waits for the report until ``close()``.
* ``SHOE_CARD_MISMATCH`` / ``UNACCOUNTED_CARD``: from :mod:`pitwatch.rules.alignment`,
  only once both streams have cards of the pack ("only where both streams
  cover the pack").  Keys: (pack, round of the terminal card); an unmatched
  shoe card belongs to the round of the terminal card before it; a burn
  outside rounds has no round (key: the pack).
* ``UNSHUFFLED_SEQUENCE``: the shoe's draws are searched as they come (shoe
  evidence).  The terminal's cards are searched when both card streams have
  passed the pack, only if the shoe showed no run (terminal evidence) — the
  shoe may have read null where the terminal knew the card.

On a table without a shoe (stud, stud8, razz; the reference's ``shoe``) a
pack is created with ``shoe_passed`` set (see :mod:`pitwatch.rules.table`): there is
nothing to match, the terminal's run is searched once the terminal has passed
the pack, and a count waiting for the shoe is decided as at ``close()``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict

from pitwatch.rules import alignment
from pitwatch.rules.cards import RANK_INDEX, new_deck_run
from pitwatch.rules.finding import ref
from pitwatch.rules.state import Pack, PackCard, PackSequence, Ref, ShoeDraw, TermCard
from pitwatch.rules.words import listing
from pitwatch.schemas.events import Event, micros_to_datetime
from pitwatch.wording import plural

if TYPE_CHECKING:
    from pitwatch.rules.table import TableReplay

RUN = 8


def record_shoe_card(ctx: TableReplay, pack: Pack, ev: Event) -> None:
    al = pack.alignment
    draw = ShoeDraw(ev.index, ev.card, ev.event_id, ev.ts, ev.device_id, ev.ts_offset)
    if not alignment.add_shoe(al, draw):
        return
    s, s_round = al.shoe, pack.shoe_rounds
    if len(s) == len(s_round) + 1:
        s_round.append(None)  # the usual case: one draw added
    else:
        s_round.extend([None] * (len(s) - len(s_round)))
    if pack.first_shoe is None:
        pack.first_shoe = ref(ev)
    if not pack.run_found and len(s) >= RUN and _may_end_run(s[-2].card, s[-1].card):
        window = s[-RUN:]
        if new_deck_run([c.card for c in window], RUN) == 0:
            pack.run_found = True
            _run_finding(ctx, pack, [c.ref() for c in window],
                         [(c.index, c.card) for c in window], "the shoe's draws")


def _may_end_run(a: str | None, b: str | None) -> bool:
    """Whether cards ``a``, ``b`` can close a new-deck run (same suit, adjacent ranks): a cheap
    test before looking at the whole window."""
    return a is not None and b is not None and a[1] == b[1] and abs(RANK_INDEX[b[0]] - RANK_INDEX[a[0]]) == 1


def record_term_card(pack: Pack, ev: Event, round_id: str | None, dealer_pos: int) -> int:
    pack.dealt = True
    if pack.first_term is None:
        pack.first_term = ref(ev)
    return alignment.add_term(pack.alignment, TermCard(ev.card, ev.event_id, ev.ts, ev.dealer_id, round_id, dealer_pos,
                                                       ev.device_id, ev.ts_offset))


def _run_finding(ctx: TableReplay, pack: Pack, evidence: list[Ref], cards: list[tuple[int, str | None]],
                 where: str) -> None:
    shown = " ".join(f"{c}" for _i, c in cards)
    ctx.emit("UNSHUFFLED_SEQUENCE", pack=pack, key=(), evidence=evidence,
             expected=f"a shuffled pack: no {RUN} cards of one suit in a row in new-deck order",
             actual=f"{where} {cards[0][0]} to {cards[-1][0]} are in new-deck order: {shown}")


def align(ctx: TableReplay, pack: Pack) -> bool:
    """Advance the matching; returns True when anything was decided."""
    al = pack.alignment
    s, t = al.shoe, al.term
    if not s or not t or alignment.idle(al):
        return False
    outcomes = alignment.step(al)
    if not outcomes:
        return False
    s_round = pack.shoe_rounds
    for kind, si, tj in outcomes:
        if kind == "term_only":
            tc = t[tj]
            ctx.emit("UNACCOUNTED_CARD", pack=pack, round_id=tc.round_id, key=(),
                     evidence=[tc.ref()],
                     expected=TERM_ONLY_EXPECTED,
                     actual=f"the terminal's card {tc.card or '(unreadable)'} was never drawn by the shoe")
            continue
        assert si is not None       # match, mismatch, shoe_only: a shoe draw
        if kind == "match":
            s_round[si] = t[tj].round_id
        elif kind == "mismatch":
            s_round[si] = t[tj].round_id
            sc, tc = s[si], t[tj]
            ctx.emit("SHOE_CARD_MISMATCH", pack=pack, round_id=tc.round_id, key=(),
                     evidence=[sc.ref(), tc.ref()],
                     expected=same_card_expected(sc.index),
                     actual=f"the shoe read {sc.card}; the terminal recorded {tc.card}")
        else:   # shoe_only
            s_round[si] = t[tj].round_id if tj >= 0 else None
            if s[si].event_id is not None:
                sc = s[si]
                ctx.emit("UNACCOUNTED_CARD", pack=pack, round_id=s_round[si], key=(),
                         evidence=[sc.ref()],
                         expected=SHOE_ONLY_EXPECTED,
                         actual=f"the shoe's draw {sc.index} ({sc.card or 'unreadable'}) was never recorded by the "
                                "dealer terminal")
    return True


def aligned_through(pack: Pack, tpos: int) -> bool:
    """Every finding about terminal card ``tpos`` (and shoe cards belonging to its round) is decided."""
    al = pack.alignment
    if pack.shoe_passed and pack.term_passed and (not al.shoe or not al.term):
        return True
    return al.term_at > tpos + 1 or alignment.complete(al)


# what the card-stream findings expect, also the live service's provisional alerts' (pitwatch.live.provisional)
SHOE_ONLY_EXPECTED = "every card the shoe draws should be recorded by the dealer terminal"
TERM_ONLY_EXPECTED = "every card the dealer terminal records should have been drawn by the shoe"


def same_card_expected(draw: int) -> str:
    """SHOE_CARD_MISMATCH's ``expected`` at the shoe's draw ``draw``."""
    return f"the shoe and the dealer terminal should show the same card at draw {draw}"


class UnshuffledPack(TypedDict):
    """What :func:`unshuffled_pack` gives: ``ctx.emit``'s keywords of the UNSHUFFLED_PACK finding."""

    evidence: list[Ref]
    expected: str
    actual: str


def unshuffled_pack(pack: Pack) -> UnshuffledPack:
    """The UNSHUFFLED_PACK finding's evidence, expected and actual for a pack closed with no shuffle (the one
    builder: ``settle`` raises it at ``close()``, the live service early, ``pitwatch.live.early``)."""
    return {"evidence": [r for r in (pack.first_shoe, pack.first_term) if r is not None],
            "expected": "the pack should be shuffled before play",
            "actual": "cards were dealt from it with no shuffle recorded, by the shuffler or the dealer"}


def settle(ctx: TableReplay, pack: Pack, closing: bool = False) -> None:
    """Decide the pack-level shared rules whose facts are final now."""
    if pack.unshuffled == "open":
        if pack.shuffles:
            pack.unshuffled = "done"
        elif closing:
            pack.unshuffled = "done"
            finding = unshuffled_pack(pack)
            if finding["evidence"]:
                ctx.emit("UNSHUFFLED_PACK", pack=pack, key=(), **finding)
    if pack.composition == "open":
        _composition(ctx, pack, closing)
    if (pack.shoe_passed and pack.term_passed or closing) and not pack.run_found:
        pack.run_found = True  # decided either way
        t = pack.alignment.term
        start = new_deck_run([c.card for c in t], RUN)
        if start is not None:
            w = t[start:start + RUN]
            _run_finding(ctx, pack, [c.ref() for c in w],
                         [(start + k + 1, c.card) for k, c in enumerate(w)], "the terminal's cards")


def _composition(ctx: TableReplay, pack: Pack, closing: bool) -> None:
    played = pack.first_shoe is not None or pack.first_term is not None
    if not played:
        if closing:
            ctx.composition_decided(pack)
        return
    per_deck = ctx.ref.cards_per_deck
    sh = pack.shuffler
    if sh is not None:
        bad: list[str] = []
        if sh.missing:
            bad.append(f"{' '.join(sh.missing)} missing")
        if sh.extra:
            bad.append(f"{' '.join(sh.extra)} extra")
        if sh.card_count != sh.decks * per_deck:
            bad.append(f"{plural(sh.card_count, 'card')} counted")
        if bad:
            ctx.composition_decided(pack)
            ctx.emit("PACK_COMPOSITION", pack=pack, key=(), evidence=[sh.ref],
                     expected=f"{plural(sh.decks * per_deck, 'card')} ({plural(sh.decks, 'deck')}), "
                              "none missing or extra",
                     actual="the shuffler's check found " + listing(bad))
            return
    elif not (closing or pack.shoe_passed and pack.term_passed and shuffled_at_the_table(pack)):
        return
    sl = pack.shoe_loaded
    if sl is None and not (pack.shoe_seen or pack.shoe_passed or closing):
        return
    ctx.composition_decided(pack)
    decks = sh.decks if sh is not None else ctx.table.decks
    if sl is not None and decks and sl.card_count != decks * per_deck:
        ctx.emit("PACK_COMPOSITION", pack=pack, key=(), evidence=[sl.ref],
                 expected=f"{plural(decks * per_deck, 'card')} ({plural(decks, 'deck')}) loaded in the shoe",
                 actual=f"the shoe counted {plural(sl.card_count, 'card')} loaded")


def shuffled_at_the_table(pack: Pack) -> bool:
    """The pack's shuffles are all the table's own (hand, riffle, a rebuilt stack): no shuffler report
    is to come (see ``PACK_COMPOSITION`` above)."""
    shuffles = pack.shuffles
    return bool(shuffles) and all(sh.by == "reshuffle" or sh.by == "dealer" and sh.method in ("hand", "riffle")
                                  for sh in shuffles)


def final(ctx: TableReplay, pack: Pack, closing: bool) -> bool:
    return (pack.shoe_passed and pack.term_passed and pack.unshuffled == "done"
            and pack.composition == "done" and pack.run_found
            and (closing or aligned_through(pack, len(pack.alignment.term)))
            and (closing or not (ctx.proc.pack_open(ctx, pack) or any(c.pack_open(ctx, pack) for c in ctx.checks))))


def row(ctx: TableReplay, pack: Pack) -> dict[str, Any]:
    sh, sl = pack.shuffler, pack.shoe_loaded
    dealer_methods = [sh_.method for sh_ in pack.shuffles if sh_.by == "dealer"]
    method = dealer_methods[0] if dealer_methods else ("machine" if sh and not sh.preshuffled else None)
    shuffle_ts = [sh_.ref.ts for sh_ in pack.shuffles]
    s = pack.alignment.shoe
    raw, use = ctx.id_use(pack.pack_id)
    assert pack.min_ts is not None, "the event that opens a pack sets min_ts"
    out = {
        "table_id": ctx.table_id, "game": ctx.game, "pack_id": raw, "pack_use": use,
        "decks": sh.decks if sh else ctx.table.decks,
        "card_count": sh.card_count if sh else (sl.card_count if sl else None),
        "shuffle_method": method, "preshuffled": sh.preshuffled if sh else None,
        "shuffled_at": micros_to_datetime(min(shuffle_ts)) if shuffle_ts else None,
        "cards_drawn": s[-1].index if s else len(pack.alignment.term),
        "rounds_played": len(pack.rounds), "stub_counts": list(pack.stub_counts),
        "stub_remaining": pack.stub_remaining, "findings": pack.findings,
        "gaming_day": ctx.gaming_day(pack.min_ts),
    }
    out.update(ctx.proc.pack_columns(ctx, pack))
    return out


def sequence(ctx: TableReplay, pack: Pack) -> PackSequence:
    """The pack's drawn cards by index (the shoe's when it drew any, else the terminal's), as it finishes."""
    s, t = pack.alignment.shoe, pack.alignment.term
    if s:
        cards = [PackCard(c.index, c.card, c.event_id, c.ts, c.device_id, c.ts_offset)
                 for c in s if c.event_id is not None and c.ts is not None]
        source = "shoe"
    else:
        cards = [PackCard(k + 1, c.card, c.event_id, c.ts, c.device_id, c.ts_offset) for k, c in enumerate(t)]
        source = "terminal"
    # pack_id: the use key, what tells the packs apart (pitwatch.rules.repeated_runs shows the id and use)
    return PackSequence(ctx.table_id, pack.pack_id, ctx.id_use(pack.pack_id)[1], ctx.game,
                        cards[0].ts if cards else None, source, cards)
