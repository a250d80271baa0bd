"""What every command shares: lake option, error handling, logging to stderr."""
from __future__ import annotations

import functools
import logging
import sys

import click

from pipelines.cli import exits

class UserError(click.ClickException):
    """A user's mistake (bad option, file, statement or parameter): ``Error: …``, exit 2."""

    exit_code = exits.USAGE


class Incomplete(click.ClickException):
    """The command did not complete (failed, interrupted, timed out): ``Error: …``, exit 3."""

    exit_code = exits.INCOMPLETE


lake_option = click.option(
    "--lake", required=True, metavar="DIR",
    help="The lake folder (local path, or gs:// / s3:// URI).",
)


def user_errors(fn):
    """Turn the library's user-error exceptions into one ``Error: …`` line, exit 1."""
    from pipelines.inputs import InputError
    from pipelines.lake import LakeError

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (InputError, LakeError, ValueError) as exc:
            raise click.ClickException(str(exc)) from None
        except PermissionError as exc:
            raise click.ClickException(f"permission denied: {exc.filename or exc}") from None
        except FileNotFoundError as exc:
            raise click.ClickException(f"no such file: {exc.filename or exc}") from None

    return wrapper


def setup_logging(quiet: bool) -> None:
    """pitwatch's progress goes to stderr; Beam's own chatter is kept to warnings."""
    logging.getLogger().setLevel(logging.ERROR)
    log = logging.getLogger("pitwatch")
    log.handlers[:] = []
    if not quiet:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("pitwatch: %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
    log.propagate = False
