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
earliest run record (the ``options`` of ``runs`` hold cutoff and time zone)
and written down by the next run.
"""
from __future__ import annotations

import datetime as _dt
import json

from pipelines import lake

FILE = "settings.json"
KEYS = ("timezone", "cutoff")


class SettingsMismatch(lake.LakeError):
    """The run's gaming-day settings are not the lake's."""


def recorded(lake_path: str) -> dict | None:
    """``{"timezone": …, "cutoff": …, "recorded_by": …}`` of the lake, or None for a lake never written."""
    fs, root = lake.filesystem(lake_path)
    try:
        with fs.open_input_stream(f"{root}/{FILE}") as f:
            data = json.loads(f.read())
    except FileNotFoundError:
        return _from_runs(lake_path)
    except ValueError:
        raise lake.LakeError(f"{lake_path}/{FILE} is damaged (not JSON): restore it from a backup") from None
    if not isinstance(data, dict) or not all(isinstance(data.get(k), str) for k in KEYS):
        raise lake.LakeError(f"{lake_path}/{FILE} is damaged (no timezone and cutoff): restore it from a backup")
    return data


def _from_runs(lake_path: str) -> dict | None:
    runs = lake.read_table(lake_path, "runs", columns=["run_id", "options", "started"])
    for rec in sorted(runs.to_pylist(), key=lambda r: (r["started"], r["run_id"])):
        try:
            options = json.loads(rec["options"] or "{}")
        except ValueError:
            continue
        if all(isinstance(options.get(k), str) for k in KEYS):
            return {"timezone": options["timezone"], "cutoff": options["cutoff"],
                    "recorded_by": f"run {rec['run_id']} (before {FILE} existed)", "inferred": True}
    return None


def check(lake_path: str, config, rebuilding: bool = False) -> dict | None:
    """Raise :class:`SettingsMismatch` when ``config`` (a GamingDayConfig) is not the lake's settings,
    unless ``rebuilding`` (a replay of the whole lake with new ones). Returns the recorded settings."""
    mine = {"timezone": config.timezone, "cutoff": config.cutoff}
    theirs = recorded(lake_path)
    if theirs is None or rebuilding or all(_same(k, theirs[k], mine[k]) for k in KEYS):
        return theirs
    from pipelines import state

    days = state.replayed_days(lake_path)
    rebuild = (f"replay the whole lake with the new ones: pitwatch run --day DAY --rebuild-from {days[0]} "
               f"--timezone {config.timezone} --cutoff {config.cutoff} …" if days else
               "run again over every file of the lake with the new ones into a new lake")
    raise SettingsMismatch(
        f"the lake {lake_path} files gaming days in time zone {theirs['timezone']} with cutoff {theirs['cutoff']} "
        f"(recorded by {theirs.get('recorded_by', 'its first run')}); this run asks for time zone "
        f"{config.timezone} with cutoff {config.cutoff}. Run with --timezone {theirs['timezone']} --cutoff "
        f"{theirs['cutoff']} (or set them in pitwatch.toml); to change them, write a new lake, or {rebuild}")


def _same(key: str, a: str, b: str) -> bool:
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


def record(lake_path: str, config, run_id: str) -> None:
    """Write the lake's settings (atomically: a hidden temporary file moved into place)."""
    from pipelines import __version__

    body = json.dumps({"timezone": config.timezone, "cutoff": config.cutoff, "recorded_by": f"run {run_id}",
                       "recorded_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                       "pitwatch": __version__}, indent=2, sort_keys=True).encode() + b"\n"
    fs, root = lake.filesystem(lake_path)
    fs.create_dir(root, recursive=True)
    tmp = f"{root}/.{FILE}.tmp"
    with fs.open_output_stream(tmp) as out:
        out.write(body)
    fs.move(tmp, f"{root}/{FILE}")


def check_and_record(lake_path: str, config, run_id: str, rebuilding: bool = False) -> None:
    """Before a run writes: stop on a mismatch; on a lake with nothing recorded yet, record ``config``
    (a rebuild records its settings when it has completed: :func:`pipelines.nightly.run_nightly`)."""
    theirs = check(lake_path, config, rebuilding)
    if not rebuilding and (theirs is None or theirs.get("inferred")):
        record(lake_path, config, run_id)
