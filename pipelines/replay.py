"""Beam steps after ingest: replay every table, then the checks that span tables.

``ReplayTable`` receives every event batch of one table (grouped by
``table_id``: a few large elements, never one per event), keeps one copy of
each event (:func:`pitwatch.pipelines.ingest.deduplicate`), feeds the events to the
table's :class:`pitwatch.rules.table.TableReplay` and emits, keyed for the partition
writer as ``((lake_table, gaming_day), arrow_table)``, the table's events,
findings, rounds and packs.

The feed, close and row hand-out are the driver's (:mod:`pitwatch.engine.driver`,
shared with the live forms).  Feed order: each device's events by ``seq``
(the contract's order), devices merged by ``ts``.  The engine gives the same findings for any merge that
keeps each device's order (see :mod:`pitwatch.rules.table`), so clock skew between
devices cannot change a finding; merging by ``ts`` only makes the order
close to what happened.

Two checks cannot be decided per table and have their own steps:
``SEQ_GAP`` (a device may serve several tables: :class:`ReplayDeviceSeq`,
keyed by device) and the cross-pack repeat of ``UNSHUFFLED_SEQUENCE``
(any two packs of the run, on any table: :class:`FindRepeatedRuns`).
Their findings are not counted in the ``findings`` column of the ``rounds``
and ``packs`` rows, which count what the table's own replay raised.
"""
from __future__ import annotations

import apache_beam as beam
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from pitwatch.engine.driver import SEQ_GAP_GAME, TableDriver, feed_order, new_seq_tracker
from pitwatch.lake import Lake
from pitwatch.lake.parquet import sorted_piece
from pitwatch.pipelines import progress
from pitwatch.pipelines.coders import pack, pack_bytes, spill, unpack, unpack_bytes
from pitwatch.pipelines.ingest import TAG_COUNTS, WithoutCyclicGC, deduplicate, rebuilt_event
from pitwatch.rules.finding import gaming_day_from_config
from pitwatch.rules.uses import use_key
from pitwatch.schemas.arrow import FINDINGS, PACKS, ROUNDS, drop_empty_columns, rows_to_table, table_to_events
from pitwatch.schemas.contract import LAKE_EXTRA_COLUMNS
from pitwatch.wording import plural

TAG_CONFLICTS = "conflicts"
TAG_PACK_CARDS = "pack_cards"
TAG_FIRED_SEQUENCES = "fired_sequences"
TAG_STATE = "state"
TAG_EVENTS = "events"           # (("events", day), one table's rows, spilled or packed): the bulk, grouped on its own
TAG_DAYS = "days"               # each gaming day a table's events fall on


def split_by_day(name: str, table: pa.Table, slices: bool = False):
    """Yield ``((name, 'YYYY-MM-DD'), rows)`` for each gaming day in ``table``, in day order.

    With ``slices``, rows in time order (a table's events in feed order), which
    hold each day in one run, are handed out as zero-copy slices; for rows
    that are packed next (:func:`pitwatch.pipelines.coders.pack` writes only a slice's
    rows), not for rows Beam pickles (a pickled slice carries its whole parent).
    Other tables are filtered.
    """
    import numpy as np

    if table.num_rows == 0:
        return
    days = table.column("gaming_day").cast(pa.int32()).to_numpy()
    steps = np.diff(days)
    if days[0] == days[-1] and not steps.any():
        yield (name, table.column("gaming_day")[0].as_py().isoformat()), table
        return
    if slices and (steps >= 0).all():
        bounds = [0, *(np.flatnonzero(steps) + 1).tolist(), len(days)]
        for start, stop in zip(bounds, bounds[1:]):
            yield (name, table.column("gaming_day")[start].as_py().isoformat()), table.slice(start, stop - start)
        return
    for day in sorted(pc.unique(table.column("gaming_day")).to_pylist()):
        rows = table.filter(pc.equal(table.column("gaming_day"), pa.scalar(day, pa.date32())))
        yield (name, day.isoformat()), rows


