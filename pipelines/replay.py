"""Beam steps after ingest: replay every table, then the checks that span tables.

``ReplayTable`` receives every event batch of one table (grouped by
``table_id``: a few large elements, never one per event), keeps one copy of
each event (:func:`pipelines.ingest.deduplicate`), feeds the events to the
table's :class:`rules.table.TableReplay` and emits, keyed for the partition
writer as ``((lake_table, gaming_day), arrow_table)``, the table's events,
findings, rounds and packs.

Feed order: each device's events by ``seq`` (the contract's order), devices
merged by ``ts``.  The engine gives the same findings for any merge that
keeps each device's order (see :mod:`rules.table`), so clock skew between
devices cannot change a finding; merging by ``ts`` only makes the order
close to what happened.

Two checks cannot be decided per table and have their own steps:
``SEQ_GAP`` (a device may serve several tables: :class:`ReplayDeviceSeq`,
keyed by device) and the cross-pack repeat of ``UNSHUFFLED_SEQUENCE``
(any two packs of the run, on any table: :func:`repeated_run_findings`).
Their findings are not counted in the ``findings`` column of the ``rounds``
and ``packs`` rows, which count what the table's own replay raised.
"""
from __future__ import annotations

import heapq
from itertools import groupby

import apache_beam as beam
import pyarrow as pa
import pyarrow.compute as pc

from pipelines.ingest import TAG_COUNTS, deduplicate
from rules.finding import gaming_day_from_config
from schemas.arrow import FINDINGS, PACKS, ROUNDS, rows_to_table, table_to_events

TAG_CONFLICTS = "conflicts"
TAG_PACK_CARDS = "pack_cards"
TAG_GAMES = "games"
TAG_FIRED_SEQUENCES = "fired_sequences"


def split_by_day(name: str, table: pa.Table):
    """Yield ``((name, 'YYYY-MM-DD'), rows)`` for each gaming day in ``table``."""
    if table.num_rows == 0:
        return
    days = pc.unique(table.column("gaming_day")).to_pylist()
    for day in sorted(days):
        rows = table.filter(pc.equal(table.column("gaming_day"), pa.scalar(day, pa.date32())))
        yield (name, day.isoformat()), rows


def feed_order(events):
    """Each device's events by seq, devices merged by ts (ties: device, seq)."""
    by_device = sorted(events, key=lambda e: (e.device_id, e.seq, e.event_id))
    streams = [list(g) for _, g in groupby(by_device, key=lambda e: e.device_id)]
    return heapq.merge(*streams, key=lambda e: (e.ts, e.device_id, e.seq))


def finding_rows(findings) -> list[dict]:
    return [f.to_row() for f in findings]


def load_reference(table_id: str):
    import seeds

    return seeds.load_reference(table_id)


def replay_table(table_id: str, events, gaming_day_config):
    """Run one table's replay over its events. Returns (replay, findings)."""
    from rules.table import TableReplay

    replay = TableReplay(table_id, reference=load_reference(table_id),
                         gaming_day=gaming_day_from_config(gaming_day_config))
    findings = []
    for ev in feed_order(events):
        findings.extend(replay.feed(ev))
    findings.extend(replay.close())
    return replay, findings


class ReplayTable(beam.DoFn):
    def __init__(self, gaming_day_config):
        self.gaming_day_config = gaming_day_config
        self._conflicts_cache = None

    def _conflicts(self, conflict_ids) -> frozenset:
        if self._conflicts_cache is None:
            self._conflicts_cache = frozenset(conflict_ids)
        return self._conflicts_cache

    def process(self, kv, conflict_ids):
        import logging

        table_id, batches = kv
        dedup = deduplicate(list(batches), self._conflicts(conflict_ids))
        for row in dedup.conflicts:
            yield beam.pvalue.TaggedOutput(TAG_CONFLICTS, (row["file"], row))
        yield beam.pvalue.TaggedOutput(
            TAG_COUNTS, {"accepted": dedup.events.num_rows, "duplicates": dedup.duplicates})
        yield from split_by_day("events", dedup.events)

        replay, findings = replay_table(table_id, table_to_events(dedup.events), self.gaming_day_config)
        yield beam.pvalue.TaggedOutput(TAG_GAMES, (table_id, replay.game))
        for seq in replay.drain_pack_sequences():
            yield beam.pvalue.TaggedOutput(TAG_PACK_CARDS, seq)
        for f in findings:
            if f.rule_id == "UNSHUFFLED_SEQUENCE":
                yield beam.pvalue.TaggedOutput(TAG_FIRED_SEQUENCES, (f.table_id, f.pack_id))
        yield from split_by_day("findings", rows_to_table(finding_rows(findings), FINDINGS))
        yield from split_by_day("rounds", rows_to_table(replay.drain_rounds(), ROUNDS))
        yield from split_by_day("packs", rows_to_table(replay.drain_packs(), PACKS))
        logging.getLogger("pitwatch").info(
            "replayed %s (%s): %s events, %d findings", table_id, replay.game or "no game",
            f"{dedup.events.num_rows:,}", len(findings))


class ReplayDeviceSeq(beam.DoFn):
    """(device_id, [(seq, table_id, event_id, ts)]) → SEQ_GAP findings, keyed for the writer.

    Every line that arrived counts: accepted events, duplicates and rejected
    lines whose device_id and seq could be read (``ts`` None).
    """

    def __init__(self, gaming_day_config):
        self.gaming_day_config = gaming_day_config

    def process(self, kv, games):
        from rules.sequence import SeqTracker

        device_id, batches = kv
        entries = sorted((e for batch in batches for e in batch),
                         key=lambda e: (e[0], e[3] is None, e[2] or ""))
        tracker = SeqTracker(gaming_day_from_config(self.gaming_day_config))
        game_of = dict(games)
        findings = []
        for seq, table_id, event_id, ts in entries:
            findings.extend(tracker.feed(device_id, seq, table_id, event_id, ts, game_of.get(table_id)))
        if findings:
            yield from split_by_day("findings", rows_to_table(finding_rows(findings), FINDINGS))


def repeated_run_findings(pack_cards: list, fired: list, gaming_day_config):
    """Cross-pack UNSHUFFLED_SEQUENCE over every pack of the run, keyed for the writer."""
    from rules.repeated_runs import repeated_runs

    already = set(map(tuple, fired))
    findings = [f for f in repeated_runs(pack_cards, gaming_day_from_config(gaming_day_config))
                if (f.table_id, f.pack_id) not in already]
    return list(split_by_day("findings", rows_to_table(finding_rows(findings), FINDINGS)))
