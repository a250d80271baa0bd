"""The engine's state between two events, as typed records.

Everything :class:`pitwatch.rules.table.TableReplay` keeps for a table — its
packs, rounds, the card matching of each pack, the uses of pack and round ids —
is one :class:`Table` record made of the records below, and each game plug-in
keeps its own records (``Pack.game_state``, ``Round.game_state``,
``Table.game_state``: see :mod:`pitwatch.rules.game`).

The records are :class:`msgspec.Struct` classes, chosen by measurement
(``bench/engine.py``, figures in ``bench/README.md``): a Struct is smaller
than a dict or a slotted dataclass, builds faster, and ``msgspec.json``
writes and reads a whole table's state in one call, checking every field's
type on the way in (a damaged checkpoint is refused, never half-loaded).
``gc=False`` where a record holds no cycle (none of them does: the state is
a tree), so the collector never walks the live service's millions of cards.

Two encodings, named by the record's class options:

* *positional* records (``array_like=True``): a shoe draw, a terminal card,
  a round's card, a bet … are written as JSON arrays, in field order — the
  same arrays versions 1 and 2 wrote, so their checkpoints read without a
  copy.  A field added later has a default, so an older, shorter array
  still reads (no length checks in the code);
* *named* records: a table, a pack, a round, as JSON objects.  Where a
  field's name in the code differs from the key older versions wrote, the
  key is kept (``rename``) so old states still read.

:data:`STATE_VERSION` is the version of this layout; older versions are
brought to it by :mod:`pitwatch.rules.migrations`.
"""
from __future__ import annotations

from typing import Any

import msgspec

STATE_VERSION = 3


class Ref(msgspec.Struct, array_like=True, frozen=True, gc=False):
    """The evidence of one event: what a finding needs of it (:func:`pitwatch.rules.finding.ref`).
    ``dealer_id`` only for the terminal's events; ``device_id`` None in a version-1 state;
    ``ts_offset`` None where the device wrote no offset."""

    event_id: str
    ts: int
    dealer_id: str | None = None
    device_id: str | None = None
    ts_offset: int | None = None


class ShoeDraw(msgspec.Struct, array_like=True, gc=False):
    """One ``card_drawn`` of the shoe: its ``index`` in the pack.  An index the shoe skipped
    (its event lost upstream) is kept as a draw with every other field None: a card was drawn."""

    index: int
    card: str | None = None
    event_id: str | None = None
    ts: int | None = None
    device_id: str | None = None
    ts_offset: int | None = None

    def ref(self) -> Ref:
        assert self.event_id is not None and self.ts is not None, "the draw of a lost event has no evidence"
        return Ref(self.event_id, self.ts, None, self.device_id, self.ts_offset)


class TermCard(msgspec.Struct, array_like=True, gc=False):
    """One ``card_dealt`` of the terminal (burns included), in the pack's dealing order:
    ``dealer_pos`` is its place in the terminal's stream of the table."""

    card: str | None
    event_id: str
    ts: int
    dealer_id: str | None
    round_id: str | None
    dealer_pos: int
    device_id: str | None = None
    ts_offset: int | None = None

    def ref(self) -> Ref:
        return Ref(self.event_id, self.ts, self.dealer_id, self.device_id, self.ts_offset)


class DeviceSeq(msgspec.Struct, array_like=True, gc=False):
    """A device's last event as SEQ_GAP keeps it (:class:`pitwatch.rules.sequence.SeqTracker`);
    ``ts_offset`` is None in a state written before it."""

    seq: int
    table_id: str | None
    event_id: str | None
    ts: int | None
    ts_offset: int | None = None


