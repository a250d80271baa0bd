"""The settings that belong to a lake, not to a run: the gaming day's time zone and cutoff.

Every row of the lake is filed under a gaming day computed with one time
zone and one cutoff.  A run with other ones would file the same hours under
other days (a night in America/Puerto_Rico after a night in UTC put all of
its 28,250 events under the previous day), so they are recorded in
``LAKE/settings.json`` by the first run that writes the lake and every later
run must match them: a mismatch stops the run before it writes anything,
with exit code 2 and the two ways out — a new lake, or a nightly
``--rebuild-from`` the lake's first replayed day with the new settings, which
replays every day and records the new settings when it has completed.

A lake written before this file existed has its settings taken from its
newest succeeded run record (the ``options`` of ``runs`` hold cutoff and time
zone) and written down by the next run.

**The file is not trusted** (issue 37: its cutoff edited from 06:00 to 09:00,
``verify`` said intact and the next run claimed 09:00 was "recorded by" a run
whose chained record says 06:00). Every run's chained record holds the
settings it ran with, and a run must match the lake's, so the newest succeeded
record's are the lake's: :func:`recorded` compares the file with them and
refuses a file that differs (:class:`SettingsTampered`, exit 5: the lake's
evidence was changed outside pitwatch), naming the record; ``verify`` does the
same. A lake with no succeeded run yet has nothing to compare the file with.
"""
from __future__ import annotations

import datetime as _dt
import json

from pitwatch.config import check_zone
from pitwatch.lake import Lake
from pitwatch.lake import parquet as lake
from pitwatch.lake.delta_log import LogError

FILE = "settings.json"
KEYS = ("timezone", "cutoff")
DISPLAY_KEY = "display_tables"      # {table_id: IANA zone}: the operator's overrides of how times are shown


class SettingsMismatch(lake.LakeError):
    """The run's gaming-day settings are not the lake's."""


class SettingsTampered(LogError):
    """``settings.json`` is not what the chain's newest succeeded run recorded: exit 5."""


def recorded(lake_path: Lake) -> dict | None:
    """``{"timezone": …, "cutoff": …, "recorded_by": …}`` of the lake, or None for a lake never
    written; checked against the chain (:func:`chained`): :class:`SettingsTampered` when they differ."""
    in_file = read_file(lake_path)
    newest, before = chained(lake_path)
    if in_file is None:
        return newest and {**newest, "recorded_by": f"{newest['recorded_by']} (before {FILE} existed)",
                           "inferred": True}
    verdict = compare(in_file, newest, before)
    if verdict == "tampered":
        assert newest is not None       # compare: "same" when the chain has no record
        raise SettingsTampered(tampered(lake_path, in_file, newest))
    if verdict == "behind":     # written after the rebuild's record, and killed before: the chain's hold
        assert newest is not None
        return {**newest, "inferred": True}
    return in_file if newest is None else {**in_file, "recorded_by": newest["recorded_by"]}


def compare(in_file: dict, newest: dict | None, before: dict | None) -> str:
    """``same``: the file says what the chain's newest succeeded record ran with (or the chain has
    none); ``behind``: the newest is a rebuild with new settings and the file still says those of
    the record before it (a rebuild records the file after its record: killed between the two);
    ``tampered``: anything else."""
    if newest is None or all(same(k, in_file[k], newest[k]) for k in KEYS):
        return "same"
    if newest.get("rebuild") and before is not None and all(same(k, in_file[k], before[k]) for k in KEYS):
        return "behind"
    return "tampered"


def read_file(lake_path: Lake) -> dict | None:
    """What ``LAKE/settings.json`` says, or None when there is no such file."""
    fs, root = lake_path.fs, lake_path.root
    try:
        with fs.open_input_stream(f"{root}/{FILE}") as f:
            data = json.loads(f.read())
    except FileNotFoundError:
        return None
    except ValueError:
        raise lake.LakeError(f"{lake_path}/{FILE} is damaged (not JSON): restore it from a backup") from None
    if not isinstance(data, dict) or not all(isinstance(data.get(k), str) for k in KEYS):
        raise lake.LakeError(f"{lake_path}/{FILE} is damaged (no timezone and cutoff): restore it from a backup")
    return data


