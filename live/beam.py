"""The live engine as a Beam streaming pipeline, for Flink or Dataflow.

No local Beam runner runs an unbounded source properly (design.md), so the
embedded service (:mod:`pitwatch.live.service`) is plain Python; this is
the same engine for a cluster: the same ``TableReplay`` and ``SeqTracker``
in stateful DoFns, their state in Beam state (the engine's JSON state)::

    lines ─ DecodeLines ─ KeyByDevice ─ OrderDevice (dedup, seq order, SEQ_GAP) ─┬─ findings
                                                  └ KeyByTable ─ ReplayTable ─────┘

* ``OrderDevice`` (keyed by ``device_id``): the driver's duplicate and conflict
  rule (:class:`pitwatch.engine.driver.DeviceGate`, per (``device_id``,
  ``event_id``): a duplicate is dropped, a conflicting copy rejected with its
  reason on the ``conflicts`` output), releases each device's lines in
  ``seq`` order, holding a line after a hole until the watermark passes its
  timestamp + ``wait`` (then the hole is lost: ``SEQ_GAP``; a line of it
  arriving later is late and replayed: the driver's gap rule, as live).  Each released
  event carries the ``seq`` of the same device's previous event *for the same
  table*, because Beam keeps no order between steps.
* ``ReplayTable`` (keyed by ``table_id``): feeds an event to the table's
  :class:`pitwatch.engine.driver.TableDriver` once its device's previous one was
  fed (that chain restores per-device order), keeps the replay's state as
  JSON in Beam state, hands out the driver's ``rounds`` and ``packs`` rows,
  and ``close()``s the table when the watermark passes its last event +
  ``finalize_after`` (at the end of a bounded stream, the watermark's end:
  the batch's end of input).

Sources and sinks for a cluster: ``--source kafka`` (``ReadFromKafka``, a
cross-language transform: Flink with the Java expansion service, Dataflow
runner v2) or ``--source pubsub`` (``ReadFromPubSub``); alerts as JSON to a
Kafka topic or a Pub/Sub topic with ``finding_id`` as the message id
attribute.  Beam's state and outputs are committed together per bundle on
those runners, so state is exactly once; the external sink is at least once,
and consumers drop repeats by ``finding_id``.

Tested with ``TestStream`` on the ``BundleBasedDirectRunner``
(tests/watch/test_watch_beam.py): it gives the nightly batch's rows (findings,
rounds, packs: every column), except :data:`pitwatch.engine.driver.LIVE_DIFFERENCES`.
"""
from __future__ import annotations

import argparse
import json
import logging
import typing

import apache_beam as beam
from apache_beam.coders import StrUtf8Coder
from apache_beam.transforms.timeutil import TimeDomain
from apache_beam.transforms.userstate import BagStateSpec, ReadModifyWriteStateSpec, TimerSpec, on_timer
from apache_beam.utils.timestamp import Timestamp

from pitwatch.engine.driver import CONFLICT, RECENT_WINDOW, SEQ_GAP_GAME, DeviceGate, conflict_reason, line_hash

TAG_FINDINGS = "findings"
TAG_CONFLICTS = "conflicts"
TAG_ROUNDS = "rounds"
TAG_PACKS = "packs"
TAG_REJECTS = "rejects"      # events the replay refused (a round_started naming an open round), with the reason
WINDOW = RECENT_WINDOW
KEYED = typing.Tuple[str, typing.Any]


class DecodeLines(beam.DoFn):
    """Raw line → ``(device_id, (seq, item))`` with item an Event or a readable Reject."""

    def __init__(self, config) -> None:
        self.config = config

    def process(self, raw, timestamp=beam.DoFn.TimestampParam):
        from pitwatch.schemas.decode import Reject, decode_line

        out = decode_line(raw, "stream", 0, self.config)
        if isinstance(out, Reject):
            if out.device_id is not None and out.seq is not None:
                yield out.device_id, (out.seq, line_hash(str(out.event_id), out.digest or ""), out)
            return
        ev, digest = out
        yield beam.window.TimestampedValue((ev.device_id, (ev.seq, line_hash(ev.event_id, digest), ev)),
                                           Timestamp(micros=ev.ts))


