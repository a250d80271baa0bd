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
    """Hold the lake's lock for the ``with`` block (yields the holder record); exit 4 after ``timeout``."""
    from pitwatch.lake.lock import LakeLocked, hold, new_holder

    try:
        ctx = hold(lake, new_holder(command), timeout, log)
        holder = ctx.__enter__()
    except LakeLocked as exc:
        raise Locked(str(exc)) from None
    with contextlib.ExitStack() as stack:
        stack.push(ctx)
        yield holder
