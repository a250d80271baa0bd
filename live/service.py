"""The live service loop: sources → decode → per-device order → engine → alert sinks, with checkpoints.

One thread, no Beam (design.md, "Speed and runners").  Each turn of the loop
reads whatever every source has (never blocking), decodes each line
(:func:`pitwatch.schemas.decode.decode_line`), takes the turn's lines in the
floor's order (:func:`pitwatch.live.order.in_floor_order`: per-device runs
merged by event time), passes each through
:class:`pitwatch.live.order.DeviceOrder` (duplicates dropped, per-device
``seq`` order, a bounded wait only for a hole), feeds the released events to
:class:`pitwatch.live.engine.LiveEngine` and delivers each finding at once,
in the same turn, to every sink (journalled per sink).  It sleeps ``poll``
seconds only when no source had anything.  Every ``checkpoint_every`` seconds
(and when stopping) a checkpoint is taken: its instant on the loop, between
two lines (the journal rotated, the positions taken, the lake's batch file of
alerts handed over to the committer process every ``commit_every`` seconds
and at stop: :mod:`pitwatch.live.alerts_committer`), the state of that instant
serialised and written by a forked child (:mod:`pitwatch.live.fork_snapshot`),
the rename in a background thread
(:class:`pitwatch.live.checkpoint.CheckpointWriter`), one at a time, so alerts
decided meanwhile are not held up.  Delivery to the sinks,
each alert once: :mod:`pitwatch.live.delivery`.

Stopping: SIGTERM or SIGINT is honoured at the next line, whatever the turn
read: the lines read and not taken yet are kept (:attr:`WatchService.unread`,
in the checkpoint: the sources' positions are past them, a restart takes them
first), then the service checkpoints and returns (exit 0); ``stop_after_idle`` does the same after that many seconds with no
input (and nothing held); ``finalize_at_stop`` first decides what the engine
keeps for the end of input (``TableReplay.close()``), as the nightly batch
does at the end of its files.
"""
from __future__ import annotations

import base64
import dataclasses
import datetime as _dt
import functools
import hashlib
import logging
import os
import signal
import time

import orjson

from pitwatch.engine.driver import CONFLICT, DUPLICATE, LATE, conflict_reason
from pitwatch.lake import Lake
from pitwatch.live.alert_text import alert_line
from pitwatch.live.alerts_committer import LakeSink
from pitwatch.live.checkpoint import CheckpointWriter, StateDir
from pitwatch.live.delivery import Delivery
from pitwatch.live.engine import LiveEngine
from pitwatch.live.fork_snapshot import CAN_FORK, fork_and_write
from pitwatch.live.heap import LongLivedHeap
from pitwatch.live.order import DeviceOrder, in_floor_order
from pitwatch.live.outbox import Outbox
from pitwatch.live.silence import SilenceWatch, SourceWatch
from pitwatch.live.sinks import JsonlFileSink, StdoutSink, WebhookSink
from pitwatch.live.sources import Line, open_sources
from pitwatch.live.status import StatusLine
from pitwatch.live.syslog import SyslogSink
from pitwatch.schemas.decode import GamingDayConfig, Reject, decode_line

log = logging.getLogger("pitwatch")

KEEP_DAYS = 2   # gaming days of delivered ids kept in the checkpoint
MAX_REJECTS = 1000   # rejected lines journalled in the checkpoint (a restart does not announce them again)