def _gate(st) -> DeviceGate:
    """The driver's duplicate and gap rule over the device's Beam state (plain data, shared)."""
    return DeviceGate(st["recent"], WINDOW, st.setdefault("holes", []))


class OrderDevice(beam.DoFn):
    DEV = ReadModifyWriteStateSpec("device", StrUtf8Coder())
    HELD = BagStateSpec("held", beam.coders.PickleCoder())
    HOLE = TimerSpec("hole", TimeDomain.WATERMARK)

    def __init__(self, config, wait_seconds: float = 5.0) -> None:
        self.config = config
        self.wait = wait_seconds

    def _tracker(self, st):
        from pitwatch.engine.driver import new_seq_tracker
        from pitwatch.rules.finding import gaming_day_from_config

        return new_seq_tracker(gaming_day_from_config(self.config), st["tracker"])

    def _release(self, st, items, tracker):
        """Feed items (in seq order) to the tracker; yield the events for the tables."""
        from pitwatch.schemas.decode import Reject

        for item in items:
            if isinstance(item, Reject):
                found = tracker.feed_reject(item)
            else:
                found = tracker.feed_event(item, SEQ_GAP_GAME)
                prev = st["tables"].get(item.table_id)
                st["tables"][item.table_id] = item.seq
                yield item.table_id, (prev, item)
            for f in found:
                yield beam.pvalue.TaggedOutput(TAG_FINDINGS, f)

    def _drain(self, st, held, upto, tracker):
        """Release held lines: the next seq at once; past a hole only once ``upto`` passed them."""
        pending = sorted(held.read(), key=lambda x: x[0])
        held.clear()
        ready, rest = [], []
        gate = _gate(st)
        for seq, ts, item in pending:
            nxt = st["last"] is not None and seq == st["last"] + 1
            if nxt or (upto is not None and ts + self.wait_micros <= upto and not rest):
                if st["last"] is None or seq > st["last"]:
                    gate.advance(st["last"], seq)   # the wait ran out: the seqs before it are a hole
                    st["last"] = seq
                ready.append(item)
            else:
                rest.append((seq, ts, item))
        for x in rest:
            held.add(x)
        st["timer"] = min((ts for _s, ts, _i in rest), default=None)
        return list(self._release(st, ready, tracker)), st["timer"]

    @property
    def wait_micros(self) -> int:
        return int(self.wait * 1_000_000)

    def process(self, kv, dev=beam.DoFn.StateParam(DEV), held=beam.DoFn.StateParam(HELD),
                hole=beam.DoFn.TimerParam(HOLE), timestamp=beam.DoFn.TimestampParam):
        device, (seq, h, item) = kv
        st = json.loads(dev.read() or '{"last": null, "recent": {}, "tables": {}, "tracker": {"last": {}}, '
                        '"timer": null}')
        out = []
        tracker = self._tracker(st)
        gate = _gate(st)
        why = gate.admit(item.event_id, seq, h, st["last"])
        if why == CONFLICT:   # the driver's rule: the conflicting copy is rejected with its reason
            out = [beam.pvalue.TaggedOutput(TAG_CONFLICTS, {
                "device_id": device, "event_id": item.event_id, "seq": seq, "table_id": item.table_id,
                "reason": conflict_reason(device, item.event_id, every_copy=False)})]
        elif why is not None:
            pass  # a duplicate delivery (or too old to tell: a stale one)
        elif st["last"] is not None and seq <= st["last"]:
            gate.fill(seq)    # late (the driver's gap rule): past its place already, replayed now
            out = list(self._release(st, [item], tracker))
        else:
            # the first line of a device waits like a hole: Beam delivers a device's lines in any order
            held.add((seq, timestamp.micros, item))
            out, at = self._drain(st, held, None, tracker)
            if at is not None:
                hole.set(Timestamp(micros=at + self.wait_micros))
        st["tracker"] = tracker.state()
        dev.write(json.dumps(st))
        yield from out

    @on_timer(HOLE)
    def hole_timeout(self, dev=beam.DoFn.StateParam(DEV), held=beam.DoFn.StateParam(HELD),
                     hole=beam.DoFn.TimerParam(HOLE), fired=beam.DoFn.TimestampParam):
        st = json.loads(dev.read())
        tracker = self._tracker(st)
        out, at = self._drain(st, held, fired.micros, tracker)
        if at is not None:
            hole.set(Timestamp(micros=at + self.wait_micros))
        st["tracker"] = tracker.state()
        dev.write(json.dumps(st))
        yield from out


