"""A round as a picture: the cards as the shoe read them and as the terminal recorded them, side by
side in the order drawn, the offending card or event highlighted, bets and payouts by seat, the
round's local times and the video window to pull.

The rows are the named investigation ``round_replay`` (``queries/round_replay.sql``: the one
definition of which events make a round, both streams matched by their place in the pack), run with
``events``, ``rounds`` and ``findings`` bound to the round's gaming day and the days either side
(:func:`replay_sql`): a round is read from three days' files, never from the table's whole history,
so a picture costs the same in a lake's seventh year as in its first.  What the finding cites is its
evidence (``device_id``, ``event_id``), looked up in the same days.

:func:`load` gives a :class:`RoundPicture`; ``templates/_round_picture.html`` draws it (the report
and the console's finding page include it; ``_round_picture_style.html`` is its style) and
:func:`render` renders it alone.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import re
from typing import Any

import duckdb

from pitwatch.config import display_time
from pitwatch.queries.catalog import get_query
from pitwatch.queries.errors import LakeQueryError
from pitwatch.queries.lake_views import run_sql

DAYS_AROUND = 1         # a round's pack may have been cut the day before, its last events filed the day after
_WITH = re.compile(r"^with\s*$", re.M)
_BOUND = ("with\n"
          "events as (select * from events where gaming_day between $first_day and $last_day and table_id = $table_id),\n"
          "rounds as (select * from rounds where gaming_day between $first_day and $last_day and table_id = $table_id),\n"
          "findings as (select * from findings where gaming_day between $first_day and $last_day and table_id = $table_id),\n")

_FINDING_SQL = """
select f.finding_id, f.rule_id, f.title, f.severity, f.table_id, f.round_id, f.pack_id, f.seat, f.dealer_id,
       f.ts, f.evidence_from, f.expected, f.actual, f.gaming_day, f.status,
       (select name from seeds_dealers where id = f.dealer_id) as dealer_name
from findings as f
where f.gaming_day = $gaming_day and f.finding_id = $finding_id
"""

_CITED_SQL = """
select e.device_id, e.seq, e.file, e.line
from events as e
join (select unnest(evidence, recursive := true) from findings
      where gaming_day = $gaming_day and finding_id = $finding_id) as c
  on e.device_id = c.device_id and e.event_id = c.event_id
where e.gaming_day between $first_day and $last_day and e.table_id = $table_id
"""

_ROUND_SQL = """
select r.game, r.pack_id, r.dealer_id, r.started, r.ended, r.outcome, r.voided,
       (select name from seeds_dealers where id = r.dealer_id) as dealer_name