def feed_ordered(table: pa.Table) -> pa.Table | None:
    """The table's rows in :func:`feed_order`, sorted on columns, or None when that takes the merge.

    When each device's ``ts`` never goes back along its ``seq``, merging the
    devices by ts is sorting every row by (ts, device_id, seq, event_id); a
    device whose clock went back needs the merge (None: use feed_order).

    The sort is NumPy's on integer keys (device_id as its rank); the rare
    table where that is not enough (two rows of one device with one seq, or
    equal ts, device and seq, where event_id decides) is sorted by Arrow.
    """
    import numpy as np

    if table.num_rows < 2:
        return table
    device = pc.rank(table.column("device_id"), sort_keys="ascending", tiebreaker="dense").to_numpy()
    ts = table.column("ts").cast(pa.int64()).to_numpy()
    seq = table.column("seq").to_numpy()
    order = np.lexsort((seq, device, ts))
    d, s = device[order], seq[order]
    by_device = np.argsort(d, kind="stable")     # each device's rows, in the order above
    same_device = d[by_device][1:] == d[by_device][:-1]
    if np.any(same_device & (s[by_device][1:] <= s[by_device][:-1])):
        return _feed_ordered_by_arrow(table)      # a seq twice, or the clock went back
    return table.take(pa.array(order))


def sorted_for_writer(table: pa.Table) -> tuple[pa.Table, list[int]] | None:
    """One table's rows sorted once for the lake and the replay: ``(rows, feed)``.

    ``rows`` are in gaming day, then the ``events`` partition's order
    (``lake.SORT_KEYS``: device_id, seq within one table), so each day is a
    slice the writer takes as it is; ``feed`` is :func:`feed_order` as
    positions in ``rows``.  None when a device has a seq twice or its clock
    went back along its seq, or for fewer than two rows (then :func:`feed_ordered` decides).
    """
    import numpy as np

    if table.num_rows < 2:
        return None
    device = pc.rank(table.column("device_id"), sort_keys="ascending", tiebreaker="dense").to_numpy()
    seq = table.column("seq").to_numpy()
    ts = table.column("ts").cast(pa.int64()).to_numpy()
    by_device = np.lexsort((seq, device))
    d, s, t = device[by_device], seq[by_device], ts[by_device]
    if np.any((d[1:] == d[:-1]) & ((s[1:] <= s[:-1]) | (t[1:] < t[:-1]))):
        return None
    day = table.column("gaming_day").cast(pa.int32()).to_numpy()
    order = np.lexsort((seq, device, day))
    feed = np.lexsort((seq[order], device[order], ts[order]))    # by ts, device, seq: the merge
    return table.take(pa.array(order)), feed.tolist()


def rows_and_events(compact: pa.Table) -> tuple[pa.Table, list, bool, bool]:
    """A table's rows for the writer and its events for the replay: ``(rows, events, ordered, presorted)``.

    The common case is one sort for both (:func:`sorted_for_writer`: ``rows`` in the
    writer's order, ``presorted``; the events in feed order).  Otherwise ``rows`` are in
    :func:`feed_ordered` order when it finds one (``ordered``), else as they came, and the
    events follow them.  The replay never reads the ingest columns (file, line,
    gaming_day, unknown_fields): its events leave them out.
    """
    sorted_once = sorted_for_writer(compact)
    if sorted_once is not None:
        rows, feed = sorted_once
        return rows, list(map(table_to_events(rows, skip=LAKE_EXTRA_COLUMNS).__getitem__, feed)), True, True
    in_order = feed_ordered(compact)
    rows = in_order if in_order is not None else compact
    return rows, table_to_events(rows, skip=LAKE_EXTRA_COLUMNS), in_order is not None, False


def _feed_ordered_by_arrow(table: pa.Table) -> pa.Table | None:
    import numpy as np

    by_device = table.select(["device_id", "seq", "event_id", "ts"]).take(pc.sort_indices(
        table, sort_keys=[("device_id", "ascending"), ("seq", "ascending"), ("event_id", "ascending")]))
    device = pc.dictionary_encode(by_device.column("device_id")).combine_chunks().indices.to_numpy()
    ts = by_device.column("ts").cast(pa.int64()).to_numpy()
    if np.any((device[1:] == device[:-1]) & (ts[1:] < ts[:-1])):
        return None
    return table.take(pc.sort_indices(table, sort_keys=[
        ("ts", "ascending"), ("device_id", "ascending"), ("seq", "ascending"), ("event_id", "ascending")]))


