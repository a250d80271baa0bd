"""The dealers' names the analysts' connection shows as ``seeds_dealers``.

Which roster: ``--dealers FILE`` when given; else the one the lake keeps
(:mod:`pitwatch.lake.roster`: ``pitwatch dealers import`` or ``INBOX/dealers.csv``); else the
shipped ``seeds/dealers.csv`` (its header only).  The file format and its checks are
:mod:`pitwatch.inputs.dealers` (the lake and the nightly batch read rosters too); here a bad
file becomes the analysts' error, :class:`LakeQueryError`.
"""
from __future__ import annotations

import os
from typing import cast

import pyarrow as pa

from pitwatch.inputs.dealers import RosterError, load_roster
from pitwatch.queries.errors import LakeQueryError


def read_dealers(path: str) -> pa.Table:
    """The dealers of ``path`` as a table ``id, name, shift``; a malformed file is a :class:`LakeQueryError`."""
    try:
        return load_roster(path).table
    except RosterError as exc:
        raise LakeQueryError(str(exc)) from None


def shipped_dealers() -> str:
    """The path of ``seeds/dealers.csv`` as installed."""
    import importlib.resources

    # a Traversable to the type checker; the seeds are installed as files, so a pathlib.Path here
    return os.fspath(cast("os.PathLike[str]", importlib.resources.files("pitwatch.seeds").joinpath("dealers.csv")))