@dataclasses.dataclass
class WatchOptions:
    inputs: list
    lake: Lake
    state_dir: str | None = None
    watch_id: str = "default"
    config: GamingDayConfig = dataclasses.field(default_factory=GamingDayConfig)
    poll: float = 0.02
    scan_every: float = 0.5
    reorder_wait: float = 5.0           # --gap-wait: the longest wait for a device's missing seqs
    skew: float = 2.0                   # --skew: the clock difference allowed between a table's devices
    silence_after: float | None = 120.0  # --silence-after: DEVICE_SILENT (pitwatch.live.silence); None: off
    devices: object = None              # the device registry (pitwatch.inputs.devices.DeviceRegistry) or None
    devices_record: dict | None = None  # a registry given to this watcher, as its first alerts record names it
    window: int = 128
    checkpoint_every: float = 5.0
    commit_every: float = 30.0          # --commit-every: the alerts table's commits, at most this often (and on stop)
    stop_after_idle: float | None = None
    finalize_at_stop: bool = False
    finalize_after_idle: float | None = None
    stdout: bool = True
    alerts_file: str | None = None
    webhooks: tuple = ()
    lake_alerts: bool = True
    with_trigger: bool = False
    local: bool = False         # alerts' times in the table's display zone (display_zones, else the lake's), not UTC
    format: str = "json"        # stdout: "json" lines, or "text" (pitwatch.live.alert_text)
    video_pad: int = 30         # seconds around the evidence in the text's video window (findings_video's)
    dealer_names: dict = dataclasses.field(default_factory=dict)   # --dealers: dealer_id -> name, for the text
    display_zones: dict = dataclasses.field(default_factory=dict)  # table_id -> IANA zone: the text's, else the lake's
    syslog: tuple = ()          # --syslog targets (pitwatch.live.syslog)
    syslog_facility: str = "local0"
    status_every: float = 10.0  # at most one status line this often (pitwatch.live.status)
    redact: bool = True
    fsync: bool = False
    fork_snapshot: bool = CAN_FORK      # a checkpoint's state serialised by a forked child (pitwatch.live.fork_snapshot)


def default_state_dir(lake: Lake, watch_id: str) -> str:
    if lake.is_uri:
        raise ValueError("the lake is remote: give a local --state-dir for the watcher's checkpoint")
    return os.path.join(lake.location, "_watch", watch_id)