def without_refused(rows: pa.Table, refused) -> tuple[pa.Table, list[dict]]:
    """``rows`` (a table's accepted events) without the events the replay refused
    (``(event, reason)``, :meth:`pitwatch.engine.driver.TableDriver.take_rejects`), and their reject
    rows (file, line, ids, the reason, the event rebuilt from its columns; the raw text is
    ``FetchRawLines``')."""
    import numpy as np

    reasons = {(ev.device_id, ev.event_id): why for ev, why in refused}
    devices, ids = rows.column("device_id").to_pylist(), rows.column("event_id").to_pylist()
    hit = np.array([(d, e) in reasons for d, e in zip(devices, ids)], dtype=bool)
    moved = rows.filter(pa.array(hit))
    keep = ("file", "line", "event_id", "table_id", "device_id", "seq")
    out = [{**{k: r[k] for k in keep}, "reason": reasons[(r["device_id"], r["event_id"])], "rebuilt": rebuilt_event(r)}
           for r in moved.to_pylist()]
    return rows.filter(pa.array(~hit)), out


def finding_rows(findings) -> list[dict]:
    return [f.to_row() for f in findings]


def replay_table(table_id: str, events, gaming_day_config, prior_state: dict | None = None,
                 nightly: bool = False, ordered: bool = False, devices=None):
    """Run one table's replay over its events through the driver. Returns (driver, findings).

    ``ordered``: the events are already in :func:`pitwatch.engine.driver.feed_order`
    (:func:`sorted_for_writer`, :func:`feed_ordered`).  The close policy is the
    driver's (:meth:`pitwatch.engine.driver.TableDriver.end_of_input`): a plain run
    closes the table at the end of its input; a nightly run only when the
    table ended the day closed, carrying its state to the next day.
    """
    driver = TableDriver(table_id, gaming_day_from_config(gaming_day_config), prior_state, devices)
    in_order = events if ordered else list(feed_order(events))
    findings = driver.feed_all(in_order)
    findings.extend(driver.end_of_input(nightly, _last_dealer_type(in_order) if nightly else None))
    return driver, findings


def _last_dealer_type(in_order: list) -> str | None:
    """The type of the terminal's last event in feed order (None: it sent none)."""
    return next((ev.type for ev in reversed(in_order) if ev.source == "dealer"), None)


