"""``Finding``: one rule violation, exactly the columns of the lake's ``findings`` table.

A finding is deterministic: the same input gives the same finding, whatever
order the devices' events arrived in.  Hence:

* ``finding_id`` = hash of ``rule_id``, ``table_id``, the rule's key (pack,
  round, seat, spot, device … as rules.md keys it) and the evidence as
  (``device_id``, ``event_id``) pairs, sorted (contract version 2: an
  ``event_id`` is unique only within its device, so a forged line of another
  device reusing an id is another event and gives another finding);
* ``evidence`` = those pairs (the lake's ``evidence`` column), ``event_ids``
  = their ``event_id`` values as the devices wrote them (sorted, repeated when two
  devices used one id);
* ``ts`` = the greatest ``ts`` among the evidence events ("the event that
  completed the evidence"), never the moment the engine happened to notice;
  ``ts_offset`` = that event's ``ts_offset`` (the device's UTC offset as it
  wrote ``ts``, minutes; None when the ref predates it or the device wrote
  ``-00:00``); ``evidence_from`` = the least ``ts`` among the evidence
  events: with ``ts`` the span of video to pull (``queries/findings_video.sql``);
* ``gaming_day`` = the gaming day of that ``ts``, by a configurable function
  (default: UTC, 06:00 cutoff, as :class:`pitwatch.schemas.decode.GamingDayConfig`);
* ``dealer_id`` = the dealer of the latest dealer event in the evidence,
  unless the rule names one;
* ``title`` = the rule's plain title, ``source`` = the one procedure
  reference of the finding's game (:meth:`pitwatch.rules.catalog.Rule.source_for`);
  ``expected`` / ``actual`` are sentences a person reads (:mod:`pitwatch.rules.words`).

Evidence travels through the engine's state as *refs*
(:class:`pitwatch.rules.state.Ref`: ``event_id``, ``ts``, ``dealer_id``,
``device_id``, ``ts_offset``; see :func:`ref`).  A ref of a state written
before version 2 has no device (``device_id`` None), one written before
``ts_offset`` no offset.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import json
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

from pitwatch.rules.catalog import rule
from pitwatch.rules.state import Ref
from pitwatch.schemas.events import Event, micros_to_datetime

if TYPE_CHECKING:
    from pitwatch.schemas.decode import GamingDayConfig

GamingDay = Callable[[int], _dt.date]

_CUTOFF = _dt.timedelta(hours=6)


def default_gaming_day(ts_micros: int) -> _dt.date:
    """UTC date of ``ts`` minus the 06:00 cutoff (``GamingDayConfig()``'s default)."""
    return (micros_to_datetime(ts_micros) - _CUTOFF).date()


def gaming_day_from_config(config: GamingDayConfig) -> GamingDay:
    """Adapt a :class:`pitwatch.schemas.decode.GamingDayConfig` to ``ts micros -> date``."""
    return lambda ts: config.gaming_day(micros_to_datetime(ts))


def ref(ev: Event) -> Ref:
    """The evidence ref of an event (:class:`pitwatch.rules.state.Ref`)."""
    return Ref(ev.event_id, ev.ts, ev.dealer_id if ev.source == "dealer" else None, ev.device_id, ev.ts_offset)


@dataclasses.dataclass(frozen=True, slots=True)
class Finding:
    finding_id: str
    rule_id: str
    title: str          # the rule's plain title (pitwatch.rules.catalog), for the people who act on it
    severity: str
    game: str | None
    table_id: str | None     # None only for a file-level finding (INPUT_DAMAGED that read no line)
    pack_id: str | None
    round_id: str | None
    seat: int | None
    spot: str | None
    device_id: str | None
    dealer_id: str | None
    ts: int
    gaming_day: _dt.date
    expected: str
    actual: str
    event_ids: tuple[str, ...]
    source: str
    evidence: tuple[tuple[str | None, str], ...] = ()   # (device_id, event_id), sorted
    ts_offset: int | None = None        # minutes east of UTC, as the event that completed the evidence wrote ts
    evidence_from: int | None = None    # the least ts of the evidence (micros)
    pack_use: int | None = None         # which use of pack_id (ids used again, events.md 2.1); None: no pack
    round_use: int | None = None        # which use of round_id; None: no round

    def to_row(self) -> dict[str, Any]:
        """A row for ``pitwatch.schemas.arrow.rows_to_table(rows, FINDINGS)`` (ts as aware UTC datetime)."""
        row = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        row["ts"] = micros_to_datetime(self.ts)
        row["evidence_from"] = None if self.evidence_from is None else micros_to_datetime(self.evidence_from)
        row["event_ids"] = list(self.event_ids)
        row["evidence"] = evidence_rows(self.evidence)
        return row


def evidence_rows(pairs: Iterable[tuple[str | None, str]]) -> list[dict[str, str | None]]:
    """The ``evidence`` column's value: ``[{"device_id": …, "event_id": …}, …]``."""
    return [{"device_id": d, "event_id": e} for d, e in pairs]


def _pair_key(pair: tuple[str | None, str]) -> tuple[str, str]:
    return ("" if pair[0] is None else pair[0], pair[1])


def finding_id(rule_id: str, table_id: str | None, key: Sequence[object],
               evidence: Iterable[tuple[str | None, str]]) -> str:
    """``evidence``: (device_id, event_id) pairs (order and repeats do not matter)."""
    pairs = sorted({(d, e) for d, e in evidence}, key=_pair_key)
    payload = json.dumps([rule_id, table_id, [None if k is None else str(k) for k in key],
                          [list(p) for p in pairs]], separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


def make_finding(
    rule_id: str, *, table_id: str, game: str | None, key: Sequence[object], evidence: Sequence[Ref],
    expected: str, actual: str, gaming_day: GamingDay = default_gaming_day,
    pack_id: str | None = None, round_id: str | None = None, seat: int | None = None,
    spot: str | None = None, device_id: str | None = None, dealer_id: str | None = None,
    pack_use: int | None = None, round_use: int | None = None,
) -> Finding:
    """Build a finding from evidence refs (:class:`pitwatch.rules.state.Ref`); see the module doc."""
    if not evidence:
        raise ValueError(f"{rule_id}: a finding needs at least one evidence event")
    r = rule(rule_id)
    refs = sorted({(e.device_id, e.event_id): e for e in evidence}.values(),
                  key=lambda e: (e.ts, e.event_id, e.device_id or ""))
    ts = refs[-1].ts
    first_ts = min(e.ts for e in refs)
    if dealer_id is None:
        dealers = [e for e in refs if e.dealer_id is not None]
        dealer_id = dealers[-1].dealer_id if dealers else None
    pairs = tuple(sorted(((e.device_id, e.event_id) for e in refs), key=_pair_key))
    ids = tuple(sorted(e.event_id for e in refs))
    return Finding(
        finding_id=finding_id(rule_id, table_id, key, pairs), rule_id=rule_id, title=r.title,
        severity=r.severity,
        game=game, table_id=table_id, pack_id=pack_id, round_id=round_id, seat=seat, spot=spot,
        device_id=device_id, dealer_id=dealer_id, ts=ts, gaming_day=gaming_day(ts),
        expected=expected, actual=actual, event_ids=ids, source=r.source_for(game), evidence=pairs,
        ts_offset=refs[-1].ts_offset, evidence_from=first_ts,
        pack_use=pack_use if pack_use is not None or pack_id is None else 1,
        round_use=round_use if round_use is not None or round_id is None else 1,
    )
