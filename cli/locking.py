"""The lake's lock for a command: ``--lock-timeout`` and the exit code 4 (:mod:`pitwatch.lake.lock`)."""
from __future__ import annotations

import contextlib

import click

from pitwatch.cli import exits
from pitwatch.cli.common import CommandError, setting_option
from pitwatch.lake import Lake


class Locked(CommandError):
    """Another writer held the lake for longer than ``--lock-timeout``: ``Error: …`` naming it, exit 4."""

    exit_code = exits.LOCKED


class LeaseLost(CommandError):
    """The command's lease on an object-store lake was taken over or ran out while it worked: it
    committed nothing more (``Error: …``, exit 3: did not complete)."""

    exit_code = exits.INCOMPLETE


class Duration(click.ParamType):
    """Seconds (``3600``) or a number with a unit (``90s``, ``5m``, ``1h``, ``2d``), as float seconds."""

    name = "duration"

    def convert(self, value, param, ctx):
        from pitwatch.config import parse_duration

        if isinstance(value, float):
            return value
        try:
            return parse_duration(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


lock_timeout_option = setting_option("lock_timeout", type=Duration(), metavar="SECONDS|90s|5m|1h")


@contextlib.contextmanager
def lake_lock(lake: Lake, timeout: float, command: str, log):
    """Hold the lake's lock for the ``with`` block (yields the holder record); exit 4 after ``timeout``;
    on an object store, exit 3 when the block finds its lease lost (:func:`pitwatch.lake.lock.check_held`)."""
    from pitwatch.lake import lock

    try:
        ctx = lock.hold(lake, lock.new_holder(command), timeout, log)
        holder = ctx.__enter__()
    except lock.LakeLocked as exc:
        raise Locked(str(exc)) from None
    try:
        with contextlib.ExitStack() as stack:
            stack.push(ctx)
            yield holder
    except lock.LeaseLost as exc:
        raise LeaseLost(str(exc)) from None