class Alignment(msgspec.Struct, gc=False):
    """The card matching of one pack (:mod:`pitwatch.rules.alignment`): the shoe's draws and the
    terminal's cards, how far each is matched (``shoe_at``, ``term_at``), and whether each stream
    has passed the pack (its cards are all in)."""

    shoe: list[ShoeDraw] = msgspec.field(default_factory=list, name="s")
    term: list[TermCard] = msgspec.field(default_factory=list, name="t")
    shoe_at: int = msgspec.field(default=0, name="i")
    term_at: int = msgspec.field(default=0, name="j")
    shoe_passed: bool = msgspec.field(default=False, name="s_done")
    term_passed: bool = msgspec.field(default=False, name="t_done")


class Shuffle(msgspec.Struct, array_like=True, gc=False):
    """One shuffle of a pack: ``by`` ``dealer`` (the terminal's ``shuffle``, ``method`` as it
    says), ``shuffler`` (the machine's report) or ``reshuffle`` (a round's ``reshuffle``)."""

    by: str
    method: str | None
    ref: Ref


class ShufflerReport(msgspec.Struct, gc=False):
    """The automatic shuffler's ``shuffle_completed`` of a pack (its first one)."""

    decks: int
    card_count: int
    missing: list[str]
    extra: list[str]
    preshuffled: bool
    ref: Ref


class ShoeLoad(msgspec.Struct, gc=False):
    """The shoe's ``shoe_loaded`` of a pack."""

    card_count: int
    ref: Ref


class PackCard(msgspec.Struct, array_like=True, frozen=True, gc=False):
    """One drawn card of a pack's sequence (the shoe's draw, or the terminal's card when the shoe drew
    none, numbered from 1), as a pack sequence's ``cards`` array holds it (one written before
    ``device_id`` / ``ts_offset`` has shorter arrays: those read as None)."""

    index: int
    card: str | None
    event_id: str
    ts: int
    device_id: str | None = None
    ts_offset: int | None = None


class PackSequence(msgspec.Struct, gc=False):
    """A finished pack's drawn cards by index, for the cross-pack ``UNSHUFFLED_SEQUENCE``
    (:mod:`pitwatch.rules.repeated_runs`), taken when the pack finished: its ``game`` and use then.
    ``source``: ``shoe`` or ``terminal``; ``pack_id`` the use key."""

    table_id: str
    pack_id: str
    pack_use: int
    game: str | None
    first_ts: int | None
    source: str
    cards: list[PackCard]


class Pack(msgspec.Struct, gc=False):
    """One use of a pack at a table (``pack_id`` is the use key, :mod:`pitwatch.rules.uses`).

    ``alignment.shoe_passed`` / ``term_passed`` say whether each card stream has passed the
    pack (:attr:`shoe_passed`, :attr:`term_passed`); ``shoe_rounds`` is the round each aligned
    shoe draw went to; ``unshuffled`` and ``composition`` are ``open`` until their rule is decided
    (``done``); ``fired`` the keys of the findings raised on the pack (once per key)."""

    pack_id: str
    use: int = 1
    min_ts: int | None = None
    open_ordinal: int | None = None
    shuffles: list[Shuffle] = msgspec.field(default_factory=list)
    shuffler: ShufflerReport | None = None
    shoe_loaded: ShoeLoad | None = None
    shoe_seen: bool = False
    alignment: Alignment = msgspec.field(default_factory=Alignment, name="al")
    shoe_rounds: list[str | None] = msgspec.field(default_factory=list, name="s_round")
    first_shoe: Ref | None = None
    first_term: Ref | None = None
    rounds: list[str] = msgspec.field(default_factory=list)
    dealt: bool = False
    unshuffled: str = "open"
    composition: str = "open"
    run_found: bool = False
    shoe_silent_decided: bool = msgspec.field(default=False, name="shoe_silent")
    stub_counts: list[int | None] = msgspec.field(default_factory=list)
    stub_remaining: int | None = None
    fired: list[list[str | None]] = msgspec.field(default_factory=list)
    findings: int = 0
    game_state: Any = msgspec.field(default=None, name="g")

    @property
    def shoe_passed(self) -> bool:
        """The shoe has passed the pack: all its draws of it are in."""
        return self.alignment.shoe_passed

    @property
    def term_passed(self) -> bool:
        """The terminal has passed the pack: all its cards of it are in."""
        return self.alignment.term_passed

    def last_draw(self) -> ShoeDraw | None:
        """The shoe's latest draw of the pack (None before its first)."""
        shoe = self.alignment.shoe
        return shoe[-1] if shoe else None

    def last_term_card(self) -> TermCard | None:
        """The terminal's latest card of the pack (None before its first)."""
        term = self.alignment.term
        return term[-1] if term else None