class ReplayTable(beam.DoFn):
    REPLAY = ReadModifyWriteStateSpec("replay", StrUtf8Coder())
    WAITING = BagStateSpec("waiting", beam.coders.PickleCoder())
    FINAL = TimerSpec("finalize", TimeDomain.WATERMARK)

    def __init__(self, config, finalize_after_seconds: float = 3600.0) -> None:
        self.config = config
        self.finalize_after = finalize_after_seconds

    def _load(self, table_id, raw):
        from pitwatch.engine.driver import TableDriver
        from pitwatch.rules.finding import gaming_day_from_config

        day = gaming_day_from_config(self.config)
        if raw is None:
            return TableDriver(table_id, day), {"chain": {}, "last_ts": None}
        st = json.loads(raw)
        return TableDriver(table_id, day, st["replay"]), {"chain": st["chain"], "last_ts": st.get("last_ts")}

    @staticmethod
    def _save(state, rp, chain):
        """Keep the state; yield the rows the driver hands out (tagged ``rounds``, ``packs``)."""
        rows = rp.take_rows()
        state.write('{"replay":' + rp.state_json().decode() + ',"chain":' + json.dumps(chain["chain"])
                    + ',"last_ts":' + json.dumps(chain["last_ts"]) + "}")
        for row in rows.rounds:
            yield beam.pvalue.TaggedOutput(TAG_ROUNDS, row)
        for row in rows.packs:
            yield beam.pvalue.TaggedOutput(TAG_PACKS, row)

    def process(self, kv, state=beam.DoFn.StateParam(REPLAY), waiting=beam.DoFn.StateParam(WAITING),
                final=beam.DoFn.TimerParam(FINAL), timestamp=beam.DoFn.TimestampParam):
        table_id, (prev, ev) = kv
        rp, st = self._load(table_id, state.read())
        chain = st["chain"]
        pending = list(waiting.read()) + [(prev, ev)]
        waiting.clear()
        progress = True
        while progress:
            progress = False
            for entry in list(pending):
                p, e = entry
                if chain.get(e.device_id) == p:
                    yield from rp.feed(e)
                    for refused, why in rp.take_rejects():   # the driver's rule: rejected with the reason
                        yield beam.pvalue.TaggedOutput(TAG_REJECTS, {
                            "device_id": refused.device_id, "event_id": refused.event_id, "seq": refused.seq,
                            "table_id": refused.table_id, "reason": why})
                    chain[e.device_id] = e.seq
                    pending.remove(entry)
                    progress = True
        for entry in pending:
            waiting.add(entry)
        # the idle close counts from the table's latest element, not the last one processed (Beam
        # hands a table its elements in any order)
        st["last_ts"] = max(timestamp.micros, st["last_ts"] or timestamp.micros)
        final.set(Timestamp(micros=st["last_ts"]) + self.finalize_after)
        yield from self._save(state, rp, st)

    @on_timer(FINAL)
    def finalize(self, key=beam.DoFn.KeyParam, state=beam.DoFn.StateParam(REPLAY)):
        """The idle close (the driver's close policy): the end of input, for a bounded stream."""
        rp, chain = self._load(key, state.read())
        yield from rp.close()
        yield from self._save(state, rp, chain)