class ReplayTable(WithoutCyclicGC):
    """(table_id, {"events": [packed event tables], "state": [prior JSON state]}) → the table's outputs."""

    def __init__(self, gaming_day_config, nightly: bool = False, devices=None, run_files=None, digests=None,
                 spill_to: tuple[Lake, str] | None = None):
        self.gaming_day_config = gaming_day_config
        self.nightly = nightly
        self.devices = devices      # pitwatch.inputs.devices.DeviceRegistry or None
        # the run's input files: an event copy from any other file is one the lake already held
        # (carried), counted apart from the run's lines (pitwatch.lake.runs.unreconciled)
        self.run_files = None if run_files is None else pa.array(sorted(run_files), pa.string())
        self._conflicts_cache: frozenset | None = None
        self.digests = digests      # pitwatch.pipelines.ingest.RecordedDigests: a file's lines are read again only if unchanged
        # (lake, folder): each table's replayed events are written there, not shipped (pitwatch.pipelines.coders.spill)
        self.spill_to = spill_to

    def _conflicts(self, conflict_ids) -> frozenset:
        if self._conflicts_cache is None:
            self._conflicts_cache = frozenset(conflict_ids)
        return self._conflicts_cache

    def process(self, kv, conflict_ids):
        import json

        table_id, joined = kv
        batches = list(joined["events"])
        prior = [json.loads(s) for s in joined["state"]]
        events, ordered = [], False
        if batches:
            dedup = deduplicate(batches, self._conflicts(conflict_ids), self.digests)
            compact = drop_empty_columns(dedup.events)    # fewer columns to reorder and to ship
            rows_kept, events, ordered, presorted = rows_and_events(compact)
            for row in dedup.conflicts:
                yield beam.pvalue.TaggedOutput(TAG_CONFLICTS, (row["file"], row))
        replay, findings = replay_table(
            table_id, events, self.gaming_day_config, prior[0] if prior else None, self.nightly, ordered,
            self.devices)
        if batches:
            # the lines the replay refused (a round_started naming a round still open) leave the day's
            # events for its rejects, with the reason, fetched and counted as the conflicting copies are
            refused = replay.take_rejects()
            if refused:
                rows_kept, moved = without_refused(rows_kept, refused)
                for row in moved:
                    yield beam.pvalue.TaggedOutput(TAG_CONFLICTS, (row["file"], row))
            else:
                moved = []
            yield beam.pvalue.TaggedOutput(TAG_COUNTS, self._counts(dedup, moved))
            for key, rows in split_by_day("events", rows_kept, slices=True):
                yield beam.pvalue.TaggedOutput(TAG_DAYS, key[1])
                # in the writer's order, sorted here (in parallel) if sorted_for_writer did not (lake.sorted_piece)
                piece = sorted_piece("events", drop_empty_columns(rows), presorted=presorted)
                yield beam.pvalue.TaggedOutput(TAG_EVENTS, (key, self._ship(table_id, key[1], piece)))
        rows = replay.take_rows()
        sequences = rows.sequences
        if sequences:   # one JSON blob per table (a million small objects would be slow to ship),
            # with its packs' run keys: the cross-pack check reads the cards only of packs that share a run
            from pitwatch.rules.repeated_runs import RunKeys

            yield beam.pvalue.TaggedOutput(
                TAG_PACK_CARDS, (RunKeys.of(sequences).to_bytes(), pack_bytes(orjson.dumps(sequences))))
        for f in findings:
            if f.rule_id == "UNSHUFFLED_SEQUENCE":
                # the pack's use key: what the pack cards records (pitwatch.rules.packs.sequence) are keyed by
                yield beam.pvalue.TaggedOutput(TAG_FIRED_SEQUENCES, (f.table_id, use_key(f.pack_id, f.pack_use or 1)))
        yield from split_by_day("findings", rows_to_table(finding_rows(findings), FINDINGS))
        yield from split_by_day("rounds", rows_to_table(rows.rounds, ROUNDS))
        yield from split_by_day("packs", rows_to_table(rows.packs, PACKS))
        if self.nightly or self.run_files is not None:  # the state after every row was handed out:
            yield beam.pvalue.TaggedOutput(                  # what the next day continues from
                TAG_STATE, ("tables", {"table_id": table_id, "state": json.dumps(replay.state(), sort_keys=True)}))
        progress.step_log().debug(      # --verbose; the day's line sums them up
            "replayed %s (%s): %s, %s", table_id, replay.game or "no game",
            plural(len(events), "event"), plural(len(findings), "finding"))

    def _ship(self, table_id: str, day, piece: pa.Table):
        """A table's events of one day as they go to the writer: spilled to a file named after the
        table and the day (a retried bundle writes the same file again), or packed."""
        if self.spill_to is None:
            return pack(piece)
        import hashlib

        lake_path, folder = self.spill_to
        name = hashlib.sha256(f"{table_id}\0{day}".encode()).hexdigest()[:32]
        return spill(lake_path, f"{folder}/gaming_day={day}/{name}.arrow", piece)

    def _counts(self, dedup, refused=()) -> dict:
        """Accepted and duplicate copies, the run's apart from the ones the lake held (``carried``:
        kept; ``superseded``: dropped for a copy of the run's that comes first).  ``refused``: the
        reject rows of the events the replay refused (counted as rejected where they are fetched:
        not accepted)."""
        if self.run_files is None:
            return {"accepted": dedup.events.num_rows - len(refused), "duplicates": dedup.duplicates}
        new = pc.sum(pc.is_in(dedup.events.column("file"), self.run_files)).as_py() or 0
        mine = set(self.run_files.to_pylist())
        refused_new = sum(1 for r in refused if r["file"] in mine)
        dropped_new = sum(1 for f in dedup.dropped_files if f in mine)
        return {"accepted": new - refused_new, "carried": dedup.events.num_rows - new - (len(refused) - refused_new),
                "duplicates": dropped_new, "superseded": dedup.duplicates - dropped_new}


