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
import hashlib
import json
import os
import re

from pitwatch.inputs.dealers import DealerRoster, RosterError, parse_roster
from pitwatch.lake import Lake
from pitwatch.lake import parquet as lake

FOLDER = "_roster"
FILE = re.compile(r"^dealers-([0-9a-f]{64})\.csv$")
TEMP = re.compile(r"^dealers-[0-9a-f]{64}\.csv\.tmp-\d+$")     # :func:`keep` writing (or killed while it wrote)
KEY = "dealers"            # the member of a runs record's options that names the roster
COMMAND = "dealers import"
READ_ONLY = 0o444


@dataclasses.dataclass(frozen=True)
class Chosen:
    """The roster a run or an import names, what its record keeps of it, and what to say."""

    roster: DealerRoster | None
    record: dict | None          # the record's options["dealers"]
    said: str                    # one line for the log and the summary ("" when there is nothing to say)
    new: bool = False            # a new version (an import writes a record only then)


def kept_name(sha256: str) -> str:
    return f"{FOLDER}/dealers-{sha256}.csv"


def lake_roster(lake_path: Lake) -> dict | None:
    """What the newest succeeded record naming a roster says of it (its options' ``dealers``),
    None when the lake keeps none.  Stops at the newest batch run (its options hold ``night``)."""
    from pitwatch.lake import runs

    for record in runs.records_newest_first(lake_path, skip_watchers=True):
        if record.get("status") != "succeeded":
            continue
        try:
            options = json.loads(record.get("options") or "{}")
        except ValueError:
            continue
        if not isinstance(options, dict):
            continue
        if KEY in options:
            held = options[KEY]
            return held if isinstance(held, dict) else None
        if "night" in options:     # a batch run from before rosters were kept: none since
            return None
    return None


def read_kept(lake_path: Lake, described: dict) -> DealerRoster:
    """The roster a record names, read from the lake and checked against its name; LakeError when
    it is gone or changed."""
    name = described.get("kept")
    match = FILE.match(os.path.basename(str(name))) if name else None
    if match is None or name != kept_name(match.group(1)):
        raise lake.LakeError(f"the lake's dealers roster record names {name!r}, not a kept roster: "
                             "the lake is not intact (pitwatch verify)")
    try:
        with lake_path.fs.open_input_stream(f"{lake_path.root}/{name}") as f:
            data = f.read()
    except FileNotFoundError:
        raise lake.LakeError(f"the lake's dealers roster {name} is gone: the lake is not intact "
                             "(pitwatch verify); give --dealers FILE to use another") from None
    if hashlib.sha256(data).hexdigest() != match.group(1):
        raise lake.LakeError(f"the lake's dealers roster {name} was changed (its SHA-256 is not its name): "
                             "the lake is not intact (pitwatch verify); give --dealers FILE to use another")
    try:
        table = parse_roster(data, name)
    except RosterError as exc:
        raise lake.LakeError(f"the lake's dealers roster: {exc}") from None
    return DealerRoster(str(described.get("path") or name), match.group(1), table, data)


def current(lake_path: Lake) -> DealerRoster | None:
    """The lake's roster now (None: it keeps none); LakeError when its file is gone or changed."""
    held = lake_roster(lake_path)
    return read_kept(lake_path, held) if held and held.get("kept") else None


def keep(lake_path: Lake, roster: DealerRoster) -> str:
    """Write the roster's bytes into the lake (once: a copy already there is checked, not
    rewritten); its name in the lake."""
    name = kept_name(roster.sha256)
    path = os.path.join(lake_path, name)
    if os.path.exists(path):
        read_kept(lake_path, {"kept": name})     # the same bytes, or LakeError
        return name
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(roster.data)
        f.flush()
        os.fsync(f.fileno())
    os.chmod(tmp, READ_ONLY)
    try:
        os.link(tmp, path)              # never over a copy another writer put there first
    except FileExistsError:
        read_kept(lake_path, {"kept": name})
    finally:
        os.unlink(tmp)
    return name


def choose(lake_path: Lake, given: DealerRoster | None) -> Chosen:
    """The roster a batch run or an import names: ``given`` (kept in the lake, the next version
    when its bytes are new), else the lake's.  The caller holds the lake's lock."""
    from pitwatch.lake import delta

    if not delta.local(lake_path):
        return Chosen(None, None, "")
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