def of_record(record: dict) -> dict | None:
    """The settings a runs record ran with (its options' time zone and cutoff) when it succeeded, else None."""
    if record.get("status") != "succeeded":
        return None
    try:
        options = json.loads(record.get("options") or "{}")
    except (ValueError, TypeError):
        return None
    if isinstance(options, dict) and all(isinstance(options.get(k), str) for k in KEYS):
        return {"timezone": options["timezone"], "cutoff": options["cutoff"],
                "recorded_by": f"run {record.get('run_id')}", "rebuild": bool(options.get("rebuild_from"))}
    return None


def chained(lake_path: Lake) -> tuple[dict | None, dict | None]:
    """The settings of the chain's newest succeeded run record that has them (the watcher's
    records passed over unread: a watcher never changes them), and, when that one is a rebuild,
    those of the one before it; None for none."""
    from pitwatch.lake import runs

    newest = None
    for record in runs.records_newest_first(lake_path, skip_watchers=True):
        found = of_record(record)
        if found is None:
            continue
        if newest is None:
            newest = found
            if not newest["rebuild"]:
                return newest, None
        elif not all(same(k, found[k], newest[k]) for k in KEYS) or not found["rebuild"]:
            return newest, found
    return newest, None


def tampered(lake_path: Lake, in_file: dict, in_chain: dict) -> str:
    return (f"{lake_path}/{FILE} says time zone {in_file['timezone']} with cutoff {in_file['cutoff']}, but "
            f"{in_chain['recorded_by']}, the newest succeeded run in the chain, ran with time zone "
            f"{in_chain['timezone']} and cutoff {in_chain['cutoff']}: the file was changed outside pitwatch "
            f"(pitwatch verify names it). Restore it: timezone {in_chain['timezone']!r}, cutoff "
            f"{in_chain['cutoff']!r}")


def check(lake_path: Lake, config, rebuilding: bool = False) -> dict | None:
    """Raise :class:`SettingsMismatch` when ``config`` (a GamingDayConfig) is not the lake's settings,
    unless ``rebuilding`` (a replay of the whole lake with new ones). Returns the recorded settings."""
    mine = {"timezone": config.timezone, "cutoff": config.cutoff}
    theirs = recorded(lake_path)
    if theirs is None or rebuilding or all(same(k, theirs[k], mine[k]) for k in KEYS):
        return theirs
    from pitwatch.lake import state

    days = state.replayed_days(lake_path)
    rebuild = (f"replay the whole lake with the new ones: pitwatch run --day DAY --rebuild-from {days[0]} "
               f"--timezone {config.timezone} --cutoff {config.cutoff} …" if days else
               "run again over every file of the lake with the new ones into a new lake")
    raise SettingsMismatch(
        f"the lake {lake_path} files gaming days in time zone {theirs['timezone']} with cutoff {theirs['cutoff']} "
        f"(recorded by {theirs.get('recorded_by', 'its first run')}); this run asks for time zone "
        f"{config.timezone} with cutoff {config.cutoff}. Run with --timezone {theirs['timezone']} --cutoff "
        f"{theirs['cutoff']} (or set them in pitwatch.toml); to change them, write a new lake, or {rebuild}")


def same(key: str, a: str, b: str) -> bool:
    if key == "timezone" and a.upper() == "UTC" and b.upper() == "UTC":
        return True
    if key == "cutoff":
        return _minutes(a) == _minutes(b)
    return a == b


def _minutes(text: str):
    try:
        h, m = text.split(":")
        return int(h) * 60 + int(m)
    except ValueError:
        return text


def is_lake(lake_path: Lake) -> bool:
    """``lake_path`` holds a pitwatch lake: its settings (``settings.json``, recorded by its first run or
    ``watch --create-lake``), a Delta table (a lake written before that file existed) or the lake's lock
    (its first run is writing it).  A mistyped path or a folder of something else does not."""
    import pyarrow.fs as pafs

    from pitwatch.lake import delta, lock

    return (read_file(lake_path) is not None or bool(delta.tables_on_disk(lake_path))
            or lake_path.fs.get_file_info(lake_path.path(lock.LOCK_FILE)).type == pafs.FileType.File)