from rounds as r
where r.gaming_day = $gaming_day and r.table_id = $table_id and r.round_id = $round_id
order by r.round_use nulls first
limit 1
"""


@dataclasses.dataclass(frozen=True)
class Card:
    """One card of one stream: what the device said, when (local time), and whether the finding cites it."""
    card: str | None          # None: unreadable (shoe) or unknown (terminal)
    at: str
    cited: bool
    detail: str = ""          # the terminal's target (player, banker, seat 3, burn) and face


@dataclasses.dataclass(frozen=True)
class Draw:
    """One place of the pack: the shoe's draw and the terminal's card there, side by side."""
    place: int
    shoe: Card | None
    terminal: Card | None

    @property
    def differs(self) -> bool:
        """The two streams disagree at this place: a card on one side only, or two different cards."""
        if self.shoe is None or self.terminal is None:
            return True
        return self.shoe.card is not None and self.terminal.card is not None and self.shoe.card != self.terminal.card

    @property
    def cited(self) -> bool:
        return bool((self.shoe and self.shoe.cited) or (self.terminal and self.terminal.cited))


@dataclasses.dataclass(frozen=True)
class Wager:
    """A bet or its settlement at a seat: the spot, the amount, and the result of a payout."""
    spot: str | None
    kind: str                  # bet, payout, action
    amount: float | None
    result: str | None
    at: str
    cited: bool


@dataclasses.dataclass(frozen=True)
class Seat:
    seat: int
    wagers: tuple[Wager, ...]


@dataclasses.dataclass(frozen=True)
class Step:
    """Any other event of the round (started, bets closed, the cutting card, a stub count, ended),
    or a finding that cites no event of the round."""
    at: str
    source: str
    type: str
    detail: str
    cited: bool


@dataclasses.dataclass(frozen=True)
class RoundPicture:
    table_id: str
    round_id: str
    gaming_day: _dt.date
    zone: str
    game: str | None
    pack_id: str | None
    dealer: str | None         # "name (id)", or the id when the roster has no name
    started: str | None
    ended: str | None
    outcome: str | None
    voided: bool
    draws: tuple[Draw, ...]
    seats: tuple[Seat, ...]
    steps: tuple[Step, ...]
    finding: dict | None       # the finding pictured: rule_id, title, severity, expected, actual, status…
    evidence: tuple[str, ...]  # file:line of every cited event
    video_from: str | None
    video_to: str | None

    @property
    def anchor(self) -> str:
        """An HTML id for the picture (a report holds several)."""
        key = (self.finding or {}).get("finding_id") or f"{self.table_id}-{self.round_id}"
        return "round-" + re.sub(r"[^A-Za-z0-9_-]", "_", str(key))


def replay_sql() -> str:
    """``round_replay``'s statement with ``events``, ``rounds`` and ``findings`` bound to the
    table and the days ``$first_day`` to ``$last_day`` (CTEs of the same names shadow the tables)."""
    sql = get_query("round_replay").sql
    found = _WITH.search(sql)
    if found is None:        # the query's shape is this module's contract: say so, never guess
        raise LakeQueryError("queries/round_replay.sql no longer begins its statement with a 'with' line")
    return sql[:found.start()] + _BOUND + sql[found.end():].lstrip("\n")


def dealer_text(name: str | None, dealer_id: str | None) -> str | None:
    """A dealer as people read it: "name (id)", the id alone when the roster has no name, None for none."""
    if dealer_id is None:
        return None
    return f"{name} ({dealer_id})" if name else dealer_id


def _rows(con: duckdb.DuckDBPyConnection, sql: str, params: dict, timeout: float | None) -> list[dict[str, Any]]:
    answer = run_sql(con, sql, params, timeout=timeout)
    return [dict(zip(answer.columns, r)) for r in answer.rows]


def load(con: duckdb.DuckDBPyConnection, table_id: str, round_id: str, gaming_day: _dt.date, zone: str, *,
         finding_id: str | None = None, video_pad: int = 30, timeout: float | None = None) -> RoundPicture:
    """The picture of round ``round_id`` at ``table_id`` of ``gaming_day``, times in ``zone``; with
    ``finding_id`` its evidence highlighted and the video window around it (else around the round)."""
    days = {"first_day": gaming_day - _dt.timedelta(days=DAYS_AROUND),
            "last_day": gaming_day + _dt.timedelta(days=DAYS_AROUND), "table_id": table_id}
    finding = None
    cited: set[tuple[str, int]] = set()
    evidence: list[str] = []
    if finding_id is not None:
        found = _rows(con, _FINDING_SQL, {"gaming_day": gaming_day, "finding_id": finding_id}, timeout)
        if not found:
            raise LakeQueryError(f"no finding {finding_id} on gaming day {gaming_day}")
        finding = found[0]
        for e in _rows(con, _CITED_SQL, {**days, "gaming_day": gaming_day, "finding_id": finding_id}, timeout):
            cited.add((e["device_id"], e["seq"]))
            if e["file"] is not None:
                evidence.append(f"{e['file']}:{e['line']}")
    round_rows = _rows(con, _ROUND_SQL, {"gaming_day": gaming_day, "table_id": table_id, "round_id": round_id},
                       timeout)
    the_round = round_rows[0] if round_rows else {}
    events = _rows(con, replay_sql(), {**days, "round_id": round_id}, timeout)

    def shown(ts: _dt.datetime | None) -> str:
        return display_time(ts, zone) if ts is not None else ""

    rule = finding["rule_id"] if finding else None
    shoe: dict[int, Card] = {}
    terminal: dict[int, Card] = {}
    seats: dict[int, list[Wager]] = {}
    steps: list[Step] = []
    for e in events:
        is_cited = (e["device_id"], e["seq"]) in cited or (e["source"] == "pitwatch" and e["type"] == rule)
        at = shown(e["ts"])
        if e["type"] == "card_drawn" and e["source"] == "shoe" and e["place"] is not None:
            shoe[e["place"]] = Card(e["card"], at, is_cited)
        elif e["type"] == "card_dealt" and e["place"] is not None:
            terminal[e["place"]] = Card(e["card"], at, is_cited,
                                        " ".join(str(v) for v in (e["target"], e["face"]) if v is not None))
        elif e["type"] in ("bet_placed", "payout", "player_action") and e["seat"] is not None:
            kind = {"bet_placed": "bet", "payout": "payout", "player_action": e["action"] or "action"}[e["type"]]
            seats.setdefault(e["seat"], []).append(Wager(e["spot"], kind, e["amount"], e["result"], at, is_cited))
        else:
            detail = e["detail"] or ""
            if e["type"] == "card_dealt":       # a card of another pack (a burn outside the round's)
                detail = ", ".join(str(v) for v in (e["target"], e["card"], detail) if v)
            steps.append(Step(at, e["source"], e["type"], detail, is_cited))
    draws = tuple(Draw(p, shoe.get(p), terminal.get(p)) for p in sorted(set(shoe) | set(terminal)))
    if finding is not None:
        start, end = finding["evidence_from"] or finding["ts"], finding["ts"]
    else:
        start, end = the_round.get("started"), the_round.get("ended")
    pad = _dt.timedelta(seconds=video_pad)
    return RoundPicture(
        table_id=table_id, round_id=round_id, gaming_day=gaming_day, zone=zone,
        game=the_round.get("game"), pack_id=the_round.get("pack_id"),
        dealer=dealer_text(the_round.get("dealer_name"), the_round.get("dealer_id"))
        or (dealer_text(finding["dealer_name"], finding["dealer_id"]) if finding else None),
        started=shown(the_round.get("started")) or None, ended=shown(the_round.get("ended")) or None,
        outcome=the_round.get("outcome"), voided=bool(the_round.get("voided")),
        draws=draws, seats=tuple(Seat(s, tuple(w)) for s, w in sorted(seats.items())), steps=tuple(steps),
        finding=finding, evidence=tuple(evidence),
        video_from=shown(start - pad) if start is not None else None,
        video_to=shown(end + pad) if end is not None else None,
    )


def environment():
    """The Jinja2 environment of the console's templates (shipped in the package), HTML escaped."""
    import jinja2

    return jinja2.Environment(loader=jinja2.PackageLoader("pitwatch.console", "templates"),
                              autoescape=True, undefined=jinja2.StrictUndefined)


def render(picture: RoundPicture) -> str:
    """The picture alone as HTML (its style first), as the report and the console include it."""
    env = environment()
    return env.get_template("_round_picture_style.html").render() + env.get_template(
        "_round_picture.html").render(picture=picture)
