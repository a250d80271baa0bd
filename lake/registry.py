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
say which version held when.  Kept the same way on a local disk and on an object store
(``s3://``: :meth:`pitwatch.lake.kept.Kept.keep`).
"""
from __future__ import annotations

import dataclasses

from pitwatch.inputs.devices import DeviceRegistry, parse_rows
from pitwatch.lake import Lake
from pitwatch.lake.kept import Kept

KEPT = Kept(folder="_registry", stem="devices", key="devices", what="device registry", flag="--devices FILE",
            kind="registry", checked="registries")


@dataclasses.dataclass(frozen=True)
class Chosen:
    """The registry a run uses, what its record keeps of it, and what the run should say."""

    registry: DeviceRegistry | None
    record: dict | None          # the record's options["devices"]
    said: str                    # one line for the log and the summary ("" when there is nothing to say)
    warning: bool = False


def lake_registry(lake_path: Lake) -> tuple[dict | None, str | None]:
    """The registry the lake holds now: the newest succeeded record naming one (its options'
    ``devices``, None when that run had none) and the run id of that record; (None, None) for a
    lake no batch run has written yet (:meth:`pitwatch.lake.kept.Kept.held`: the watcher's
    records after the newest batch run are passed over unread, but for one naming a registry
    given to it, its runs commit says so: :data:`pitwatch.lake.runs.REGISTRY_KEY`)."""
    return KEPT.held(lake_path)


def read_kept(lake_path: Lake, described: dict) -> DeviceRegistry:
    """The registry a record names, read from the lake and checked against its name; LakeError
    when it is gone or changed."""
    name, sha256, data = KEPT.read(lake_path, described)
    return DeviceRegistry(name, sha256, parse_rows(data.decode("utf-8-sig"), name), data)


def keep(lake_path: Lake, registry: DeviceRegistry) -> str:
    """Write the registry's bytes into the lake (once); its name in the lake."""
    return KEPT.keep(lake_path, registry.sha256, registry.data)


def choose(lake_path: Lake, given: DeviceRegistry | None) -> Chosen:
    """The registry a batch run uses: ``given`` (kept in the lake, the next version when its
    bytes are new), else the lake's; what its record keeps and what the run says about it."""
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