class WatchService:
    def __init__(self, opts: WatchOptions, stdout=None) -> None:
        if not opts.inputs:
            raise ValueError("give at least one INPUT: a file, folder, glob or redis:// stream")
        self.opts = opts
        self.sources = open_sources(list(opts.inputs), opts.scan_every)
        self.state = StateDir(opts.state_dir or default_state_dir(opts.lake, opts.watch_id), opts.fsync)
        self.order = DeviceOrder(opts.reorder_wait, opts.window)
        self.engine = LiveEngine(opts.config, opts.finalize_after_idle, guard=opts.redact, devices=opts.devices,
                                 early_wait=opts.reorder_wait, skew=opts.skew)
        self.silence = SilenceWatch(opts.silence_after) if opts.silence_after else None
        self.inputs_lost = SourceWatch(self.sources)          # SOURCE_LOST (pitwatch.live.silence)
        self.sinks: list = []
        # the text line of stdout and syslog: each table's display zone, else the lake's time zone, the
        # dealers' names (pitwatch.live.alert_text)
        text = functools.partial(alert_line, video_pad=opts.video_pad, zone=opts.config.zone,
                                 dealers=opts.dealer_names, tables=opts.display_zones)
        if opts.stdout:
            self.sinks.append(StdoutSink(stdout, render=text if opts.format == "text" else None))
        if opts.alerts_file:
            self.sinks.append(JsonlFileSink(opts.alerts_file))
        self.sinks += [WebhookSink(u) for u in opts.webhooks]
        self.sinks += [SyslogSink(t, text, opts.syslog_facility) for t in opts.syslog]
        self.status = StatusLine(opts.status_every)
        self.lake_sink = (LakeSink(opts.lake, opts.watch_id, self.state.path, opts.devices_record, opts.fsync)
                          if opts.lake_alerts else None)
        if self.lake_sink is not None:
            self.lake_sink.clock_day = lambda: opts.config.gaming_day(
                _dt.datetime.now(_dt.timezone.utc)).isoformat()       # compaction: only days the clock left
            self.sinks.insert(0, self.lake_sink)    # first: an alert any sink took is in its batch file
        self.sent: dict[str, dict[str, str]] = {s.name: {} for s in self.sinks}
        # lines = accepted + rejected + duplicate + stale (late lines are accepted ones: a subset)
        self.counts = {"lines": 0, "accepted": 0, "rejected": 0, "duplicate": 0, "stale": 0, "late": 0,
                       "findings": 0, "notices": 0, "provisional": 0, "provisional_cleared": 0}
        self.delivery = Delivery(self.sinks, self.sent, self.state, self.engine, self.counts, opts)
        self.rejects: dict[str, str] = {}   # "file:line:digest" -> reason, the last MAX_REJECTS (checkpointed)
        self.writer = CheckpointWriter()
        self.heap = LongLivedHeap()
        self._stop = False
        self.unread: list[Line] = []       # read, not taken yet when a stop came (checkpointed: taken first)
        self._damage_reads: list = []      # (path, future of its INPUT_DAMAGED facts): read off the loop
        self._damage_reader = None
        self._next_commit = time.monotonic() + opts.commit_every
        self._restore()

    # --- restore / checkpoint -------------------------------------------------
    def _decode(self, raw: bytes, file: str, number: int):
        out = decode_line(raw, file, number, self.opts.config)
        line = Line(raw, file, number)
        return (out if isinstance(out, Reject) else out[0]), line

    def _restore(self) -> None:
        ck = self.state.load()
        rest = ck["rest"] if ck else {}
        if ck:
            positions = rest.get("sources", {})
            for src in self.sources:
                src.restore(positions.get(_key(src), {}))
            self.order.restore(rest.get("order", {}), self._decode)
            self.engine.restore(ck["tables"], rest.get("engine", {}))
            self.counts.update(rest.get("counts", {}))
            self.unread = [Line(base64.b64decode(raw), file, number) for raw, file, number in rest.get("unread", [])]
            self.rejects = dict(rest.get("rejects", []))
            if self.silence is not None:
                self.silence.restore(rest.get("silence", {}))
            log.info("resuming from %s: %d table(s), %s lines read before",
                     self.state.file, len(ck["tables"]), f"{self.counts['lines']:,}")
        sent_ck = rest.get("sent", {})
        journal = self.state.read_journal()
        sink_states = rest.get("sinks", {})
        for s in self.sinks:
            sent = self.sent[s.name]
            sent.update({fid: day for fid, day in sent_ck.get(s.name, [])})
            sent.update(journal.get(s.name, {}))
            for fid, day in s.recover(sink_states.get(s.name, {})).items():
                sent.setdefault(fid, day)
            if isinstance(s, Outbox):      # a queued alert the journal says was delivered: not again
                s.forget(sent)
                s.start()

    def checkpoint(self, wait: bool = False, commit: bool = False) -> None:
        """The snapshot's instant now, on this thread; the state of that instant serialised and
        written by a forked child (:mod:`pitwatch.live.fork_snapshot`), renamed into place by the
        checkpoint thread (``wait``, at stop: serialised here, and waited for).

        The lake's alerts are in batch files of the state folder from the moment they are sent
        (:mod:`pitwatch.live.alerts_committer`); here the open batch is only handed over to the
        committer process — by the checkpoint that comes ``commit_every`` seconds or more after the
        last hand-over while no commit is in flight, and by the one at stop (``commit``, which waits
        for the commits) — so the commit never holds this loop, and the checkpoint holds only the
        open batch's number.

        Called between two lines, so every alert of every event before the positions taken here
        was already delivered and journalled (stdout, file, the lake's batch file, webhook 2xx) or
        is in the webhook queue taken here.  The journal is rotated here: records after this point
        go to the next generation, which the checkpoint does not delete.
        """
        self.writer.wait()                      # one at a time (the loop only calls when idle)
        t0 = time.perf_counter()
        lake = self.lake_sink
        if lake is not None and (commit or time.monotonic() >= self._next_commit):
            if lake.seal(force=commit):         # raises if the committer failed
                self._next_commit = time.monotonic() + self.opts.commit_every
            if commit:
                lake.wait()
        elif lake is not None:
            lake.poll()
        sink_states = {}
        for s in self.sinks:
            if isinstance(s, Outbox):   # delivered since, and still queued, taken in one step
                done, sink_states[s.name] = s.snapshot()
                self.delivery.delivered(s, done)
            else:
                sink_states[s.name] = s.state()
        self._prune_sent()
        self.order.forget_silent()              # bounded memory over days (pitwatch.live.order)
        gen = self.state.rotate()
        sources = {_key(s): s.position() for s in self.sources}
        unread = [[base64.b64encode(ln.raw).decode("ascii"), ln.file, ln.line] for ln in self.unread]

        def serialise() -> tuple[dict, bytes]:
            rest = orjson.dumps({
                "sources": sources,
                "unread": unread,
                "order": orjson.Fragment(self.order.state_json()),
                "engine": self.engine.other_state(),
                "counts": self.counts,
                "rejects": list(self.rejects.items()),
                "silence": self.silence.state() if self.silence is not None else {},
                "sinks": sink_states,
                "sent": {name: sorted(ids.items()) for name, ids in self.sent.items()},
                "journal": gen,
                "written": _dt.datetime.now(_dt.timezone.utc).isoformat(),
            })
            return dict(self.engine.state_fragments()), rest

        state = self.state
        if not wait:
            self.heap.settle()                  # the state out of the full collections (pitwatch.live.heap)
        child = None
        if not wait and self.opts.fork_snapshot:
            try:
                child = fork_and_write(serialise, state.write_partial, state.partial_path,
                                       close_fds=(state.lock_fd,))
            except OSError as exc:              # no memory or processes left for a fork: on the loop
                log.warning("checkpoint: cannot fork (%s): serialised on the loop this time", exc)
        if child is None:
            tables, rest = serialise()          # bytes: nothing later can change them
        log.debug("checkpoint: the loop stopped %.1f ms (%s), last write %.1f ms",
                  (time.perf_counter() - t0) * 1000, "serialised here" if child is None else "forked",
                  self.writer.last_seconds * 1000)

        def write() -> None:
            if child is None:
                state.save(tables, rest, gen)
            else:
                state.publish(child.wait(), gen)

        self.writer.submit(write)
        if wait:
            self.writer.wait()

    def _prune_sent(self) -> None:
        days = [d for ids in self.sent.values() for d in ids.values() if d]
        if not days:
            return
        keep = (_dt.date.fromisoformat(max(days)) - _dt.timedelta(days=KEEP_DAYS - 1)).isoformat()
        for name, ids in self.sent.items():
            self.sent[name] = {f: d for f, d in ids.items() if not d or d >= keep}

    # --- the loop -----------------------------------------------------------------
    def _feed(self, item, line: Line) -> None:
        if isinstance(item, Reject):
            self.delivery.emit(self.engine.feed_reject(item), line)
        else:
            found = self.engine.feed(item)
            for refused, why in self.engine.refused:    # the replay refused it: a rejected line, not accepted
                self.counts["accepted"] -= 1
                self._reject(line, why, refused.event_id)
            self.delivery.provisional(self.engine.raised, line, item)
            self.delivery.emit(found, line, item)
            self.delivery.provisional(self.engine.cleared, line, item)
            if self.silence is not None:
                self.delivery.announce(self.silence.observe(item))

    def finalize(self, table_ids=None) -> None:
        """``close()`` tables (pitwatch.live.engine) and send what that decided: provisional, final, cleared."""
        found = self.engine.finalize(table_ids)
        self.delivery.provisional(self.engine.raised)
        self.delivery.emit(found)
        self.delivery.provisional(self.engine.cleared)

    def _reject(self, line: Line, reason: str, event_id=None) -> None:
        """Count a rejected line and journal it with the checkpoint: after a restart that re-reads
        it (it came after the last checkpoint), it is not announced again as a new reject."""
        self.counts["rejected"] += 1
        place = f"{line.file}:{line.line}"
        # the line's bytes in the key: a rotated file's successor numbers its lines from 1 again, and
        # its line 17 is not the line 17 rejected yesterday (the same line read again after a restart is)
        key = f"{place}:{hashlib.blake2b(line.raw, digest_size=8).hexdigest()}"
        if key in self.rejects:
            log.debug("rejected again after the restart %s: %s", place, reason)
            return
        self.rejects[key] = reason
        if len(self.rejects) > MAX_REJECTS:
            del self.rejects[next(iter(self.rejects))]
        which = f" (event_id {str(event_id)[:80]!r})" if event_id is not None else ""
        log.warning("rejected %s%s: %s", place, which, reason[:300])

    def take(self, lines: list[Line], whole: bool = False) -> None:
        """One turn's lines (of every source): decoded, put in the floor's order
        (:func:`pitwatch.live.order.in_floor_order`) and taken one by one.

        A stop requested meanwhile (SIGTERM, SIGINT) is honoured at the next line, however much the
        turn read: the lines not taken yet are kept in :attr:`unread`, in the order they would have
        been taken, and go into the checkpoint with the sources' positions (which are past them), so
        a restart takes them first — nothing lost, nothing taken twice.  ``whole``: every line,
        stop or not (the end of input of ``--finalize-at-stop``)."""
        config, decoded = self.opts.config, []
        for line in lines:
            if self._stop and not whole:
                self.unread = lines
                return
            decoded.append((line, decode_line(line.raw, line.file, line.line, config)))   # total: never raises
        ordered = in_floor_order(decoded)
        for k, (line, out) in enumerate(ordered):
            if self._stop and not whole:
                self.unread = [ln for ln, _out in ordered[k:]]
                return
            self._take(line, out)

    def _take(self, line: Line, out) -> None:
        self.counts["lines"] += 1
        if isinstance(out, Reject):
            self._reject(line, out.reason, out.event_id)
            if out.device_id is None or out.seq is None:
                return
            ready, _why = self.order.offer(out, out.digest or "", line)
        else:
            ev, digest = out
            ready, why = self.order.offer(ev, digest, line)
            if why is None or why == LATE:
                self.counts["accepted"] += 1
                if why == LATE:
                    self.counts["late"] += 1
            elif why == CONFLICT:   # the driver's rule: the conflicting copy is rejected, with its reason
                self._reject(line, conflict_reason(ev.device_id, ev.event_id, every_copy=False), ev.event_id)
            else:                   # a duplicate delivery, or a stale one (pitwatch.live.order)
                self.counts["duplicate" if why == DUPLICATE else "stale"] += 1
        for item, ln in ready:
            self._feed(item, ln)

    def input_damaged(self, path: str) -> None:
        """A source file found damaged: its ``INPUT_DAMAGED`` alert, the batch's finding (same
        ``finding_id``: :mod:`pitwatch.inputs.damage` reads the file as the batch does); the run's
        day, when it held no line before the damage, is the gaming day of now.

        The file is read again on a thread of its own (a large damaged file read twice on the loop
        held every other alert back for as long); :meth:`_damage_alerts` sends the alert once the
        facts are in, and no checkpoint is taken while one is being read (a kill then reads it
        again at the restart, never loses its alert)."""
        import concurrent.futures

        if self._damage_reader is None:
            self._damage_reader = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="pitwatch-damage")
        self._damage_reads.append((path, self._damage_reader.submit(self._damage_facts, path)))

    def _damage_facts(self, path: str) -> dict | None:
        from pitwatch.inputs.damage import damage_facts, damage_of

        try:
            damage = damage_of(path)
        except OSError as exc:
            log.warning("%s: cannot read it again for its INPUT_DAMAGED alert: %s", path, exc)
            return None
        if damage is None:
            log.warning("%s: the batch's reader finds no damage in it: no INPUT_DAMAGED alert", path)
            return None
        return damage_facts(damage, self.opts.config)

    def _damage_alerts(self, wait: bool = False) -> None:
        """The INPUT_DAMAGED alerts whose file has been read again (all of them, with ``wait``)."""
        from pitwatch.inputs.damage import damage_finding

        pending = []
        for path, future in self._damage_reads:
            if not (wait or future.done()):
                pending.append((path, future))
                continue
            try:
                facts = future.result()
            except Exception:   # noqa: BLE001 - one file's facts never stop the watcher
                log.exception("%s: its INPUT_DAMAGED facts could not be gathered", path)
                continue
            if facts is not None:
                day = self.opts.config.gaming_day(_dt.datetime.now(_dt.timezone.utc))
                self.delivery.emit([damage_finding(facts, day, self.opts.config)])
        self._damage_reads = pending

    def request_stop(self, *_args) -> None:
        self._stop = True

    def run(self, install_signals: bool = True) -> dict:
        if install_signals:
            signal.signal(signal.SIGTERM, self.request_stop)
            signal.signal(signal.SIGINT, self.request_stop)
        log.info("watching %s", "; ".join(s.describe() for s in self.sources))
        opts = self.opts
        now = time.monotonic()
        next_ck = now + opts.checkpoint_every
        last_input = now
        try:
            while not self._stop:
                lines, self.unread = self.unread, []
                for src in self.sources:
                    lines += src.read()
                    for path in src.take_damaged() if hasattr(src, "take_damaged") else ():
                        self.input_damaged(path)
                    for place, why in src.take_lost() if hasattr(src, "take_lost") else ():
                        self.counts["lines"] += 1       # a span never read (a truncated file): one rejected line
                        self._reject(place, why)
                got = len(lines)
                self.take(lines)
                if self._stop:      # the rest of the turn would decide on lines still unread (a gap wait,
                    break           # an idle table): the stop's checkpoint keeps them for the restart
                self._damage_alerts()
                self.delivery.announce(self.inputs_lost.look())
                now = time.monotonic()
                for item, ln in self.order.due(now):
                    self._feed(item, ln)
                idle = self.engine.idle_tables(now)
                if idle:
                    self.finalize(idle)
                self.delivery.emit(self.engine.due(now))     # UNSHUFFLED_PACK whose wait ran out (pitwatch.live.early)
                for sink in self.outboxes:
                    self.delivery.delivered(sink, sink.delivered())
                self.writer.check()
                if now >= next_ck and not self.writer.busy and not self._damage_reads:
                    self.checkpoint()
                    next_ck = time.monotonic() + opts.checkpoint_every
                if self.status.due(now):
                    self._status(now, caught_up=not got and not self.order.held)
                if got:
                    last_input = now
                    continue
                if self.inputs_lost.failing:    # an input that cannot be read has not ended: not idle
                    last_input = now
                if (opts.stop_after_idle is not None and now - last_input >= opts.stop_after_idle
                        and not self.order.held and not self._delivering()):
                    break
                time.sleep(opts.poll)
            self._damage_alerts(wait=True)
            if opts.finalize_at_stop:     # the end of input: the lines read are in it (a stop waits for them)
                lines, self.unread = self.unread, []
                self.take(lines, whole=True)
                for item, ln in self.order.due(everything=True):
                    self._feed(item, ln)
                self.finalize()
            for sink in self.outboxes:      # the alert in flight finishes (or is sent again next time)
                sink.stop(getattr(sink, "timeout", 5.0) + 1)
                self.delivery.delivered(sink, sink.delivered())
            self.checkpoint(wait=True, commit=True)
        finally:
            self.close()
        return self.summary()

    def _delivering(self) -> bool:
        """A remote sink still has alerts it is delivering (an idle stop waits for them; not for a
        receiver that fails: its queue is in the checkpoint)."""
        return any(s.queue and s.failing_since is None for s in self.outboxes)

    @property
    def outboxes(self) -> list:
        return [s for s in self.sinks if isinstance(s, Outbox)]

    def _status(self, now: float, caught_up: bool) -> None:
        """The status line (pitwatch.live.status), when it is due and something changed."""
        text = self.status.line(now, self.counts, caught_up, self.order.held,
                                [s.status() for s in self.sources],
                                [(s.name, s.health(), s.health_key()) for s in self.outboxes],
                                self.inputs_lost.status())
        if text is not None:
            log.info("%s", text)

    def summary(self) -> dict:
        return {**self.order.counts, **self.counts, "damaged_files": self.damaged_files(),
                "alerts_commits": self.lake_sink.commits if self.lake_sink is not None else 0,
                "tables": len(self.engine.tables), "masked": getattr(self.engine.guard, "masked", 0),
                "state_dir": self.state.path}

    def damaged_files(self) -> int:
        return sum(len(getattr(s, "damaged", ())) for s in self.sources)

    def close(self) -> None:
        if self._damage_reader is not None:
            self._damage_reader.shutdown(wait=True, cancel_futures=True)
        try:
            self.writer.wait()
        except RuntimeError as exc:
            log.error("%s", exc)
        for s in self.sources:
            s.close()
        for s in self.sinks:
            if hasattr(s, "close"):
                s.close()
        self.state.close()


def _key(source) -> str:
    return getattr(source, "label", "files")