class ReplayDeviceSeq(WithoutCyclicGC):
    """(device_id, {"seqs": [packed tables of (seq, table_id, event_id, ts, ts_offset)], "state": [prior]})
    → SEQ_GAP findings.

    Every line that arrived counts: accepted events, duplicates and rejected
    lines whose device_id and seq could be read (``ts`` None).  The arrivals
    are sorted on columns and the tracker visits only the rows either side
    of a gap (:meth:`pitwatch.rules.sequence.SeqTracker.feed_sorted`).
    """

    def __init__(self, gaming_day_config, nightly: bool = False):
        self.gaming_day_config = gaming_day_config
        self.nightly = nightly

    def process(self, kv):
        import json

        device_id, joined = kv
        gaming_day = gaming_day_from_config(self.gaming_day_config)
        prior = list(joined["state"])
        tracker = new_seq_tracker(gaming_day, json.loads(prior[0]) if prior else None)
        findings = []
        batches = list(joined["seqs"])
        if batches:
            arrivals = pa.concat_tables([unpack(b) for b in batches])
            seqs, row = arrivals_in_feed_order(arrivals)
            # every table's SEQ_GAP game is the driver's (pitwatch.engine.driver.SEQ_GAP_GAME), as the live service's
            game_of = dict.fromkeys(arrivals.column("table_id").unique().to_pylist(), SEQ_GAP_GAME)
            findings = tracker.feed_sorted(device_id, seqs, row, game_of)
        if findings:
            yield from split_by_day("findings", rows_to_table(finding_rows(findings), FINDINGS))
        if self.nightly:
            yield beam.pvalue.TaggedOutput(
                TAG_STATE, ("devices", {"device_id": device_id, "state": json.dumps(tracker.state(), sort_keys=True)}))


def arrivals_in_feed_order(arrivals: pa.Table):
    """A device's arrivals (seq, table_id, event_id, ts or null, ts_offset) in the tracker's feed order
    (seq; accepted before rejected; event_id), keeping the first of each seq, for
    :meth:`pitwatch.rules.sequence.SeqTracker.feed_sorted`: ``(seqs, row)``.  Values are read
    out of Arrow only for the rows the tracker visits (either side of a gap)."""
    import numpy as np

    keyed = arrivals.append_column("rejected", pc.is_null(arrivals.column("ts"))).append_column(
        "event_key", pc.fill_null(arrivals.column("event_id"), ""))
    ordered = arrivals.take(pc.sort_indices(keyed, sort_keys=[
        ("seq", "ascending"), ("rejected", "ascending"), ("event_key", "ascending")]))
    seqs = ordered.column("seq").to_numpy()
    first = np.flatnonzero(np.r_[True, seqs[1:] != seqs[:-1]])
    if len(first) < len(seqs):
        ordered, seqs = ordered.take(pa.array(first)), seqs[first]
    columns = [ordered.column(n) if n in ordered.column_names else pa.nulls(len(ordered), pa.int64())
               for n in ("table_id", "event_id", "ts", "ts_offset")]

    def row(i: int) -> tuple:
        return tuple(c[i].as_py() for c in columns)

    return seqs, row


NO_PACK_CARDS = (b"", pack_bytes(b"[]"))   # a pack-cards element of no pack (the step runs even when no table has one)