def record(lake_path: Lake, config, run_id: str, by: str | None = None, display: dict | None = None) -> None:
    """Write the lake's settings (atomically: a hidden temporary file moved into place); ``recorded_by``
    says ``run RUN_ID``, or ``by`` (``pitwatch watch … --create-lake``: a watcher that made the lake).
    ``display``: the tables whose times are shown in another zone than the lake's (``{table_id: zone}``,
    :func:`display_zones`); None keeps the file's (a rebuild, a watcher), and none is written when
    it is empty."""
    from pitwatch import __version__

    if display is None:
        try:
            display = (read_file(lake_path) or {}).get(DISPLAY_KEY)
        except lake.LakeError:
            display = None          # a damaged file is replaced; its overrides with it (record_display says)
    _write(lake_path, {"timezone": config.timezone, "cutoff": config.cutoff, "recorded_by": by or f"run {run_id}",
                       "recorded_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                       "pitwatch": __version__}, display)


def record_display(lake_path: Lake, display: dict[str, str]) -> bool:
    """Record the tables' display zones (``[display.tables]``) in the lake's settings, the rest of the
    file as it is; True when they changed.  The gaming day's settings are not touched: a display
    zone changes how times are shown, never the day a row is filed under.  On a lake with no
    settings yet nothing is recorded (its first run records them with these)."""
    current = read_file(lake_path)
    if current is None:
        return False
    wanted = {str(t): check_zone(z) for t, z in display.items()}
    if (current.get(DISPLAY_KEY) or {}) == wanted:
        return False
    _write(lake_path, {k: v for k, v in current.items() if k != DISPLAY_KEY}, wanted)
    return True


def _write(lake_path: Lake, fields: dict, display: dict | None) -> None:
    if display:
        fields = {**fields, DISPLAY_KEY: {str(t): check_zone(z) for t, z in sorted(display.items())}}
    body = json.dumps(fields, indent=2, sort_keys=True).encode() + b"\n"
    fs, root = lake_path.fs, lake_path.root
    if not lake_path.local:     # an object store: one PUT, whole or not at all (its "move" is a copy and a delete)
        with fs.open_output_stream(f"{root}/{FILE}") as out:
            out.write(body)
        return
    fs.create_dir(root, recursive=True)
    tmp = f"{root}/.{FILE}.tmp"
    with fs.open_output_stream(tmp) as out:
        out.write(body)
    fs.move(tmp, f"{root}/{FILE}")


def check_and_record(lake_path: Lake, config, run_id: str, rebuilding: bool = False) -> None:
    """Before a run writes: stop on a mismatch; on a lake with nothing recorded yet, record ``config``
    (a rebuild records its settings when it has completed: :func:`pitwatch.pipelines.nightly.run_nightly`)."""
    theirs = check(lake_path, config, rebuilding)
    if not rebuilding and (theirs is None or theirs.get("inferred")):
        record(lake_path, config, run_id)


# --- the display zones: how times are shown, never how days are filed ------------------------------


def display_zones(lake_path: Lake) -> tuple[str, dict[str, str]]:
    """The lake's zone (its gaming days' ``timezone``; UTC for a lake never written) and the tables
    whose times are shown in another (``[display.tables]`` of ``pitwatch.toml``, recorded by the
    last run).  Read once per command: two small reads (this file, the chain's newest record).
    A zone in the file this machine does not know is a damaged file (:class:`LakeError`)."""
    settings = recorded(lake_path)
    lake_zone = settings["timezone"] if settings else "UTC"
    tables = (read_file(lake_path) or {}).get(DISPLAY_KEY) or {}
    if not isinstance(tables, dict):
        raise lake.LakeError(f"{lake_path}/{FILE} is damaged ({DISPLAY_KEY} is not a table of zones): "
                             "run pitwatch run again with the pitwatch.toml that names them")
    try:
        return check_zone(lake_zone), {str(t): check_zone(z) for t, z in tables.items()}
    except ValueError as exc:
        raise lake.LakeError(f"{lake_path}/{FILE} is damaged: {exc}") from None


def table_zone(lake_path: Lake, table_id: str) -> str:
    """The IANA zone ``table_id``'s times are shown in: its override in the lake's settings, else the
    lake's zone.  For many tables, read :func:`display_zones` once instead."""
    lake_zone, tables = display_zones(lake_path)
    return tables.get(table_id, lake_zone)
