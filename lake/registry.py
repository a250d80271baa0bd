"""The device registry the lake keeps (rules.md "Feed health", version 2.1).

The registry a run used is kept in the lake and used by every later run and by ``pitwatch
watch`` unless a new one is given: a one-off ``pitwatch run FILE --lake L`` into a nightly lake
replays its day with the lake's registry, never silently without it (a critical
``UNKNOWN_DEVICE`` would otherwise go).

* **Where.**  ``LAKE/_registry/devices-<SHA-256>.csv``: the registry's bytes exactly as given,
  named by their SHA-256, read-only.  A file whose bytes do not hash to its name was changed;
  ``pitwatch verify`` says so (exit 5), and a run that would use it refuses (exit 2).
* **Versions.**  The ``runs`` record of every batch run names the registry it used in its
  options (``devices``: ``path``, ``sha256``, ``rows``, ``kept`` — the file above —, ``version``
  and ``from``: ``given`` or ``lake``).  A registry whose bytes differ from the lake's is its next
  version (1, 2, …); the same bytes given again keep the version.  A watcher given ``--devices``
  names it the same way in the record of its first alerts commit.  The records are chained, so
  which registry judged which night is evidence.
* **Which one is the lake's.**  The registry the newest succeeded record naming one names: read
  from the chain's head back (:func:`pitwatch.lake.runs.records_newest_first`) to the last batch
  run at most — every batch run names one (or ``null``) — passing the watcher's records over
  unread (their runs commits say whether one names a registry), so the cost is a day's watcher
  commits whatever the lake's age.
* **A lake that used a registry and keeps none** (its runs predate 2.1): a run without one says
  so (a warning in the log and a line in the summary) and replays without it.

Why files named by their hash and not a Delta table: a registry is a few kilobytes changed a few
times a year; a content-addressed file is checked by its own name, and the chained records already
say which version held when.  Local lakes only, like every writer (``docs/lake.md``).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re

from pitwatch.inputs.devices import DeviceRegistry, parse_rows
from pitwatch.lake import Lake
from pitwatch.lake import parquet as lake

FOLDER = "_registry"
FILE = re.compile(r"^devices-([0-9a-f]{64})\.csv$")
TEMP = re.compile(r"^devices-[0-9a-f]{64}\.csv\.tmp-\d+$")     # :func:`keep` writing (or killed while it wrote)
READ_ONLY = 0o444


@dataclasses.dataclass(frozen=True)
class Chosen:
    """The registry a run uses, what its record keeps of it, and what the run should say."""

    registry: DeviceRegistry | None
    record: dict | None          # the record's options["devices"]
    said: str                    # one line for the log and the summary ("" when there is nothing to say)
    warning: bool = False


def kept_name(sha256: str) -> str:
    return f"{FOLDER}/devices-{sha256}.csv"


def lake_registry(lake_path: Lake) -> tuple[dict | None, str | None]:
    """The registry the lake holds now: the newest succeeded record naming one (its options'
    ``devices``, None when that run had none) and the run id of that record; (None, None) for a
    lake no batch run has written yet.  Stops at the newest batch run (its options hold ``night``
    and ``devices``); the watcher's records after it are passed over unread, but for one naming a
    registry given to it (its runs commit says so: :data:`pitwatch.lake.runs.REGISTRY_KEY`), a
    vacuum's too."""
    from pitwatch.lake import runs

    for record in runs.records_newest_first(lake_path, skip_watchers=True):
        if record.get("status") != "succeeded":
            continue
        try:
            options = json.loads(record.get("options") or "{}")
        except ValueError:
            options = {}
        if not isinstance(options, dict):
            continue
        if "devices" in options:
            devices = options["devices"]
            return (devices if isinstance(devices, dict) else None), record.get("run_id")
        if "night" in options:     # a batch run from before registries were recorded: none since
            return None, record.get("run_id")
    return None, None


def read_kept(lake_path: Lake, described: dict) -> DeviceRegistry:
    """The registry a record names, read from the lake and checked against its name; LakeError
    when it is gone or changed."""
    name = described.get("kept")
    match = FILE.match(os.path.basename(str(name))) if name else None
    if match is None or name != kept_name(match.group(1)):
        raise lake.LakeError(f"the lake's device registry record names {name!r}, not a kept registry: "
                             "the lake is not intact (pitwatch verify)")
    path = os.path.join(lake_path, name)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise lake.LakeError(f"the lake's device registry {name} is gone: the lake is not intact "
                             "(pitwatch verify); give --devices FILE to use another") from None
    if hashlib.sha256(data).hexdigest() != match.group(1):
        raise lake.LakeError(f"the lake's device registry {name} was changed (its SHA-256 is not its name): "
                             "the lake is not intact (pitwatch verify); give --devices FILE to use another")
    return DeviceRegistry(name, match.group(1), parse_rows(data.decode("utf-8-sig"), name), data)


def keep(lake_path: Lake, registry: DeviceRegistry) -> str:
    """Write the registry's bytes into the lake (once: a copy already there is checked, not
    rewritten); its name in the lake."""
    name = kept_name(registry.sha256)
    path = os.path.join(lake_path, name)
    if os.path.exists(path):
        read_kept(lake_path, {"kept": name})     # the same bytes, or LakeError
        return name
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(registry.data)
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


def choose(lake_path: Lake, given: DeviceRegistry | None) -> Chosen:
    """The registry a batch run uses: ``given`` (kept in the lake, the next version when its
    bytes are new), else the lake's; what its record keeps and what the run says about it."""
    from pitwatch.lake import delta

    if not delta.local(lake_path):       # an object store (a watcher's lake): used, neither kept nor read
        return Chosen(given, given.describe() if given is not None else None,
                      f"device registry {given.path}: used, not kept in the lake (not on a local disk)"
                      if given is not None else "")
    held, held_by = lake_registry(lake_path)
    version = int(held.get("version") or 0) if held else 0
    if given is not None:
        same = held is not None and held.get("sha256") == given.sha256 and held.get("kept")
        number = version if same else version + 1
        kept = keep(lake_path, given)
        said = (f"device registry {given.path}: the lake's version {number}" if same else
                f"device registry {given.path}: kept in the lake as version {number} ({kept})")
        return Chosen(given, {**given.describe(), "kept": kept, "version": number, "from": "given"}, said)
    if held is None:
        return Chosen(None, None, "")
    if not held.get("kept"):
        return Chosen(None, None, (
            f"no device registry: the lake's last run {held_by} used {held.get('path')} (SHA-256 "
            f"{str(held.get('sha256'))[:12]}…), which the lake does not keep (written before version 2.1); "
            "the replayed days lose UNKNOWN_DEVICE: give --devices FILE"), warning=True)
    registry = read_kept(lake_path, held)
    return Chosen(registry, {**registry.describe(), "kept": held["kept"], "version": version, "from": "lake"},
                  f"device registry: the lake's version {version} ({held['kept']}, {len(registry.rows)} rows)")
