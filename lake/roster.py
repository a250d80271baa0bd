"""The dealers' roster the lake keeps, so every command shows names without ``--dealers``.

Kept the way the device registry is (:mod:`pitwatch.lake.registry`), for the same reasons:

* **Where.**  ``LAKE/_roster/dealers-<SHA-256>.csv``: the roster's bytes exactly as given,
  named by their SHA-256, read-only.  ``pitwatch verify`` checks every file's bytes against its
  name (exit 5 when one was changed or a record names one that is gone).
* **How it gets there.**  ``pitwatch dealers import FILE --lake DIR`` (under the lake's lock,
  one chained ``runs`` record of its own, command ``dealers import``) or ``INBOX/dealers.csv``
  read by the nightly run (``pitwatch run --day D --inbox DIR``), which names it in its record.
* **Versions.**  The record names the roster in its options (``dealers``: ``path``, ``sha256``,
  ``rows``, ``kept`` — the file above —, ``version`` and ``from``: ``given`` or ``lake``).
  A roster whose bytes differ from the lake's is its next version (1, 2, …); the same bytes
  again keep the version (an import of them writes nothing).  Every batch run names the roster
  it found (or ``null``), so which names a night's findings were shown with is on the chain.
* **Which one is the lake's.**  The roster the newest succeeded record naming one names, read
  from the chain's head back (:func:`pitwatch.lake.runs.records_newest_first`, watchers' records
  passed over unread) to the newest batch run at most: a cost of a day's records whatever the
  lake's age.

A roster is never a table of findings: changing it changes the names shown, not one row of the
lake's tables, so a new version needs no replay.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import json

from pitwatch.inputs.dealers import DealerRoster, RosterError, parse_roster
from pitwatch.lake import Lake
from pitwatch.lake import parquet as lake
from pitwatch.lake.kept import Kept

KEY = "dealers"            # the member of a runs record's options that names the roster
COMMAND = "dealers import"
KEPT = Kept(folder="_roster", stem="dealers", key=KEY, what="dealers roster", flag="--dealers FILE",
            kind="roster", checked="rosters")


@dataclasses.dataclass(frozen=True)
class Chosen:
    """The roster a run or an import names, what its record keeps of it, and what to say."""

    roster: DealerRoster | None
    record: dict | None          # the record's options["dealers"]
    said: str                    # one line for the log and the summary ("" when there is nothing to say)
    new: bool = False            # a new version (an import writes a record only then)


def lake_roster(lake_path: Lake) -> dict | None:
    """What the newest succeeded record naming a roster says of it (its options' ``dealers``),
    None when the lake keeps none (:meth:`pitwatch.lake.kept.Kept.held`)."""
    return KEPT.held(lake_path)[0]


def read_kept(lake_path: Lake, described: dict) -> DealerRoster:
    """The roster a record names, read from the lake and checked against its name; LakeError when
    it is gone, changed or no roster."""
    name, sha256, data = KEPT.read(lake_path, described)
    try:
        table = parse_roster(data, name)
    except RosterError as exc:
        raise lake.LakeError(f"the lake's dealers roster: {exc}") from None
    return DealerRoster(str(described.get("path") or name), sha256, table, data)


def current(lake_path: Lake) -> DealerRoster | None:
    """The lake's roster now (None: it keeps none); LakeError when its file is gone or changed."""
    held = lake_roster(lake_path)
    return read_kept(lake_path, held) if held and held.get("kept") else None


def keep(lake_path: Lake, roster: DealerRoster) -> str:
    """Write the roster's bytes into the lake (once); its name in the lake."""
    return KEPT.keep(lake_path, roster.sha256, roster.data)


def choose(lake_path: Lake, given: DealerRoster | None) -> Chosen:
    """The roster a batch run or an import names: ``given`` (kept in the lake, the next version
    when its bytes are new), else the lake's.  The caller holds the lake's lock."""
    held = lake_roster(lake_path)
    version = int(held.get("version") or 0) if held else 0
    if given is not None:
        same = held is not None and held.get("sha256") == given.sha256 and bool(held.get("kept"))
        number = version if same else version + 1
        kept = keep(lake_path, given)
        said = (f"dealers roster {given.path}: the lake's version {number}, unchanged" if same else
                f"dealers roster {given.path}: kept in the lake as version {number} "
                f"({given.table.num_rows} dealers, {kept})")
        return Chosen(given, {**given.describe(), "kept": kept, "version": number, "from": "given"}, said, not same)
    if held is None or not held.get("kept"):
        return Chosen(None, None, "")
    roster = read_kept(lake_path, held)
    return Chosen(roster, {**roster.describe(), "kept": held["kept"], "version": version, "from": "lake"},
                  f"dealers roster: the lake's version {version} ({roster.table.num_rows} dealers)")


def import_roster(lake_path: Lake, given: DealerRoster, command: str) -> Chosen:
    """``pitwatch dealers import``: keep ``given`` and name it in a chained ``runs`` record of its
    own (none when the lake holds these bytes already).  The caller holds the lake's lock."""
    from pitwatch.lake import runs

    chosen = choose(lake_path, given)
    if not chosen.new:
        return chosen
    started = _dt.datetime.now(_dt.timezone.utc)
    meta = {"run_id": runs.new_run_id(started), "command": command, "started": started.isoformat(),
            "versions": runs.versions(),
            "options": json.dumps({"command": COMMAND, KEY: chosen.record}, sort_keys=True)}
    runs.write_run_record(lake_path, runs.run_record(meta, "succeeded", ended=_dt.datetime.now(_dt.timezone.utc)))
    return chosen
