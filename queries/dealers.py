"""The dealers' names: ``seeds/dealers.csv``, or the casino's own file (``--dealers FILE``).

Columns, in any order, exactly these three (a header row, then one dealer a line):

* ``id``: the dealer's id as the terminals write it in ``dealer_id`` (``D-1007``);
  not empty, not repeated;
* ``name``: the name a person knows the dealer by;
* ``shift``: the dealer's shift as the casino names it (``day``, ``swing``, ``grave`` …;
  may be empty).

The file is read here, by Python's ``csv``, not by DuckDB: the analysts'
connection never opens a path a user names (see :mod:`pitwatch.queries.lake_views`).
It becomes the table ``seeds_dealers`` (every column VARCHAR) before the
connection is locked.  pitwatch ships the file with its header only; the
simulator writes one for the dealers it uses (``FEEDS/dealers.csv``).
"""
from __future__ import annotations

import csv
import io
import os
from typing import cast

import pyarrow as pa

from pitwatch.queries.errors import LakeQueryError
from pitwatch.schemas.contract import DEALER_ROSTER_COLUMNS

MAX_BYTES = 16 * 1024 * 1024   # a floor's roster, many times over


def read_dealers(path: str) -> pa.Table:
    """The dealers of ``path`` as a table ``id, name, shift``; a malformed file is a :class:`LakeQueryError`."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise LakeQueryError(f"dealers file {path}: cannot read it ({exc.strerror or exc})") from None
    if len(data) > MAX_BYTES:
        raise LakeQueryError(f"dealers file {path}: larger than {MAX_BYTES // (1024 * 1024)} MiB")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise LakeQueryError(f"dealers file {path}: not UTF-8 (byte {exc.start})") from None
    try:
        rows = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    except csv.Error as exc:
        raise LakeQueryError(f"dealers file {path}: not CSV ({exc})") from None
    if not rows:
        raise LakeQueryError(f"dealers file {path}: empty; the first line must be the header id,name,shift")
    header = [h.strip() for h in rows[0]]
    if sorted(header) != sorted(DEALER_ROSTER_COLUMNS):
        raise LakeQueryError(f"dealers file {path}: the header is {','.join(header)!r}; "
                             "it must name the columns id, name and shift")
    where = [header.index(c) for c in DEALER_ROSTER_COLUMNS]
    out: dict[str, list[str]] = {c: [] for c in DEALER_ROSTER_COLUMNS}
    seen: dict[str, int] = {}
    for number, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue   # a blank line
        if len(row) != len(DEALER_ROSTER_COLUMNS):
            raise LakeQueryError(f"dealers file {path}: line {number} has {len(row)} fields, not 3")
        values = [row[i].strip() for i in where]
        if not values[0]:
            raise LakeQueryError(f"dealers file {path}: line {number} has no id")
        if values[0] in seen:
            raise LakeQueryError(f"dealers file {path}: dealer {values[0]} on line {seen[values[0]]} "
                                 f"and again on line {number}")
        seen[values[0]] = number
        for c, v in zip(DEALER_ROSTER_COLUMNS, values):
            out[c].append(v)
    return pa.table({c: pa.array(out[c], pa.string()) for c in DEALER_ROSTER_COLUMNS})


def shipped_dealers() -> str:
    """The path of ``seeds/dealers.csv`` as installed."""
    import importlib.resources

    # a Traversable to the type checker; the seeds are installed as files, so a pathlib.Path here
    return os.fspath(cast("os.PathLike[str]", importlib.resources.files("pitwatch.seeds").joinpath("dealers.csv")))