class RoundCard(msgspec.Struct, array_like=True, gc=False):
    """One ``card_dealt`` of a round, burns included, in dealing order: where it went
    (``target``, ``hand``), ``face``, the ``card``, the ``street`` (stud games), and the pack
    (use key) and place (``term_pos``, in the pack's terminal cards) it was dealt from."""

    target: str
    hand: int
    face: str | None
    card: str | None
    street: int | None
    ref: Ref
    pack_id: str | None = None
    term_pos: int | None = None


class Bet(msgspec.Struct, array_like=True, gc=False):
    """A ``bet_placed`` of a round (``all_in``: the player's whole stack)."""

    seat: int
    spot: str
    amount: float
    all_in: bool
    ref: Ref


class Payout(msgspec.Struct, array_like=True, gc=False):
    """A ``payout`` of a round: how the dealer settled a seat's bet on a spot (``hand``: 1 but after a split)."""

    seat: int
    spot: str
    hand: int
    result: str
    amount: float
    ref: Ref


class Action(msgspec.Struct, array_like=True, gc=False):
    """A ``player_action`` of a round (stud games: on a ``street``)."""

    seat: int
    hand: int
    action: str
    amount: float | None
    all_in: bool
    street: int | None
    ref: Ref


class PackReach(msgspec.Struct, array_like=True, gc=False):
    """How far into a pack's terminal cards a round was dealt (its last ``term_pos`` there)."""

    pack_id: str
    term_pos: int


class RoundTail(msgspec.Struct, array_like=True, gc=False):
    """Where a finished round's cards end in each pack (cached until another card comes)."""

    cards: int
    reach: list[PackReach]


class Round(msgspec.Struct, gc=False):
    """One use of a round at a table (``round_id`` is the use key).  ``pack_id``: the pack (use
    key) it is dealt from; ``packs``: every pack it took a card from.  Times in micros."""

    round_id: str
    use: int = 1
    pack_id: str | None = None
    packs: list[str] = msgspec.field(default_factory=list)
    game: str | None = None
    dealer_id: str | None = None
    started: int | None = None
    start_ref: Ref | None = None
    start_pos: int | None = None
    ended: int | None = None
    first_ts: int | None = None
    bets: list[Bet] = msgspec.field(default_factory=list)
    bets_closed: Ref | None = None
    cards: list[RoundCard] = msgspec.field(default_factory=list)
    payouts: list[Payout] = msgspec.field(default_factory=list)
    actions: list[Action] = msgspec.field(default_factory=list)
    voided: bool = False
    done: bool = False
    tail: RoundTail | None = None
    misdeal_checked: bool = False
    fired: list[list[str | None]] = msgspec.field(default_factory=list)
    findings: int = 0
    undecided: list[str] = msgspec.field(default_factory=list)
    game_state: Any = msgspec.field(default=None, name="g")


class Seat(msgspec.Struct, array_like=True, gc=False):
    """An occupied seat and the order players sat down in."""

    seat: int
    arrival: int


class IdUse(msgspec.Struct, array_like=True, gc=False):
    """A stream's latest use of an id: its number ``n`` and how far the stream is with it
    (:data:`pitwatch.rules.uses.NAMED` … ``LEFT``, or the round statuses)."""

    n: int
    status: int


