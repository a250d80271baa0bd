"""Delivery to a remote receiver (webhook, syslog) on a thread of its own: never the service's loop.

A receiver that is dead, refuses, answers 500 or hangs must not delay the
replay, stdout or any other sink.  So a remote sink's ``send()`` only puts the
alerts in its :class:`Outbox` queue and returns at once; one thread per sink
delivers the queue **in order**, one alert at a time (the head is taken off
only once the receiver took it), and after a failure waits and tries the same
alert again: 0.5 s, doubling to ``max_backoff`` (30 s), back to 0.5 s after a
success.  Nothing is ever dropped: an alert leaves the queue only delivered.

Exactly-once bookkeeping stays on the loop (:mod:`pitwatch.live.service`): the loop
collects the ids delivered (:meth:`Outbox.delivered`) every turn and
journals them; a checkpoint takes, in one step under the queue's lock, the
ids delivered since and the queue still to deliver (:meth:`Outbox.snapshot`),
so an alert is always either delivered-and-recorded or in the checkpoint's
queue.  At stop the thread delivers what is queued while the receiver takes
it, for at most the sink's timeout + 1 s, finishes the alert in flight and
stops before the last checkpoint (:meth:`Outbox.stop`); what is left waits
in the checkpoint for the next start.

Logging stays quiet: the first failure of a run of failures is a warning,
the return to service is one info line; in between the status line
(:mod:`pitwatch.live.status`) shows the sink's :meth:`Outbox.health`.
"""
from __future__ import annotations

import logging
import threading
import time

log = logging.getLogger("pitwatch")


class DeliveryError(Exception):
    """The receiver did not take the alert (no answer, refused, not 2xx, …): try again later."""


class Outbox:
    """The queue and delivery thread of one remote sink; subclasses define :meth:`deliver`."""

    name = "outbox"
    first_backoff = 0.5

    def __init__(self, max_backoff: float = 30.0) -> None:
        self.max_backoff = max_backoff
        self.queue: list[dict] = []          # not yet delivered, in order; the head may be in flight
        self._done: list[tuple[str, str]] = []   # (finding_id, gaming_day) delivered, not yet collected
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._retry_at = 0.0
        self._backoff = self.first_backoff
        self.failing_since: float | None = None   # time.time() of the first failure of this run of them
        self.last_error: str | None = None
        self.delivered_count = 0

    # --- what a subclass provides -------------------------------------------------------
    def deliver(self, rec: dict) -> None:
        """Hand one alert to the receiver; return only once it took it, else raise DeliveryError."""
        raise NotImplementedError

    def disconnect(self) -> None:
        """Drop any connection (called on the delivery thread after a failure, and at close)."""

    # --- the loop's side -----------------------------------------------------------------
    def send(self, records: list[dict]) -> list[str]:
        """Queue the alerts (never blocks); returns ``[]``: delivery is reported by :meth:`delivered`."""
        with self._cond:
            queued = {r["finding_id"] for r in self.queue}
            self.queue.extend(r for r in records if r["finding_id"] not in queued)
            self._cond.notify()
        self._start()
        return []

    def delivered(self) -> list[tuple[str, str]]:
        """``(finding_id, gaming_day)`` of the alerts delivered since the last call."""
        with self._cond:
            done, self._done = self._done, []
        return done

    def snapshot(self) -> tuple[list[tuple[str, str]], dict]:
        """In one step: the alerts delivered since the last call and the queue's state (for a checkpoint)."""
        with self._cond:
            done, self._done = self._done, []
            return done, {"queue": list(self.queue)}

    def state(self) -> dict:
        with self._cond:
            return {"queue": list(self.queue)}

    def recover(self, state: dict) -> dict:
        with self._cond:
            self.queue = [r for r in state.get("queue", []) if isinstance(r, dict) and "finding_id" in r]
        return {}   # the service drops what its journal says was delivered (forget), then start()s

    def forget(self, ids) -> None:
        """Drop queued alerts already delivered (the journal says so after a restart)."""
        with self._cond:
            self.queue = [r for r in self.queue if r["finding_id"] not in ids]

    def health(self) -> str:
        with self._cond:
            queued = len(self.queue)
        if self.failing_since is not None:
            return (f"failing for {time.time() - self.failing_since:.0f} s ({self.last_error}), "
                    f"{queued:,} queued")
        return f"ok, {queued:,} queued" if queued else "ok"

    def health_key(self) -> tuple:
        """What counts as a change of health for the status line: failing or not, how many queued."""
        with self._cond:
            return self.failing_since is not None, len(self.queue)

    def stop(self, timeout: float) -> None:
        """At most ``timeout`` seconds to deliver what is queued while the receiver takes it (a
        failing one is not waited for: its queue stays in the checkpoint), then stop the thread
        after the alert in flight."""
        end = time.monotonic() + timeout
        self._start()
        while self.queue and self.failing_since is None and time.monotonic() < end:
            time.sleep(0.01)
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(max(end - time.monotonic(), 0.1))
            if self._thread.is_alive():
                log.warning("%s: an alert still in flight at stop is sent again at the next start", self.name)

    def close(self) -> None:
        self.stop(0.1)
        if self._thread is None or not self._thread.is_alive():
            self.disconnect()

    # --- the delivery thread -----------------------------------------------------------
    def start(self) -> None:
        """Start delivering what is queued (a restart's queue), if anything is."""
        if self.queue:
            self._start()

    def _start(self) -> None:
        if self._thread is None and not self._stopping:
            self._thread = threading.Thread(target=self._run, name=f"deliver {self.name}", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stopping and (not self.queue or time.monotonic() < self._retry_at):
                    wait = None if not self.queue else max(self._retry_at - time.monotonic(), 0.001)
                    self._cond.wait(wait)
                if self._stopping:
                    return
                rec = self.queue[0]
            try:
                self.deliver(rec)
            except DeliveryError as exc:
                self._failed(str(exc), len(self.queue))
                continue
            except Exception as exc:    # a bug or an odd answer must not end delivery: the alert stays queued
                self._failed(f"{type(exc).__name__}: {exc}", len(self.queue))
                continue
            with self._cond:
                if self.queue and self.queue[0] is rec:
                    self.queue.pop(0)
                    self._done.append((rec["finding_id"], rec.get("gaming_day") or ""))
                    self.delivered_count += 1
            if self.failing_since is not None:
                log.info("%s: delivering again after %.0f s of failures", self.name, time.time() - self.failing_since)
                self.failing_since = None
            self._backoff = self.first_backoff

    def _failed(self, why: str, queued: int) -> None:
        self.disconnect()
        self.last_error = why[:200]
        if self.failing_since is None:
            self.failing_since = time.time()
            log.warning("%s: %s; %d alert(s) queued, retried with backoff (0.5 s doubling to %.0f s)",
                        self.name, self.last_error, queued, self.max_backoff)
        self._retry_at = time.monotonic() + self._backoff
        self._backoff = min(self._backoff * 2, self.max_backoff)
