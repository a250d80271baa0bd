"""The dealers' roster (``dealers.csv``): who deals under which ``dealer_id``.

Columns, in any order, exactly these three (a header row, then one dealer a line):

* ``id``: the dealer's id as the terminals write it in ``dealer_id`` (``D-1007``);
  not empty, not repeated;
* ``name``: the name a person knows the dealer by;
* ``shift``: the dealer's shift as the casino names it (``day``, ``swing``, ``grave`` …;
  may be empty).

Blank lines are skipped; a UTF-8 byte-order mark is accepted.  Anything else — another
column, a missing id, a repeated id, bytes that are not UTF-8 or not CSV — is a
:class:`RosterError` naming the file and line (the command exits 2: the casino fixes its
roster, pitwatch does not guess at it).

Read here, in the inputs layer, because three layers use it: the lake keeps a roster
(:mod:`pitwatch.lake.roster`), the nightly batch takes ``INBOX/dealers.csv``, and the analysts'
connection shows it as ``seeds_dealers`` (:mod:`pitwatch.queries.dealers`).  Python's ``csv``
reads it, never DuckDB: the analysts' connection opens no path a user names.
"""
from __future__ import annotations

import csv
import dataclasses
import hashlib
import io
import os

import pyarrow as pa

from pitwatch.inputs.files import InputError, read_operator_csv
from pitwatch.inputs.stored import remote_object_exists
from pitwatch.schemas.contract import DEALER_ROSTER_COLUMNS

INBOX_FILE = "dealers.csv"
MAX_BYTES = 16 << 20   # a floor's roster, many times over


class RosterError(InputError):
    """A malformed roster: the message names the file and line."""


@dataclasses.dataclass(frozen=True)
class DealerRoster:
    """A roster as read: where from, its bytes' SHA-256, its dealers and its bytes (kept in the lake)."""

    path: str
    sha256: str
    table: pa.Table = dataclasses.field(repr=False, compare=False)   # id, name, shift: every column string
    data: bytes = dataclasses.field(default=b"", repr=False, compare=False)

    def names(self) -> dict[str, str]:
        """dealer id -> name (the text alerts' lookup)."""
        return {r["id"]: r["name"] for r in self.table.to_pylist() if r["name"]}

    def describe(self) -> dict:
        """What a ``runs`` record keeps of it."""
        return {"path": self.path, "sha256": self.sha256, "rows": self.table.num_rows}


def inbox_roster(inbox: str) -> str | None:
    """``INBOX/dealers.csv`` when the nightly inbox has one, else None."""
    candidate = os.path.join(inbox, INBOX_FILE)
    return candidate if (remote_object_exists(candidate) if "://" in inbox else os.path.lexists(candidate)) else None


def load_roster(path: str) -> DealerRoster:
    """Read and check the roster at ``path``; :class:`RosterError` says what is wrong and where."""
    data = read_operator_csv(path, MAX_BYTES, "dealers file", RosterError)
    return DealerRoster(path, hashlib.sha256(data).hexdigest(), parse_roster(data, path), data)


def load_roster_to_keep(path: str) -> DealerRoster:
    """A roster the lake is to keep (``pitwatch dealers import``, the inbox's ``dealers.csv``):
    :func:`load_roster`'s, and at least one dealer: kept, a roster of none would be a version that
    takes every dealer's name away.  (``--dealers FILE`` and the shipped ``seeds/dealers.csv`` may
    be a header alone: they change no version.)"""
    roster = load_roster(path)
    if roster.table.num_rows == 0:
        raise RosterError(f"dealers file {path}: no dealer in it (only its header); the lake keeps a "
                          "roster that names at least one")
    return roster


def parse_roster(data: bytes, path: str = INBOX_FILE) -> pa.Table:
    """The dealers of a roster's bytes as a table ``id, name, shift``; :class:`RosterError` otherwise."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise RosterError(f"dealers file {path}: not UTF-8 (byte {exc.start})") from None
    try:
        rows = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    except csv.Error as exc:
        raise RosterError(f"dealers file {path}: not CSV ({exc})") from None
    if not rows:
        raise RosterError(f"dealers file {path}: empty; the first line must be the header id,name,shift")
    header = [h.strip() for h in rows[0]]
    if sorted(header) != sorted(DEALER_ROSTER_COLUMNS):
        raise RosterError(f"dealers file {path}: the header is {','.join(header)!r}; "
                          "it must name the columns id, name and shift")
    where = [header.index(c) for c in DEALER_ROSTER_COLUMNS]
    out: dict[str, list[str]] = {c: [] for c in DEALER_ROSTER_COLUMNS}
    seen: dict[str, int] = {}
    for number, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue   # a blank line
        if len(row) != len(DEALER_ROSTER_COLUMNS):
            raise RosterError(f"dealers file {path}: line {number} has {len(row)} fields, not 3")
        values = [row[i].strip() for i in where]
        if not values[0]:
            raise RosterError(f"dealers file {path}: line {number} has no id")
        if values[0] in seen:
            raise RosterError(f"dealers file {path}: dealer {values[0]} on line {seen[values[0]]} "
                              f"and again on line {number}")
        seen[values[0]] = number
        for c, v in zip(DEALER_ROSTER_COLUMNS, values):
            out[c].append(v)
    return pa.table({c: pa.array(out[c], pa.string()) for c in DEALER_ROSTER_COLUMNS})