class KeyUse(msgspec.Struct, array_like=True, gc=False):
    """The id and use number behind a use key of a second or later use (``P7#2``)."""

    raw: str
    n: int


class Uses(msgspec.Struct, gc=False):
    """Each stream's uses of pack ids (shuffler, shoe, terminal) and round ids (round), the most
    recently started last (:mod:`pitwatch.rules.uses`)."""

    shuffler: dict[str, int] = msgspec.field(default_factory=dict)
    shoe: dict[str, IdUse] = msgspec.field(default_factory=dict)
    term: dict[str, IdUse] = msgspec.field(default_factory=dict)
    round: dict[str, IdUse] = msgspec.field(default_factory=dict)

    def of(self, stream: str) -> dict[str, IdUse]:
        """The uses of ``shoe``, ``term`` or ``round`` (the shuffler's are bare numbers: :attr:`shuffler`)."""
        if stream == "shoe":
            return self.shoe
        if stream == "term":
            return self.term
        if stream == "round":
            return self.round
        raise ValueError(f"no stream {stream!r} keeps use records")


class UnknownDevice(msgspec.Struct, array_like=True, gc=False):
    """An event of a device the registry does not list, waiting for the table's game."""

    device_id: str
    source: str
    type: str
    ref: Ref


class FeedRecord(msgspec.Struct, gc=False):
    """The feed-health check's record of a table (:mod:`pitwatch.rules.feed_health`)."""

    shoe_ts: int | None = None
    reported: list[str | None] = msgspec.field(default_factory=list)
    pending: list[UnknownDevice] = msgspec.field(default_factory=list)


class Table(msgspec.Struct, gc=False):
    """Everything the replay of one table keeps between two events.

    ``seated``: occupied seats; ``prep_pack`` the pack being prepared, ``play_pack`` the one
    dealt from, ``shoe_pack`` the one in the shoe (use keys); ``unnamed_prep`` the terminal's
    pack events naming no pack, and ``early`` the machines' events before the game is known —
    held events, kept as the input's rows (field name → value); ``ending`` rounds ended but not
    yet final; ``done_packs``/``done_rounds`` recently finished ones (stragglers are detached);
    ``out_*`` finished records not yet drained (``out_sequences``: the finished packs' card
    sequences); ``keys`` the id and use number of each later
    use key; ``table_shuffled`` the uses of each pack id shuffled at the table alone."""

    table_id: str
    v: int = STATE_VERSION
    game: str | None = None
    decks: int | None = None
    dealer_id: str | None = None
    dealer_pos: int = 0
    seated: list[Seat] = msgspec.field(default_factory=list)
    seat_counter: int = 0
    packs_since_open: int = 0
    prep_pack: str | None = None
    play_pack: str | None = None
    shoe_pack: str | None = None
    unnamed_prep: list[dict[str, Any]] = msgspec.field(default_factory=list)
    packs: dict[str, Pack] = msgspec.field(default_factory=dict)
    rounds: dict[str, Round] = msgspec.field(default_factory=dict)
    ending: list[str] = msgspec.field(default_factory=list)
    done_packs: list[str] = msgspec.field(default_factory=list)
    done_rounds: list[str] = msgspec.field(default_factory=list)
    fired: list[list[str | None]] = msgspec.field(default_factory=list)
    out_rounds: list[Round] = msgspec.field(default_factory=list)
    out_packs: list[Pack] = msgspec.field(default_factory=list)
    out_sequences: list[PackSequence] = msgspec.field(default_factory=list, name="out_seqs")
    game_state: Any = msgspec.field(default=None, name="g")
    early: list[dict[str, Any]] = msgspec.field(default_factory=list)
    uses: Uses = msgspec.field(default_factory=Uses)
    keys: dict[str, KeyUse] = msgspec.field(default_factory=dict)
    table_shuffled: dict[str, list[int]] = msgspec.field(default_factory=dict)
    feed: FeedRecord | None = None