class ReplayLive(beam.PTransform):
    """Raw event lines (timestamped, unbounded) → findings (``pitwatch.rules.finding.Finding``).

    ``with_rows``: a dict of PCollections instead, ``findings``, ``rounds`` and
    ``packs`` (row dicts of ``pitwatch.schemas.arrow.ROUNDS``/``PACKS``),
    ``conflicts`` (the conflicting copies rejected, with their reason) and ``rejects`` (the events
    the replay refused, with their reason: :meth:`pitwatch.engine.driver.TableDriver.take_rejects`).
    """

    def __init__(self, config=None, wait_seconds: float = 5.0, finalize_after_seconds: float = 3600.0,
                 with_rows: bool = False):
        super().__init__()
        from pitwatch.schemas.decode import GamingDayConfig

        self.config = config or GamingDayConfig()
        self.wait = wait_seconds
        self.finalize_after = finalize_after_seconds
        self.with_rows = with_rows

    def expand(self, lines):
        ordered = (
            lines
            | "DecodeLines" >> beam.ParDo(DecodeLines(self.config)).with_output_types(KEYED)
            | "OrderDevice" >> beam.ParDo(OrderDevice(self.config, self.wait)).with_outputs(
                TAG_FINDINGS, TAG_CONFLICTS, main="events")
        )
        events = ordered.events | "KeyByTable" >> beam.Map(lambda kv: kv).with_output_types(KEYED)
        replayed = events | "ReplayTable" >> beam.ParDo(ReplayTable(self.config, self.finalize_after)).with_outputs(
            TAG_ROUNDS, TAG_PACKS, TAG_REJECTS, main="findings")
        findings = (replayed.findings, ordered[TAG_FINDINGS]) | "AllFindings" >> beam.Flatten()
        if not self.with_rows:
            return findings
        return {"findings": findings, "rounds": replayed[TAG_ROUNDS], "packs": replayed[TAG_PACKS],
                "conflicts": ordered[TAG_CONFLICTS], "rejects": replayed[TAG_REJECTS]}


def _alert_json(f) -> bytes:
    from pitwatch.live.sinks import alert_record

    return json.dumps(alert_record(f), sort_keys=True).encode()


def run(argv=None) -> None:
    """``python -m pitwatch.live.beam --source kafka|pubsub … --runner=FlinkRunner|DataflowRunner …``"""
    from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

    ap = argparse.ArgumentParser(description=run.__doc__)
    ap.add_argument("--source", choices=("kafka", "pubsub"), required=True)
    ap.add_argument("--bootstrap-servers", help="Kafka brokers (host:port,…)")
    ap.add_argument("--topic", help="Kafka topic of event lines")
    ap.add_argument("--subscription", help="Pub/Sub subscription of event lines")
    ap.add_argument("--alerts-topic", required=True, help="Kafka or Pub/Sub topic for the alerts")
    ap.add_argument("--gap-wait", "--reorder-wait", dest="reorder_wait", type=float, default=5.0)
    ap.add_argument("--finalize-after-idle", type=float, default=3600.0)
    args, beam_args = ap.parse_known_args(argv)
    options = PipelineOptions(beam_args)
    options.view_as(StandardOptions).streaming = True
    with beam.Pipeline(options=options) as p:
        if args.source == "kafka":
            from apache_beam.io.kafka import ReadFromKafka, WriteToKafka

            lines = (p | "ReadKafka" >> ReadFromKafka({"bootstrap.servers": args.bootstrap_servers}, [args.topic])
                     | "Values" >> beam.Map(lambda kv: kv[1]))
        else:
            lines = p | "ReadPubSub" >> beam.io.ReadFromPubSub(subscription=args.subscription)
        findings = lines | "ReplayLive" >> ReplayLive(None, args.reorder_wait, args.finalize_after_idle)
        if args.source == "kafka":
            (findings | "KeyById" >> beam.Map(lambda f: (f.finding_id.encode(), _alert_json(f)))
             .with_output_types(tuple[bytes, bytes])
             | "WriteKafka" >> WriteToKafka({"bootstrap.servers": args.bootstrap_servers}, args.alerts_topic))
        else:
            (findings | "ToMessage" >> beam.Map(
                lambda f: beam.io.PubsubMessage(_alert_json(f), {"finding_id": f.finding_id}))
             | "WritePubSub" >> beam.io.WriteToPubSub(args.alerts_topic, id_label="finding_id",
                                                      with_attributes=True))


if __name__ == "__main__":
    logging.getLogger().setLevel(logging.INFO)
    run()
