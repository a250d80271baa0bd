"""``pitwatch run --day D --inbox DIR``: the form a scheduler calls every night.

Inbox layout (what the devices' uploaders write)::

    INBOX/2026-11-28/DT-BAC01.jsonl          one folder per gaming day,
    INBOX/2026-11-28/SHOE-4411.jsonl.gz      any files below it (.jsonl, .jsonl.gz, .parquet),
    INBOX/2026-11-28/shufflers/SHF-88.jsonl  e.g. one per device, sub-folders allowed

A day's replay reads that day's folder and starts from the state the
previous replayed day left in the lake (:mod:`pipelines.state`).  Each
night, the folders of the last ``lookback_days`` days are compared with what
their replay read (paths, sizes, modification times, recorded in the day's
manifest): a folder that changed — a late upload — or a day never replayed
makes pitwatch replay from that day forward, day by day, so that the
corrected findings replace the old ones (each day's rows live in their own
``replay-<day>.parquet`` files, replaced as a whole) and nothing is counted
twice.  Rounds and packs that cross the cutoff belong to the gaming day they
started in; a finding carries the day of the event that completed it.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import os
import re

from pipelines import state
from pipelines.batch import RunSummary, run_batch
from pipelines.graph import DayMode
from pipelines.inputs import INPUT_SUFFIXES, InputError

_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@dataclasses.dataclass
class NightlyPlan:
    days: list[str]              # to replay, ascending
    prior: str | None            # state the first of them starts from
    reasons: dict[str, str]      # day -> why it is replayed


def parse_day(text: str) -> str:
    try:
        return _dt.date.fromisoformat(text).isoformat()
    except ValueError:
        raise InputError(f"--day must be a date YYYY-MM-DD, got {text!r}") from None


def inbox_days(inbox: str) -> list[str]:
    if not os.path.isdir(inbox):
        raise InputError(f"inbox {inbox} is not a folder")
    return sorted(d for d in os.listdir(inbox) if _DAY.match(d) and os.path.isdir(os.path.join(inbox, d)))


def day_listing(inbox: str, day: str) -> list[dict]:
    """The input files of one day's folder: relative path, size, modification time (ns)."""
    folder = os.path.join(inbox, day)
    out = []
    if not os.path.isdir(folder):
        return out
    for root, _dirs, names in os.walk(folder):
        for name in names:
            if name.endswith(INPUT_SUFFIXES) and not name.startswith("."):
                path = os.path.join(root, name)
                st = os.stat(path)
                out.append({"path": os.path.relpath(path, inbox), "bytes": st.st_size, "mtime_ns": st.st_mtime_ns})
    return sorted(out, key=lambda f: f["path"])


def plan(day: str, inbox: str, lake_path: str, lookback_days: int = 7, rebuild_from: str | None = None) -> NightlyPlan:
    day_date = _dt.date.fromisoformat(day)
    oldest = (day_date - _dt.timedelta(days=lookback_days)).isoformat()
    window = [d for d in inbox_days(inbox) if oldest <= d <= day]
    replayed = state.replayed_days(lake_path)
    reasons: dict[str, str] = {}
    for d in window:
        if d == day:
            continue
        manifest = state.read_manifest(lake_path, d)
        if manifest is None:
            reasons[d] = "never replayed"
        elif manifest.get("inbox") != day_listing(inbox, d):
            reasons[d] = "its inbox folder changed (late or replaced files)"
    if rebuild_from is not None:
        reasons[rebuild_from] = "--rebuild-from"
    start = min(list(reasons) + [day])
    days = sorted({d for d in window if d >= start} | {d for d in replayed if start <= d <= day} | {day})
    for d in days:
        reasons.setdefault(d, "the night's day" if d == day else f"follows {start}, which is replayed")
    earlier = [d for d in replayed if d < start]
    prior = earlier[-1] if earlier else None
    if prior is not None:
        state.read_manifest(lake_path, prior)  # fails clearly if its format cannot be read
    return NightlyPlan(days, prior, reasons)


def run_nightly(day: str, inbox: str, lake_path: str, beam_args=None, gaming_day=None, chunk_lines: int = 20_000,
                lookback_days: int = 7, rebuild_from: str | None = None, retention_days: int = 7,
                log=None, devices: str | None = None) -> list[RunSummary]:
    """Replay ``day`` (and any earlier day whose inbox changed) from the carried state.

    The device registry: ``devices`` (``--devices FILE``), else ``INBOX/devices.csv`` when it
    exists (:func:`pipelines.devices.registry_path`, the one place that decides it).
    """
    from pipelines.devices import load_registry, registry_path

    registry = load_registry(registry_path(devices, inbox))
    the_plan = plan(day, inbox, lake_path, lookback_days, rebuild_from)
    summaries = []
    prior = the_plan.prior
    for d in the_plan.days:
        if log:
            log.info("gaming day %s: %s (state from %s)", d, the_plan.reasons[d], prior or "none: a fresh start")
        listing = day_listing(inbox, d)
        files = [os.path.join(inbox, f["path"]) for f in listing]
        summaries.append(run_batch(
            files, lake_path, beam_args=beam_args, gaming_day=gaming_day, chunk_lines=chunk_lines,
            command=f"pitwatch run --day {day}", day_mode=DayMode(d, prior, retention_days), inbox_listing=listing,
            devices=registry))
        prior = d
    return summaries