class FindRepeatedRuns(WithoutCyclicGC):
    """(None, [(run keys, packed JSON list of pack sequences), one per table]) → cross-pack UNSHUFFLED_SEQUENCE
    over every pack of the run (and, nightly, the packs of the last ``retention_days``
    days carried in the state), keyed for the writer.

    A finding is raised for the later pack of a pair, in the run where the
    second pack of the pair completes: nightly, the findings over the carried
    packs alone were raised on earlier nights, so this run raises those over
    carried + new packs that are not among them.

    Memory and time: the first pass reads only an integer per 10-card window,
    computed by each table's replay (:class:`pitwatch.rules.repeated_runs.RunKeys`,
    :func:`pitwatch.rules.repeated_runs.packs_sharing_a_run`); the packs' cards are
    parsed only for the tables holding one of the few packs that share a run
    with another (nightly, every pack is read again to carry it in the state).

    The carried packs (a week of a floor's at the default ``retention_days``: the one part of a
    night that grows with the lake's first week) are told in or out of the window by their state
    row's ``first_ts``, each record is parsed once (for its run keys), and only the few sharing a
    run are parsed again for the check; those still in the window go back to the state as their
    rows came (the record string as this step wrote it, ``json.dumps(…, sort_keys=True)``, so the
    same bytes), never parsed to be written again.
    """

    def __init__(self, gaming_day_config, day_mode=None, lake_path: Lake | None = None):
        self.gaming_day_config = gaming_day_config
        self.day_mode = day_mode
        self.lake_path = lake_path

    def process(self, keyed_blobs, fired, prior_rows=None):
        """``prior_rows``: the carried packs' state rows; None (the replay's step): read here from
        the day before's state files (``day_mode.prior_state`` in ``lake_path``) rather than handed
        in as a Beam side input of a row an element — a week of packs, each row sized by Beam's
        side-input cache and sent through the runner's data plane (0.4 s and more a night on the
        bench's 14-night lake, issue 35)."""
        import datetime as _dt
        import itertools
        import json

        from pitwatch.lake import state
        from pitwatch.rules.repeated_runs import RunKeys, packs_sharing_a_run, repeated_runs

        if prior_rows is None:
            prior_rows = self._prior_rows()

        tables = [(RunKeys.from_bytes(keys) if keys else None, blob) for keys, blob in keyed_blobs[1]]
        gaming_day = gaming_day_from_config(self.gaming_day_config)
        oldest = None
        if self.day_mode is not None:
            oldest = _dt.date.fromisoformat(self.day_mode.replay_day) - _dt.timedelta(days=self.day_mode.retention_days)

        def in_window():      # the carried rows still in the window: their first_ts is the record's
            for row in prior_rows:
                ts = row["first_ts"]
                if oldest is None or ts is None or gaming_day(ts) > oldest:
                    yield row

        def new_records(only=None):
            for keys, blob in tables:
                if only is None or (keys is not None and not only.isdisjoint(keys.names)):
                    yield from orjson.loads(unpack_bytes(blob))

        kept = packs_sharing_a_run((orjson.loads(row["record"]) for row in in_window()),
                                   reduced=[keys for keys, _ in tables if keys is not None])
        prior = [orjson.loads(row["record"]) for row in in_window()
                 if (row["table_id"], row["pack_id"]) in kept] if kept else []
        new = [r for r in new_records(only=kept) if (r["table_id"], r["pack_id"]) in kept] if kept else []
        already = set(map(tuple, fired))
        raised_before = {f.finding_id for f in repeated_runs(prior, gaming_day)} if prior else set()
        findings = [f for f in repeated_runs(prior + new, gaming_day)
                    if f.finding_id not in raised_before
                    and (f.table_id, use_key(f.pack_id, f.pack_use or 1)) not in already]
        yield from split_by_day("findings", rows_to_table(finding_rows(findings), FINDINGS))
        if self.day_mode is not None:     # the pack index the next day carries, as packed tables of
            # 10,000 packs, not an element a pack: a week of a floor's packs (~0.5 GB of records at 20M
            # events a day) was held by the runner's grouping and by its writer as dicts
            carried = ({"table_id": row["table_id"], "pack_id": row["pack_id"], "first_ts": row["first_ts"],
                        "record": row["record"]} for row in in_window())
            new = ({"table_id": r["table_id"], "pack_id": r["pack_id"], "first_ts": r.get("first_ts"),
                    "record": json.dumps(r, sort_keys=True)} for r in new_records())
            for chunk in state.state_chunks("pack_cards", itertools.chain(carried, new)):
                yield beam.pvalue.TaggedOutput(TAG_STATE, ("pack_cards", pack(chunk)))

    def _prior_rows(self) -> list[dict]:
        from pitwatch.lake import state

        files = list(getattr(self.day_mode, "prior_state", ()) or ())
        if self.lake_path is None or not files:
            return []
        return state.read_rows(self.lake_path, files, "pack_cards")
